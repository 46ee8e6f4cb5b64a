#include "argus/evidence/ncu_source.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace argus::evidence::ncu {
namespace {

namespace fs = std::filesystem;

using test::slurp;

TEST(NcuCsv, SplitsQuotedCells) {
  EXPECT_EQ(splitCsvLine(R"("a","b,c","d ""e""",7)"),
            (std::vector<std::string>{"a", "b,c", "d \"e\"", "7"}));
  EXPECT_EQ(splitCsvLine("x,\r"), (std::vector<std::string>{"x", ""}));
  EXPECT_TRUE(splitCsvLine("").empty());
}

// A real export (tests/data/ncu/README.md): examples/nested_regions profiled on the H200.
TEST(NcuSource, ParsesARealSassTable) {
  auto launches =
      parseNcuSourceCsv(slurp(fs::path(ARGUS_NCU_DATA) / "nested_regions_source_sass.csv"));
  ASSERT_TRUE(launches) << launches.error().text();
  ASSERT_EQ(launches->size(), 1u);
  const PcEvidence& first = (*launches)[0];
  EXPECT_EQ(first.collector, "ncu");
  EXPECT_EQ(first.seq, 0u);
  EXPECT_EQ(first.kernel, "nested_regions");
  ASSERT_EQ(first.functions.size(), 1u);
  const PcFunction& f = first.functions[0];
  EXPECT_EQ(f.name, "nested_regions");
  ASSERT_EQ(f.pcs.size(), 160u);
  EXPECT_EQ(f.pcs[0].pc, 0u);
  EXPECT_EQ(f.pcs[1].pc, 0x10u);
  EXPECT_EQ(f.pcs[0].sass, "LDC R1, c[0x0][0x28]");
  // Every warp runs the prologue: 4,096 warps of 32 threads.
  EXPECT_EQ(f.pcs[0].metrics.at("Instructions Executed").total, 4096u);
  EXPECT_EQ(f.pcs[0].metrics.at("Thread Instructions Executed").total, 131072u);
  // The per-PC sums are the kernel totals of the raw page (smsp__inst_executed.sum).
  EXPECT_EQ(first.metricTotal("Instructions Executed"), 6564864u);
  EXPECT_EQ(first.metricTotal("Thread Instructions Executed"), 182167410u);
  // The same structure as the CUPTI files: it encodes and reads back.
  auto back = parsePcEvidence(encodePcEvidence(first));
  ASSERT_TRUE(back) << back.error().text();
  EXPECT_EQ(encodePcEvidence(*back), encodePcEvidence(first));
}

TEST(NcuSource, FunctionNameLinesStartFunctions) {
  const std::string csv =
      "\"Kernel Name\",\"k\"\n"
      "\"Address\",\"Source\",\"Instructions Executed\"\n"
      "\"Function Name\",\"k\"\n"
      "\"0x100\",\"NOP\",\"1\"\n"
      "\"Function Name\",\"_Z1fv\"\n"
      "\"0x200\",\"RET.ABS\",\"2\"\n";
  auto launches = parseNcuSourceCsv(csv);
  ASSERT_TRUE(launches) << launches.error().text();
  ASSERT_EQ((*launches)[0].functions.size(), 2u);
  EXPECT_EQ((*launches)[0].functions[1].name, "_Z1fv");
  EXPECT_EQ((*launches)[0].functions[1].pcs[0].pc, 0x100u);
}

TEST(NcuSource, ExplainsWhatIsWrong) {
  auto noKernel = parseNcuSourceCsv("\"Address\",\"Source\"\n\"0x0\",\"NOP\"\n");
  ASSERT_FALSE(noKernel);
  EXPECT_NE(noKernel.error().message.find("line 1"), std::string::npos);

  auto notHex = parseNcuSourceCsv(
      "\"Kernel Name\",\"k\"\n\"Address\",\"Source\",\"Instructions "
      "Executed\"\n\"12\",\"NOP\",\"1\"\n");
  ASSERT_FALSE(notHex);
  EXPECT_NE(notHex.error().message.find("line 3"), std::string::npos) << notHex.error().text();

  auto noHeader = parseNcuSourceCsv("\"Kernel Name\",\"k\"\n\"ID\",\"0\"\n");
  ASSERT_FALSE(noHeader);
  EXPECT_NE(noHeader.error().message.find("--page source"), std::string::npos);

  auto twice = parseNcuSourceCsv(
      "\"Kernel "
      "Name\",\"k\"\n\"Address\",\"Source\",\"I\"\n\"0x0\",\"A\",\"1\"\n\"0x0\",\"B\",\"1\"\n");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("twice"), std::string::npos);
}

TEST(NcuRaw, ReadsTotalsPerLaunch) {
  auto raw = parseNcuRawCsv(slurp(fs::path(ARGUS_NCU_DATA) / "nested_regions_raw.csv"));
  ASSERT_TRUE(raw) << raw.error().text();
  // The header row, a row of units, one profiled launch.
  ASSERT_EQ(raw->size(), 1u);
  EXPECT_EQ((*raw)[0].kernel, "nested_regions");
  EXPECT_EQ((*raw)[0].number("smsp__inst_executed.sum"), 6564864.0);
  EXPECT_EQ((*raw)[0].number("smsp__thread_inst_executed.sum"), 182167410.0);
  EXPECT_FALSE((*raw)[0].number("absent"));
  EXPECT_FALSE(parseNcuRawCsv("\"ID\",\"x\"\n"));
}

TEST(NcuColumns, MapCuptiMetrics) {
  EXPECT_EQ(sourceColumnFor("smsp__sass_inst_executed"), "Instructions Executed");
  EXPECT_EQ(sourceColumnFor("smsp__sass_thread_inst_executed"), "Thread Instructions Executed");
  EXPECT_EQ(sourceColumnFor("smsp__sass_inst_executed_op_global_ld"), "");
}

}  // namespace
}  // namespace argus::evidence::ncu
