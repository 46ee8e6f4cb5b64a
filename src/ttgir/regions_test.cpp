// TTGIR region reader on Triton 3.6 output (tests/data/triton, made by make_fixtures.py) and on
// small hand-written malformed modules.
#include "argus/ttgir/regions.h"

#include <gtest/gtest.h>

#include "argus/ptx/parser.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace argus::ttgir {
namespace {

std::string readData(const std::string& name) {
  std::ifstream in(std::filesystem::path(ARGUS_TEST_DATA_DIR) / "triton" / name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TtgirRegions, ProtonScopesOfTheMatmulFixture) {
  const std::string text = readData("matmul_tma_proton.ttgir");
  ASSERT_TRUE(looksLikeTtgir(text));
  auto fns = analyzeRegions(text, "matmul_tma_proton.ttgir");
  ASSERT_TRUE(fns.has_value()) << fns.error().text();
  ASSERT_EQ(fns->size(), 1u);
  const auto& f = fns->front();
  EXPECT_EQ(f.function, "matmul_tma_proton");
  EXPECT_TRUE(f.isEntry);
  ASSERT_EQ(f.regions.size(), 2u);
  EXPECT_EQ(f.regions[0].path, "mainloop");
  EXPECT_EQ(f.regions[1].path, "epilogue");
  EXPECT_EQ(f.regions[0].id, ptx::regionId("matmul_tma_proton", "mainloop"));
  ASSERT_EQ(f.regions[0].begins.size(), 1u);
  EXPECT_EQ(f.regions[0].begins[0].ptx.line, 40u);
  EXPECT_EQ(f.regions[0].ends[0].ptx.line, 95u);
  // loc(#loc18) resolves through the alias table to the kernel's Python source line.
  EXPECT_NE(f.regions[0].begins[0].source.file.find("make_fixtures.py"), std::string::npos);
  EXPECT_GT(f.regions[0].begins[0].source.line, 0u);
  EXPECT_GT(f.regions[0].instructions, 20u);  // the K loop's operations
  EXPECT_GT(f.regions[1].instructions, 0u);
}

TEST(TtgirRegions, SameIdsInTtirAndTtgir) {
  auto a = analyzeRegions(readData("matmul_tma_proton.ttir"), "a.ttir");
  auto b = analyzeRegions(readData("matmul_tma_proton.ttgir"), "b.ttgir");
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->front().regions.size(), b->front().regions.size());
  for (size_t i = 0; i < a->front().regions.size(); ++i)
    EXPECT_EQ(a->front().regions[i].id, b->front().regions[i].id);
}

TEST(TtgirRegions, KernelWithoutScopesHasNoRegions) {
  auto fns = analyzeRegions(readData("matmul_tma.ttgir"), "matmul_tma.ttgir");
  ASSERT_TRUE(fns.has_value()) << fns.error().text();
  ASSERT_EQ(fns->size(), 1u);
  EXPECT_TRUE(fns->front().regions.empty());
}

std::string module(const std::string& body) {
  return "module attributes {\"ttg.num-warps\" = 4 : i32} {\n"
         "  tt.func public @k(%n: i32) attributes {noinline = false} {\n" +
         body + "    tt.return\n  }\n}\n";
}

TEST(TtgirRegions, NestedScopesAndErrorsNameTheLine) {
  auto ok = analyzeRegions(module("    proton.record start \"outer\"\n"
                                  "    proton.record start \"inner\"\n"
                                  "    %a = arith.addi %n, %n : i32\n"
                                  "    proton.record end \"inner\"\n"
                                  "    proton.record end \"outer\"\n"),
                           "k.ttgir");
  ASSERT_TRUE(ok.has_value()) << ok.error().text();
  ASSERT_EQ(ok->front().regions.size(), 2u);
  EXPECT_EQ(ok->front().regions[1].path, "outer/inner");
  EXPECT_EQ(ok->front().regions[1].parent, 0u);
  EXPECT_EQ(ok->front().regions[1].instructions, 1u);

  auto crossing = analyzeRegions(module("    proton.record start \"a\"\n"
                                        "    proton.record start \"b\"\n"
                                        "    proton.record end \"a\"\n"
                                        "    proton.record end \"b\"\n"),
                                 "k.ttgir");
  ASSERT_FALSE(crossing.has_value());
  EXPECT_NE(crossing.error().message.find("k.ttgir:5:"), std::string::npos)
      << crossing.error().message;
  EXPECT_NE(crossing.error().message.find("must nest"), std::string::npos);

  auto otherBlock = analyzeRegions(
      module("    proton.record start \"loop\"\n"
             "    %r = scf.for %i = %n to %n step %n iter_args(%x = %n) -> (i32)  : i32 {\n"
             "      proton.record end \"loop\"\n"
             "      scf.yield %x : i32\n"
             "    }\n"),
      "k.ttgir");
  ASSERT_FALSE(otherBlock.has_value());
  EXPECT_NE(otherBlock.error().message.find("another block"), std::string::npos);

  auto open = analyzeRegions(module("    scf.for %i = %n to %n step %n  : i32 {\n"
                                    "      proton.record start \"body\"\n"
                                    "    }\n"),
                             "k.ttgir");
  ASSERT_FALSE(open.has_value());
  EXPECT_NE(open.error().message.find("still open where its block ends"), std::string::npos);

  auto stray = analyzeRegions(module("    proton.record end \"x\"\n"), "k.ttgir");
  ASSERT_FALSE(stray.has_value());
  EXPECT_NE(stray.error().message.find("no open scope"), std::string::npos);
}

}  // namespace
}  // namespace argus::ttgir

namespace argus::ttgir {
namespace {

// Argus markers (python/argus/triton.py) survive TTGIR -> LLVM IR -> PTX with the same region
// tree and IDs (tests/data/triton/make_argus_marker_fixture.py made both files).
TEST(TtgirRegions, ArgusMarkerIdsAreTheSameInTtgirAndPtx) {
  auto fromTtgir = analyzeRegions(readData("matmul_tma_argus.ttgir"), "matmul_tma_argus.ttgir");
  ASSERT_TRUE(fromTtgir.has_value()) << fromTtgir.error().text();
  std::ifstream in(std::filesystem::path(ARGUS_TEST_DATA_DIR) / "ptx" /
                   "triton_matmul_tma_argus.ptx");
  std::stringstream text;
  text << in.rdbuf();
  auto module = ptx::parseModule(text.str(), "triton_matmul_tma_argus.ptx");
  ASSERT_TRUE(module.has_value()) << module.error().text();
  auto fromPtx = ptx::analyzeRegions(*module);
  ASSERT_TRUE(fromPtx.has_value()) << fromPtx.error().text();
  const auto& a = fromTtgir->front().regions;
  const auto& b = fromPtx->front().regions;
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].path, b[i].path);
    EXPECT_EQ(a[i].id, b[i].id);
  }
  // The iteration operand is the TTGIR value passed to region_begin_iter.
  ASSERT_EQ(a[1].begins.size(), 1u);
  EXPECT_TRUE(a[1].begins[0].iteration.starts_with("%")) << a[1].begins[0].iteration;
  EXPECT_TRUE(b[1].begins[0].iteration.starts_with("%r")) << b[1].begins[0].iteration;
  // Source lines name the kernel's own lines (the caller of the marker helper).
  EXPECT_NE(a[0].begins[0].source.file.find("triton_matmul/kernel.py"), std::string::npos);
}

}  // namespace
}  // namespace argus::ttgir
