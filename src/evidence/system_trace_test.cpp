// The system-trace reader: hand-written edge cases and the GPU-recorded fixtures
// (tests/data/system_trace, see its README).
#include <gtest/gtest.h>

#include <set>

#include "argus/evidence/system_trace.h"
#include "argus/support/process.h"

namespace argus::evidence {
namespace {

constexpr const char* kHeader =
    R"({"type":"header","format":"argus.system_trace","version":1,"pid":1,"labels":{}})"
    "\n";

TEST(SystemTrace, JoinsLaunchTimeAndRangeByCorrelation) {
  const std::string text =
      std::string(kHeader) +
      R"({"type":"kernel","name":"k","device":0,"stream":7,"correlation":5,"start_ns":1000,"end_ns":1500,"grid":[4,1,1],"block":[128,1,1]})"
      "\n"
      R"({"type":"marker","flag":"start","id":1,"thread":9,"timestamp_ns":100,"name":"argus.comm bytes=64 sms=4"})"
      "\n"
      R"({"type":"marker","flag":"end","id":1,"thread":9,"timestamp_ns":900})"
      "\n"
      // Driver call nested in the runtime call: the earlier (outer) enter time wins.
      R"({"type":"api","domain":"driver","cbid":1,"correlation":5,"thread":9,"start_ns":300,"end_ns":400})"
      "\n"
      R"({"type":"api","domain":"runtime","cbid":2,"correlation":5,"thread":9,"start_ns":200,"end_ns":450})"
      "\n";
  auto trace = parseSystemTrace(text);
  ASSERT_TRUE(trace) << trace.error().message;
  ASSERT_EQ(trace->ops.size(), 1u);
  ASSERT_EQ(trace->ranges.size(), 1u);
  const auto& op = trace->ops[0];
  EXPECT_EQ(op.launchLatencyNs(), 800);
  EXPECT_EQ(op.range, 0);
  EXPECT_EQ(op.grid[0], 4u);
  EXPECT_EQ(trace->ranges[0].labels.at("bytes"), "64");
  EXPECT_EQ(trace->unmatchedMarkers, 0u);
}

TEST(SystemTrace, RangeOnAnotherThreadDoesNotEnclose) {
  const std::string text =
      std::string(kHeader) +
      R"({"type":"memcpy","kind":"dtod","bytes":256,"device":0,"stream":3,"correlation":2,"start_ns":50,"end_ns":60})"
      "\n"
      R"({"type":"api","domain":"runtime","cbid":2,"correlation":2,"thread":1,"start_ns":20,"end_ns":30})"
      "\n"
      R"({"type":"marker","flag":"start","id":4,"thread":2,"timestamp_ns":10,"name":"other"})"
      "\n"
      R"({"type":"marker","flag":"end","id":4,"thread":2,"timestamp_ns":40})"
      "\n";
  auto trace = parseSystemTrace(text);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->ops[0].range, -1);
  EXPECT_EQ(trace->ops[0].bytes, 256u);
  EXPECT_EQ(trace->ops[0].name, "memcpy dtod");
}

TEST(SystemTrace, InnermostOfNestedRanges) {
  const std::string text =
      std::string(kHeader) +
      R"({"type":"marker","flag":"start","id":1,"thread":1,"timestamp_ns":0,"name":"outer"})"
      "\n"
      R"({"type":"marker","flag":"start","id":2,"thread":1,"timestamp_ns":10,"name":"inner"})"
      "\n"
      R"({"type":"marker","flag":"end","id":2,"thread":1,"timestamp_ns":30})"
      "\n"
      R"({"type":"marker","flag":"end","id":1,"thread":1,"timestamp_ns":50})"
      "\n"
      R"({"type":"kernel","name":"k","correlation":3,"start_ns":60,"end_ns":70})"
      "\n"
      R"({"type":"api","domain":"runtime","correlation":3,"thread":1,"start_ns":20,"end_ns":25})"
      "\n";
  auto trace = parseSystemTrace(text);
  ASSERT_TRUE(trace) << trace.error().message;
  ASSERT_EQ(trace->ranges.size(), 2u);
  ASSERT_GE(trace->ops[0].range, 0);
  EXPECT_EQ(trace->ranges[trace->ops[0].range].name, "inner");
  EXPECT_EQ(trace->ranges[trace->ops[0].range].depth, 1);
}

TEST(SystemTrace, UnmatchedMarkersAreCountedNotFatal) {
  const std::string text =
      std::string(kHeader) +
      R"({"type":"marker","flag":"end","id":8,"thread":1,"timestamp_ns":5})"
      "\n"
      R"({"type":"marker","flag":"start","id":9,"thread":1,"timestamp_ns":6,"name":"open"})"
      "\n"
      R"({"type":"dropped","count":3})"
      "\n";
  auto trace = parseSystemTrace(text);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->unmatchedMarkers, 2u);
  EXPECT_EQ(trace->dropped, 3u);
  EXPECT_TRUE(trace->ranges.empty());
}

TEST(SystemTrace, ErrorsNameTheLine) {
  auto noHeader = parseSystemTrace(R"({"type":"kernel","start_ns":1,"end_ns":2})");
  ASSERT_FALSE(noHeader);
  EXPECT_NE(noHeader.error().message.find("no header"), std::string::npos);
  auto bad = parseSystemTrace(std::string(kHeader) + "not json\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos);
  auto backwards =
      parseSystemTrace(std::string(kHeader) + R"({"type":"kernel","start_ns":9,"end_ns":2})");
  ASSERT_FALSE(backwards);
  EXPECT_NE(backwards.error().message.find("precedes"), std::string::npos);
  auto version = parseSystemTrace(R"({"type":"header","format":"argus.system_trace","version":2})");
  ASSERT_FALSE(version);
}

TEST(SystemTrace, NcclNames) {
  EXPECT_TRUE(
      isNcclKernelName("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_TRUE(isNcclKernelName("_Z28ncclKernel_AllGather_RING_LLP11ncclDevComm"));
  EXPECT_FALSE(isNcclKernelName("argus_comm_copy"));
  auto trace = parseSystemTrace(
      std::string(kHeader) +
      R"({"type":"kernel","name":"ncclDevKernel_AllGather_RING_LL","start_ns":1,"end_ns":2})");
  ASSERT_TRUE(trace);
  EXPECT_TRUE(trace->ops[0].nccl);
}

TEST(SystemTrace, ChromeHasOneTrackPerStream) {
  const std::string text =
      std::string(kHeader) +
      R"({"type":"kernel","name":"a","device":0,"stream":7,"start_ns":1000,"end_ns":3000})"
      "\n"
      R"({"type":"kernel","name":"b","device":0,"stream":8,"start_ns":1500,"end_ns":2000})"
      "\n"
      R"({"type":"memset","bytes":16,"device":0,"stream":7,"start_ns":3000,"end_ns":3100})"
      "\n";
  auto trace = parseSystemTrace(text);
  ASSERT_TRUE(trace);
  auto chrome = systemTraceChrome(*trace);
  std::set<int> tids;
  int threadNames = 0;
  for (const auto& e : chrome["traceEvents"]) {
    if (e["ph"] == "X") tids.insert(e["tid"].get<int>());
    if (e["name"] == "thread_name") ++threadNames;
  }
  EXPECT_EQ(tids, (std::set<int>{7, 8}));
  EXPECT_EQ(threadNames, 2);
  EXPECT_DOUBLE_EQ(chrome["traceEvents"][0]["dur"].get<double>(), 2.0);  // µs
}

// Several processes of one run on one timeline: each keeps its own Chrome processes.
TEST(SystemTraceChrome, ProcessesOfOneRunDoNotShareTracks) {
  auto trace = readSystemTrace(std::string(ARGUS_SYSTEM_TRACE_DATA) +
                               "/nccl/nccl_allgather_2048x4096.jsonl");
  ASSERT_TRUE(trace) << trace.error().message;
  const auto one = systemTraceChrome(*trace);
  const auto two = systemTraceChrome(std::vector<SystemTrace>{*trace, *trace});
  EXPECT_EQ(two["traceEvents"].size(), 2 * one["traceEvents"].size());
  std::set<int64_t> first, second;
  size_t named = 0;
  for (size_t i = 0; i < two["traceEvents"].size(); ++i) {
    const auto& e = two["traceEvents"][i];
    (i < one["traceEvents"].size() ? first : second).insert(e["pid"].get<int64_t>());
    if (e["name"] == "process_name" &&
        e["args"]["name"].get<std::string>().find("(process 1") != std::string::npos)
      ++named;
  }
  for (int64_t pid : first) EXPECT_FALSE(second.contains(pid)) << pid;
  EXPECT_GE(named, 2u);  // its GPU and its host
}

// Processes of one run that all inherit ARGUS_SYSTEM_TRACE_OUT never share a file: the first
// takes it, later ones write <file>.<pid>; a previous run's file is replaced.
}  // namespace
}  // namespace argus::evidence
