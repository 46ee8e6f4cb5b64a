#include "argus/evidence/pc_evidence.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"

namespace argus::evidence {
namespace {

namespace fs = std::filesystem;

using test::slurp;

PcEvidence sampleEvidence() {
  PcEvidence e;
  e.collector = "cupti_pc_sampling";
  e.seq = 7;
  e.correlation = 99;
  e.kernel = "k";
  e.api = "cuLaunchKernelEx";
  e.grid[0] = 3;
  e.block[0] = 128;
  e.device = 1;
  e.stallReasons = {"smsp__pcsamp_warps_issue_stalled_barrier",
                    "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"};
  e.sampling = {9, 120, 2, 5, true};
  e.durationNs = 4567;
  PcFunction f{"k", 42, "cubin-42.cubin", 3, {}};
  PcRecord a;
  a.pc = 32;
  a.stalls = {{"smsp__pcsamp_warps_issue_stalled_barrier", 11}};
  PcRecord b;
  b.pc = 48;
  b.sass = "BAR.SYNC.DEFER_BLOCKING 0x0";
  b.metrics["Instructions Executed"] = {17, {}};
  b.fractional["Avg. Threads Executed"] = 31.5;
  f.pcs = {a, b};
  e.functions = {f};
  return e;
}

TEST(PcEvidence, RoundTripKeepsEveryField) {
  const PcEvidence e = sampleEvidence();
  auto back = parsePcEvidence(encodePcEvidence(e));
  ASSERT_TRUE(back) << back.error().text();
  EXPECT_EQ(back->collector, "cupti_pc_sampling");
  EXPECT_EQ(back->seq, 7u);
  EXPECT_EQ(back->correlation, 99u);
  EXPECT_EQ(back->api, "cuLaunchKernelEx");
  EXPECT_EQ(back->grid[0], 3u);
  EXPECT_EQ(back->block[0], 128u);
  EXPECT_EQ(back->device, 1);
  EXPECT_EQ(back->stallReasons, e.stallReasons);
  EXPECT_EQ(back->sampling.periodLog2, 9u);
  EXPECT_EQ(back->sampling.totalSamples, 120u);
  EXPECT_EQ(back->sampling.droppedSamples, 2u);
  EXPECT_EQ(back->sampling.nonUserSamples, 5u);
  EXPECT_TRUE(back->sampling.hardwareBufferFull);
  ASSERT_TRUE(back->durationNs);
  EXPECT_EQ(*back->durationNs, 4567u);
  ASSERT_EQ(back->functions.size(), 1u);
  const PcFunction& f = back->functions[0];
  EXPECT_EQ(f.cubinCrc, 42u);
  EXPECT_EQ(f.cubinFile, "cubin-42.cubin");
  EXPECT_EQ(f.functionIndex, 3u);
  ASSERT_NE(f.at(32), nullptr);
  EXPECT_EQ(f.at(32)->stalls.at("smsp__pcsamp_warps_issue_stalled_barrier"), 11u);
  ASSERT_NE(f.at(48), nullptr);
  EXPECT_EQ(f.at(48)->sass, "BAR.SYNC.DEFER_BLOCKING 0x0");
  EXPECT_EQ(f.at(48)->metrics.at("Instructions Executed").total, 17u);
  EXPECT_DOUBLE_EQ(f.at(48)->fractional.at("Avg. Threads Executed"), 31.5);
  EXPECT_EQ(f.at(40), nullptr);
  EXPECT_EQ(encodePcEvidence(*back), encodePcEvidence(e));
}

TEST(PcEvidence, ReadsTheHandWrittenFixture) {
  auto e = parsePcEvidence(slurp(fs::path(ARGUS_PC_EVIDENCE_DATA) / "handmade_sass_metrics.json"));
  ASSERT_TRUE(e) << e.error().text();
  EXPECT_EQ(e->collector, "cupti_sass_metrics");
  EXPECT_EQ(e->granularity, "sm");
  EXPECT_EQ(e->instances, 2u);
  EXPECT_FALSE(e->durationNs);
  ASSERT_EQ(e->functions.size(), 2u);
  const PcFunction* helper = e->function("_Z6helperf");
  ASSERT_NE(helper, nullptr);
  EXPECT_EQ(helper->functionIndex, 8u);
  const PcMetric& m = helper->at(0)->metrics.at("smsp__sass_inst_executed");
  EXPECT_EQ(m.total, 6u);
  EXPECT_EQ(m.perInstance, (std::vector<std::uint64_t>{4, 2}));
  EXPECT_EQ(e->metricTotal("smsp__sass_inst_executed"), 4u + 4u + 0u + 6u);
  EXPECT_EQ(e->metricTotal("smsp__sass_thread_inst_executed"), 128u + 96u + 192u);
  EXPECT_EQ(e->metricTotal("no_such_metric"), 0u);
  EXPECT_EQ(e->function("absent"), nullptr);
}

/// The fixture with one textual replacement, parsed.
Result<PcEvidence> parseEdited(const std::string& from, const std::string& to) {
  std::string text = slurp(fs::path(ARGUS_PC_EVIDENCE_DATA) / "handmade_sass_metrics.json");
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return parsePcEvidence(text);
}

TEST(PcEvidence, RejectsBrokenFiles) {
  EXPECT_FALSE(parsePcEvidence("{"));
  EXPECT_FALSE(parsePcEvidence("[]"));
  auto wrongFormat = parseEdited("argus_pc_evidence 1", "argus_pc_evidence 2");
  ASSERT_FALSE(wrongFormat);
  EXPECT_NE(wrongFormat.error().message.find("argus_pc_evidence 2"), std::string::npos);

  auto unsorted = parseEdited("{\"pc\": 48,", "{\"pc\": 16,");
  ASSERT_FALSE(unsorted);
  EXPECT_NE(unsorted.error().message.find("functions[0].pcs[2].pc"), std::string::npos)
      << unsorted.error().text();
  EXPECT_NE(unsorted.error().message.find("sorted"), std::string::npos);

  auto badSum = parseEdited("\"total\": 6, \"per_instance\": [4, 2]",
                            "\"total\": 7, \"per_instance\": [4, 2]");
  ASSERT_FALSE(badSum);
  EXPECT_NE(badSum.error().message.find("sum to 6"), std::string::npos) << badSum.error().text();

  auto badCount = parseEdited("\"total\": 6, \"per_instance\": [4, 2]",
                              "\"total\": 6, \"per_instance\": [4, 1, 1]");
  ASSERT_FALSE(badCount);
  EXPECT_NE(badCount.error().message.find("expected 2"), std::string::npos);

  auto badType = parseEdited("{\"pc\": 16,", "{\"pc\": \"0x10\",");
  ASSERT_FALSE(badType);
  EXPECT_NE(badType.error().message.find("functions[0].pcs[1].pc"), std::string::npos)
      << badType.error().text();

  auto noInstances = parseEdited("\"instances\": 2", "\"instances\": 0");
  EXPECT_FALSE(noInstances);
}

class PcEvidenceDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("argus-pc-evidence-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  fs::path dir_;
};

TEST_F(PcEvidenceDir, ReadsLaunchesInSeqOrderWithDurations) {
  PcEvidence a = sampleEvidence();
  a.seq = 10;
  a.durationNs.reset();
  PcEvidence b = sampleEvidence();
  b.seq = 2;
  b.durationNs.reset();
  write(pcEvidenceFileName(10), encodePcEvidence(a));
  write(pcEvidenceFileName(2), encodePcEvidence(b));
  write("pc-notes.json", "not evidence");
  write("launches.jsonl", "{}\n");
  write("kernels.jsonl",
        "{\"seq\":2,\"correlation\":5,\"kernel\":\"k\",\"start_ns\":1,\"end_ns\":801,"
        "\"duration_ns\":800}\n{\"seq\":-1,\"duration_ns\":3}\n");
  auto all = readPcEvidenceDir(dir_);
  ASSERT_TRUE(all) << all.error().text();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].seq, 2u);
  EXPECT_EQ((*all)[1].seq, 10u);
  ASSERT_TRUE((*all)[0].durationNs);
  EXPECT_EQ(*(*all)[0].durationNs, 800u);
  EXPECT_FALSE((*all)[1].durationNs);
}

TEST_F(PcEvidenceDir, NamesTheBrokenFile) {
  write(pcEvidenceFileName(4), "{\"format\": \"argus_pc_evidence 1\"}");
  auto all = readPcEvidenceDir(dir_);
  ASSERT_FALSE(all);
  EXPECT_NE(all.error().message.find("pc-4.json"), std::string::npos) << all.error().text();
  EXPECT_FALSE(readPcEvidenceDir(dir_ / "missing"));
}

TEST(PcEvidence, FileNames) {
  EXPECT_EQ(pcEvidenceFileName(12), "pc-12.json");
  EXPECT_EQ(cubinFileName(3735928559u), "cubin-3735928559.cubin");
}

}  // namespace
}  // namespace argus::evidence

namespace argus::evidence {
namespace {

// Real collector output (tests/data/pc_evidence/README.md): bench/pc_overhead on the H200, 128
// CTAs x 256 threads = 1,024 warps, each executing the same 2,838 warp instructions.
TEST(PcEvidenceReal, ReadsTheCollectorsOwnFile) {
  std::ifstream in(fs::path(ARGUS_PC_EVIDENCE_DATA) / "pc_overhead_mapping_pc-0.json");
  std::stringstream text;
  text << in.rdbuf();
  auto e = parsePcEvidence(text.str());
  ASSERT_TRUE(e.has_value()) << e.error().text();
  EXPECT_EQ(e->collector, "cupti_sass_metrics");
  EXPECT_EQ(e->kernel, "pc_overhead");
  EXPECT_EQ(e->grid[0], 128u);
  EXPECT_EQ(e->block[0], 256u);
  EXPECT_EQ(e->metricTotal("smsp__sass_inst_executed"), 2838u * 1024u);
  ASSERT_FALSE(e->functions.empty());
  EXPECT_NE(e->functions[0].cubinCrc, 0u);
  EXPECT_EQ(encodePcEvidence(*parsePcEvidence(encodePcEvidence(*e))), encodePcEvidence(*e));
}

}  // namespace
}  // namespace argus::evidence
