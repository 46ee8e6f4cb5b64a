// Communication chunks from system traces: synthetic edge cases here; the GPU-recorded fixture
// tests are below them.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include <fstream>

#include "argus/support/process.h"
#include "argus/synthesis/comm_signals.h"
#include "argus/synthesis/overlap_model.h"

namespace argus::synthesis {
namespace {

constexpr const char* kHeader = R"({"type":"header","format":"argus.system_trace","version":1})"
                                "\n";

std::string range(int id, int64_t t0, int64_t t1, const std::string& name) {
  return R"({"type":"marker","flag":"start","id":)" + std::to_string(id) +
         R"(,"thread":1,"timestamp_ns":)" + std::to_string(t0) + R"(,"name":")" + name + "\"}\n" +
         R"({"type":"marker","flag":"end","id":)" + std::to_string(id) +
         R"(,"thread":1,"timestamp_ns":)" + std::to_string(t1) + "}\n";
}

std::string kernel(const std::string& name, int corr, int64_t t0, int64_t t1, int grid = 1) {
  return R"({"type":"kernel","name":")" + name + R"(","stream":3,"correlation":)" +
         std::to_string(corr) + R"(,"start_ns":)" + std::to_string(t0) + R"(,"end_ns":)" +
         std::to_string(t1) + R"(,"grid":[)" + std::to_string(grid) + R"(,1,1],"block":[1,1,1]})" +
         "\n";
}

std::string api(int corr, int64_t t) {
  return R"({"type":"api","domain":"runtime","correlation":)" + std::to_string(corr) +
         R"(,"thread":1,"start_ns":)" + std::to_string(t) + R"(,"end_ns":)" +
         std::to_string(t + 1) + "}\n";
}

TEST(CommSignals, LabelledChunksGroupBySizeAndSms) {
  std::string t = kHeader;
  // Two 1000-byte chunks at 4 SMs (times 100 and 300), one 2000-byte chunk at 8 SMs.
  t += range(1, 0, 10, "argus.comm impl=copy_kernel bytes=1000 sms=4") + api(1, 5) +
       kernel("copy", 1, 20, 120);
  t += range(2, 30, 40, "argus.comm impl=copy_kernel bytes=1000 sms=4") + api(2, 35) +
       kernel("copy", 2, 120, 420);
  t += range(3, 50, 60, "argus.comm impl=copy_kernel bytes=2000 sms=8") + api(3, 55) +
       kernel("copy", 3, 500, 600);
  t += api(4, 70) + kernel("gemm", 4, 600, 900);  // outside any comm range: not communication
  auto trace = evidence::parseSystemTrace(t);
  ASSERT_TRUE(trace) << trace.error().message;
  auto s = commSignals(*trace);
  ASSERT_EQ(s.chunks.size(), 3u);
  ASSERT_EQ(s.groups.size(), 2u);
  const auto& g = s.groups[0];
  EXPECT_EQ(g.sms, 4);
  EXPECT_EQ(g.bytes, 1000u);
  EXPECT_EQ(g.chunks, 2u);
  EXPECT_DOUBLE_EQ(g.meanNs, 200);
  EXPECT_DOUBLE_EQ(g.medianNs, 200);
  EXPECT_DOUBLE_EQ(g.minNs, 100);
  // The second chunk was launched (35) while the first ran (20-120): its 85 ns are queueing.
  EXPECT_DOUBLE_EQ(g.launchOverheadNs, 15.0);
  EXPECT_TRUE(s.chunks[1].queued);
  EXPECT_DOUBLE_EQ(g.chunkThroughputGBs, 5.0);  // 1000 B / 200 ns
  EXPECT_DOUBLE_EQ(g.sustainedGBs, 2000.0 / 400.0);
  EXPECT_EQ(s.groups[1].sms, 8);
  auto j = commSignalsJson(s);
  EXPECT_EQ(j["comm_chunk_time"]["groups"].size(), 2u);
  EXPECT_EQ(j["comm_throughput"]["qualification"], "derived");
}

TEST(CommSignals, ChunkOfSeveralOpsSpansThemAll) {
  std::string t = kHeader;
  t += range(1, 0, 20, "argus.comm bytes=64 sms=2") + api(1, 5) + api(2, 10) +
       kernel("a", 1, 30, 40) + kernel("b", 2, 45, 70);
  auto trace = evidence::parseSystemTrace(t);
  ASSERT_TRUE(trace);
  auto s = commSignals(*trace);
  ASSERT_EQ(s.chunks.size(), 1u);
  EXPECT_EQ(s.chunks[0].timeNs(), 40);
  EXPECT_EQ(s.chunks[0].ops, 2);
  EXPECT_EQ(s.chunks[0].launchNs, 5);
  EXPECT_EQ(s.chunks[0].source, "range");
}

TEST(CommSignals, NcclKernelsWithoutRangesUseGridAsSms) {
  std::string t = kHeader;
  t += api(1, 0) + kernel("ncclDevKernel_AllGather_RING_LL", 1, 10, 50, 16);
  t += kernel("ncclKernel_AllGather_RING_LL", 9, 60, 80, 16);  // no API record: no overhead
  auto trace = evidence::parseSystemTrace(t);
  ASSERT_TRUE(trace);
  auto s = commSignals(*trace);
  ASSERT_EQ(s.chunks.size(), 2u);
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(s.groups[0].source, "nccl");
  EXPECT_EQ(s.groups[0].sms, 16);
  EXPECT_EQ(s.groups[0].bytes, 0u);  // NCCL's byte count needs a range label
  EXPECT_DOUBLE_EQ(s.groups[0].launchOverheadNs, 10);
  EXPECT_DOUBLE_EQ(s.groups[0].chunkThroughputGBs, 0);
}

TEST(CommSignals, SeveralProcessesTakeTheSlowestRank) {
  CommGroup a;
  a.source = "nccl";
  a.sms = 4;
  a.bytes = 1000;
  a.chunks = 3;
  a.medianNs = 100;
  a.launchOverheadNs = 7;
  CommGroup b = a;
  b.medianNs = 250;  // rank 1 is slower
  b.launchOverheadNs = 5;
  CommGroup only = a;
  only.bytes = 2000;  // measured by rank 0 only
  auto merged = slowestProcess({{a, only}, {b}});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].bytes, 1000u);
  EXPECT_DOUBLE_EQ(merged[0].medianNs, 250);
  EXPECT_DOUBLE_EQ(merged[0].launchOverheadNs, 7);
  EXPECT_EQ(merged[0].chunks, 6u);
  EXPECT_DOUBLE_EQ(merged[0].chunkThroughputGBs, 4.0);  // 1000 B / 250 ns
  EXPECT_EQ(merged[1].bytes, 2000u);
}

TEST(CommSignals, NoCommunicationIsEmpty) {
  auto trace = evidence::parseSystemTrace(std::string(kHeader) + api(1, 0) + kernel("k", 1, 1, 2));
  ASSERT_TRUE(trace);
  auto s = commSignals(*trace);
  EXPECT_TRUE(s.chunks.empty());
  EXPECT_TRUE(s.groups.empty());
  auto timeline = kernelTimelineJson(*trace);
  ASSERT_EQ(timeline["operations"].size(), 1u);
  EXPECT_DOUBLE_EQ(timeline["operations"][0]["mean_launch_to_start_ns"].get<double>(), 1);
}

}  // namespace
}  // namespace argus::synthesis

namespace argus::synthesis {
namespace {

// Recorded on an H200 by scripts/gpu/system-check.sh (tests/data/system_trace/README.md): the
// stand-in's chunked copies of a 1024 x 1024 FP16 operand, S in {1,2,4}, R in {8,16,32,64} and
// cudaMemcpyAsync, 7 repetitions each.
TEST(CommSignalsFixture, StandInChunksOnTheH200) {
  auto trace =
      evidence::readSystemTrace(std::string(ARGUS_SYSTEM_TRACE_DATA) + "/comm_1024x1024.jsonl");
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->dropped, 0u);
  EXPECT_EQ(trace->unmatchedMarkers, 0u);
  auto s = commSignals(*trace);
  // 3 splits x 5 implementations, each split S gives S chunks per repetition.
  EXPECT_EQ(s.chunks.size(), 5u * 7u * (1 + 2 + 4));
  ASSERT_EQ(s.groups.size(), 15u);
  for (const auto& g : s.groups) {
    EXPECT_EQ(g.chunks, 7u * (2u * 1024 * 1024 / g.bytes)) << g.source << " " << g.bytes;
    EXPECT_EQ(g.source, g.sms == 0 ? "memcpy" : "copy_kernel");
    EXPECT_GT(g.minNs, 0);
    EXPECT_GT(g.launchOverheadNs, 0);  // every chunk's launch call was joined
    EXPECT_GT(g.chunkThroughputGBs, 1);
  }
  // More CTAs copy a 2 MiB chunk faster.
  CommTable table(s.groups, "copy_kernel");
  EXPECT_LT(table.chunkTimeNs(2u << 20, 64)->first, table.chunkTimeNs(2u << 20, 8)->first);
}

using json = nlohmann::json;

// Recorded on two H200s (NV18) by scripts/gpu/nccl-check.sh: rank 0 of `argus_overlap_nccl comm`,
// all-gathers of a 2048 x 4096 FP16 operand in S = 1, 2 chunks through NCCL 2.28.9 communicators
// of R = 2..32 CTAs, 9 repetitions, with the control communicator's 1-CTA all-reduce barriers.
TEST(CommSignalsFixture, NcclAllGatherOnTwoH200s) {
  auto trace = evidence::readSystemTrace(std::string(ARGUS_SYSTEM_TRACE_DATA) +
                                         "/nccl/nccl_allgather_2048x4096.jsonl");
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->dropped, 0u);
  // NCCL ran each all-gather with exactly the CTAs its communicator was configured with.
  std::set<uint32_t> grids;
  for (const auto& op : trace->ops)
    if (op.nccl && op.name.find("AllGather") != std::string::npos) grids.insert(op.grid[0]);
  EXPECT_EQ(grids, (std::set<uint32_t>{2, 4, 8, 16, 32}));
  auto s = commSignals(*trace);
  size_t sized = 0;
  for (const auto& g : s.groups) {
    if (g.bytes == 0) {  // the barriers: no size label, never in the model's table
      EXPECT_EQ(g.sms, 1);
      continue;
    }
    ++sized;
    EXPECT_EQ(g.source, "nccl");
    // A rank receives half of each chunk: 8 MiB at S = 1 (9 chunks), 4 MiB at S = 2 (18).
    EXPECT_EQ(g.chunks, g.bytes == (8u << 20) ? 9u : 18u) << g.sms << " " << g.bytes;
    EXPECT_GT(g.launchOverheadNs, 0);
  }
  EXPECT_EQ(sized, 10u);
  CommTable table(s.groups, "nccl");
  // 2 CTAs move 8 MiB several times slower than 32 do.
  EXPECT_GT(table.chunkTimeNs(8u << 20, 2)->first, 3 * table.chunkTimeNs(8u << 20, 32)->first);
  EXPECT_TRUE(table.chunkTimeNs(4u << 20, 16)->second);

  // What `argus query --json` reports reads back into the same groups.
  const auto j = commSignalsJson(s);
  auto back = commGroupsFromJson(j["comm_chunk_time"], j["launch_overhead"]);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), s.groups.size());
  for (size_t i = 0; i < back->size(); ++i) {
    EXPECT_EQ((*back)[i].bytes, s.groups[i].bytes);
    EXPECT_EQ((*back)[i].sms, s.groups[i].sms);
    EXPECT_EQ((*back)[i].chunks, s.groups[i].chunks);
    EXPECT_DOUBLE_EQ((*back)[i].medianNs, s.groups[i].medianNs);
    EXPECT_DOUBLE_EQ((*back)[i].launchOverheadNs, s.groups[i].launchOverheadNs);
  }
  EXPECT_FALSE(commGroupsFromJson(json{{"unit", "ns"}}, json()));
  EXPECT_FALSE(commGroupsFromJson(json{{"unit", "ns"}, {"groups", {{{"bytes", 1}}}}}, json()));
}

// The synthesis executor reads the other processes' traces of the collection (evidence
// `collect/…/system_trace.<pid>`) and reports each group at its slowest process.
TEST(CommSignalsFixture, ExecutorJoinsEveryProcessOfTheRun) {
  auto text =
      readFile(std::string(ARGUS_SYSTEM_TRACE_DATA) + "/nccl/nccl_allgather_2048x4096.jsonl");
  ASSERT_TRUE(text);
  // A second rank identical to the first but with every GPU operation taking 1 µs longer.
  std::string slower;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    json j = json::parse(line);
    if (j.contains("end_ns")) j["end_ns"] = j["end_ns"].get<int64_t>() + 1000;
    slower += j.dump() + "\n";
  }
  runtime::ExecutorRegistry registry;
  registerCommSignalsExecutor(registry);
  runtime::TaskDescriptor task;
  task.id = "synth/system_trace";
  task.executor = "system_trace_signals";
  runtime::TaskContext ctx(task, std::filesystem::temp_directory_path() / "argus-comm-exec-test");
  ctx.inputs["evidence"] = runtime::Artifact::fromData(*text);
  ctx.evidence["collect/p0/system_trace"] = runtime::Artifact::fromData(*text);
  ctx.evidence["collect/p0/system_trace.4242"] = runtime::Artifact::fromData(slower);
  auto out = registry.find("system_trace_signals")->execute(ctx);
  ASSERT_TRUE(out) << out.error().text();
  const json chunkTime = json::parse(*out->artifacts.at("comm_chunk_time").read());
  EXPECT_EQ(chunkTime["processes"], 2);
  const json timeline = json::parse(*out->artifacts.at("kernel_timeline").read());
  ASSERT_EQ(timeline["other_processes"].size(), 1u);
  EXPECT_EQ(timeline["other_processes"][0]["operations"].size(), timeline["operations"].size());
  auto one = commSignals(*evidence::parseSystemTrace(*text));
  for (const auto& g : chunkTime["groups"]) {
    if (g["bytes"] == 0) continue;
    for (const auto& o : one.groups)
      if (g["bytes"] == o.bytes && g["sms"] == o.sms &&
          g["source"].get<std::string>() == o.source) {
        EXPECT_DOUBLE_EQ(g["median_ns"].get<double>(), o.medianNs + 1000);
        EXPECT_EQ(g["chunks"], 2 * o.chunks);
      }
  }
}

TEST(CommSignalsFixture, TmaGemmTimeline) {
  auto trace =
      evidence::readSystemTrace(std::string(ARGUS_SYSTEM_TRACE_DATA) + "/tma_gemm_256.jsonl");
  ASSERT_TRUE(trace) << trace.error().message;
  size_t kernels = 0, htod = 0, dtoh = 0;
  for (const auto& op : trace->ops) {
    if (op.kind == evidence::TraceOp::Kind::Kernel) {
      ++kernels;
      EXPECT_EQ(op.name, "tma_gemm");
      EXPECT_EQ(op.grid[0] * op.grid[1] * op.grid[2], 8u);  // 256 x 256 in 64 x 128 tiles
      EXPECT_EQ(op.block[0], 160u);
    }
    htod += op.copyKind == "htod";
    dtoh += op.copyKind == "dtoh";
    ASSERT_TRUE(op.launchLatencyNs()) << op.name;
    EXPECT_GT(*op.launchLatencyNs(), 0);
  }
  EXPECT_EQ(kernels, 1u);
  EXPECT_EQ(htod, 2u);
  EXPECT_EQ(dtoh, 1u);
  EXPECT_TRUE(commSignals(*trace).chunks.empty());
}

}  // namespace
}  // namespace argus::synthesis
