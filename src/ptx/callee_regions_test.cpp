#include "argus/ptx/callee_regions.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "ptx_test_util.h"

namespace argus::ptx {
namespace {

using testing::functionRegions;
using testing::parseOrDie;
using testing::regionPaths;

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string marker(const char* kind, const std::string& name) {
  return std::string("\t// begin inline asm\n\t// @argus ") + kind + " " + name +
         "\n\t// end inline asm\n";
}

/// A module: `.func helper()` with one region `work`, and kernel `k` with `kernelBody`.
std::string module(const std::string& kernelBody) {
  return ".version 8.8\n.target sm_90a\n.address_size 64\n\n"
         ".func helper()\n{\n\t.reg .b32 %h<4>;\n" +
         marker("begin", "work") + "\tmov.u32 %h1, 1;\n" + marker("end", "work") +
         "\tret;\n}\n"
         ".visible .entry k(\n\t.param .u32 k_param_0\n)\n{\n\t.reg .pred %p<4>;\n"
         "\t.reg .b32 %r<10>;\n" +
         kernelBody + "\tret;\n}\n";
}

TEST(CalleeRegions, ExampleHelperRegionsRunUnderTheCallingLoopRegion) {
  // nvcc's PTX of examples/callee_regions/kernel.cu (tests/data/ptx/README.md).
  Module m = parseOrDie(
      readFile(std::filesystem::path(ARGUS_TEST_DATA_DIR) / "ptx/examples_callee_regions.ptx"));
  auto analysis = analyzeRegions(m);
  ASSERT_TRUE(analysis) << analysis.error().text();
  const auto helperPaths = regionPaths(functionRegions(*analysis, "_Z8tileStepPKfii"));
  auto composed = composeCalleeRegions(m, *analysis);
  ASSERT_TRUE(composed) << composed.error().text();
  const FunctionRegions& kernel = functionRegions(*analysis, "callee_regions");
  EXPECT_EQ(regionPaths(kernel), (std::vector<std::string>{"tiles", "tiles/tile", "tiles/tile/load",
                                                           "tiles/tile/combine"}));
  // The helper's own tree is unchanged.
  EXPECT_EQ(regionPaths(functionRegions(*analysis, "_Z8tileStepPKfii")), helperPaths);
  EXPECT_EQ(helperPaths, (std::vector<std::string>{"load", "combine"}));
  ASSERT_EQ(composed->count("callee_regions"), 1u);
  const ComposedKernel& ck = composed->at("callee_regions");
  ASSERT_EQ(ck.instances.size(), 1u);
  EXPECT_EQ(ck.instances[0].function, "_Z8tileStepPKfii");
  EXPECT_EQ(ck.instances[0].context, "tiles/tile");
  EXPECT_EQ(ck.instances[0].parent, std::optional<uint32_t>(1));
  EXPECT_EQ(ck.instances[0].first, 2u);
  EXPECT_EQ(ck.instances[0].count, 2u);
  // Parents, children and IDs of the composed paths.
  EXPECT_EQ(kernel.regions[2].parent, std::optional<uint32_t>(1));
  EXPECT_EQ(kernel.regions[3].parent, std::optional<uint32_t>(1));
  EXPECT_EQ(kernel.regions[1].children, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(kernel.regions[3].id, regionId("callee_regions", "tiles/tile/combine"));
  EXPECT_TRUE(ck.skipped.empty());
}

TEST(CalleeRegions, OneHelperUnderTwoRegionsAndOutsideEvery) {
  Module m = parseOrDie(module(marker("begin", "a") + "\tcall.uni helper;\n" + marker("end", "a") +
                               marker("begin", "b") + "\tcall.uni helper;\n\tcall.uni helper;\n" +
                               marker("end", "b") + "\tcall.uni helper;\n"));
  auto analysis = analyzeRegions(m);
  ASSERT_TRUE(analysis) << analysis.error().text();
  auto composed = composeCalleeRegions(m, *analysis);
  ASSERT_TRUE(composed) << composed.error().text();
  // Two calls from `b` share one composed region; the call outside every region adds `work`.
  EXPECT_EQ(regionPaths(functionRegions(*analysis, "k")),
            (std::vector<std::string>{"a", "b", "a/work", "b/work", "work"}));
  EXPECT_EQ(functionRegions(*analysis, "k").regions[4].parent, std::nullopt);
  EXPECT_EQ(composed->at("k").instances.size(), 3u);
}

TEST(CalleeRegions, ThroughAFunctionWithoutRegions) {
  const std::string text =
      ".version 8.8\n.target sm_90a\n.address_size 64\n\n"
      ".func leaf()\n{\n" +
      marker("begin", "inner") + "\tret;\n}\n" +
      ".func middle()\n{\n\tcall.uni leaf;\n\tret;\n}\n"
      ".visible .entry k()\n{\n" +
      marker("begin", "outer") + "\tcall.uni middle;\n" + marker("end", "outer") + "\tret;\n}\n";
  // `inner` is open at leaf's ret: a region must close in its function.
  Module bad = parseOrDie(text);
  EXPECT_FALSE(analyzeRegions(bad).has_value());
  std::string good = text;
  good.replace(good.find("\tret;\n}\n.func middle"), 6, marker("end", "inner") + "\tret;\n");
  Module m = parseOrDie(good);
  auto analysis = analyzeRegions(m);
  ASSERT_TRUE(analysis) << analysis.error().text();
  ASSERT_TRUE(composeCalleeRegions(m, *analysis));
  EXPECT_EQ(regionPaths(functionRegions(*analysis, "k")),
            (std::vector<std::string>{"outer", "outer/inner"}));
}

TEST(CalleeRegions, RecursionIsSkippedWithAWarning) {
  const std::string text =
      ".version 8.8\n.target sm_90a\n.address_size 64\n\n"
      ".func rec()\n{\n" +
      marker("begin", "r") + "\tcall.uni rec;\n" + marker("end", "r") + "\tret;\n}\n" +
      ".visible .entry k()\n{\n\tcall.uni rec;\n\tret;\n}\n";
  Module m = parseOrDie(text);
  auto analysis = analyzeRegions(m);
  ASSERT_TRUE(analysis) << analysis.error().text();
  auto composed = composeCalleeRegions(m, *analysis);
  ASSERT_TRUE(composed) << composed.error().text();
  EXPECT_EQ(regionPaths(functionRegions(*analysis, "k")), (std::vector<std::string>{"r"}));
  EXPECT_EQ(composed->at("k").skipped, (std::vector<std::string>{"rec"}));
  ASSERT_FALSE(functionRegions(*analysis, "k").warnings.empty());
  EXPECT_NE(functionRegions(*analysis, "k").warnings.back().message.find("recursively"),
            std::string::npos);
}

TEST(CalleeRegions, KernelsWithoutMarkedCalleesAreUnchanged) {
  Module m = parseOrDie(
      readFile(std::filesystem::path(ARGUS_TEST_DATA_DIR) / "ptx/examples_shared_callee.ptx"));
  auto analysis = analyzeRegions(m);
  ASSERT_TRUE(analysis) << analysis.error().text();
  const auto before = regionPaths(functionRegions(*analysis, "shared_callee"));
  auto composed = composeCalleeRegions(m, *analysis);
  ASSERT_TRUE(composed) << composed.error().text();
  EXPECT_TRUE(composed->empty());
  EXPECT_EQ(regionPaths(functionRegions(*analysis, "shared_callee")), before);
}

}  // namespace
}  // namespace argus::ptx
