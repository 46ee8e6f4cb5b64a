// strip_markers: no marker remains, and ptxas builds the same SASS as from the marked PTX.
#include <gtest/gtest.h>

#include "test_util.h"

namespace argus::passes {
namespace {

using namespace testing;

TEST(StripMarkers, RemovesMarkersAndTheirInlineAsmWrapper) {
  auto module = ptx::parseModule(
      ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
      "\t// begin inline asm\n\t// @argus begin a\n\t// end inline asm\n"
      "\t// begin inline asm\n\tmov.u32 %r1, 1;\n\t// @argus end a\n\t// end inline asm\n"
      "\t// a comment\n\tret;\n}\n",
      "k.ptx");
  ASSERT_TRUE(module.has_value()) << module.error().text();
  auto result = applyTransforms(*module, {"strip_markers"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string printed = ptx::printModule(*module);
  EXPECT_EQ(printed.find("@argus"), std::string::npos) << printed;
  // The second wrapper also holds an instruction, so it stays.
  EXPECT_NE(printed.find("begin inline asm"), std::string::npos) << printed;
  EXPECT_NE(printed.find("a comment"), std::string::npos);
  EXPECT_EQ(result->statistics["strip_markers"]["markers"], 2);
  EXPECT_TRUE(result->traceMap.empty());
}

class StripMarkersExample : public ::testing::TestWithParam<std::string> {};

TEST_P(StripMarkersExample, SameSassAsTheMarkedPtx) {
  ptx::Module module = loadModule(dataDir() / "ptx" / GetParam());
  ASSERT_FALSE(HasFailure());
  const std::string original = ptx::printModule(module);
  auto result = applyTransforms(module, {"strip_markers"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string stripped = ptx::printModule(module);
  EXPECT_EQ(stripped.find("@argus"), std::string::npos);
  EXPECT_GT(result->statistics["strip_markers"]["markers"].get<uint64_t>(), 0u);

  auto dir = makeTempDir("argus-strip");
  ASSERT_TRUE(dir.has_value());
  auto a = assemble(original, module.target(), *dir, "marked");
  if (!a.ok && a.message.find("ptxas failed") == std::string::npos) GTEST_SKIP() << a.message;
  auto b = assemble(stripped, module.target(), *dir, "stripped");
  ASSERT_TRUE(a.ok) << a.message;
  ASSERT_TRUE(b.ok) << b.message;
  std::string error;
  auto sassA = sassInstructions(a.cubin, &error);
  auto sassB = sassInstructions(b.cubin, &error);
  fs::remove_all(*dir);
  if (!error.empty()) GTEST_SKIP() << error;
  ASSERT_FALSE(sassA.empty());
  EXPECT_EQ(sassA, sassB);
}

INSTANTIATE_TEST_SUITE_P(Examples, StripMarkersExample, ::testing::ValuesIn(exampleFixtures()));

}  // namespace
}  // namespace argus::passes
