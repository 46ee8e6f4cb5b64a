// paint_ptx: one synthetic line per instruction, declared before use, original .locs moved into
// the paint map; ptxas -lineinfo builds the same SASS from the painted PTX as from the original.
#include <gtest/gtest.h>

#include <set>

#include <fmt/format.h>

#include "argus/ptx/regions.h"
#include "test_util.h"

namespace argus::passes {
namespace {

using namespace testing;

constexpr const char* kSmall =
    ".version 8.0\n.target sm_90a\n.address_size 64\n"
    ".visible .entry k(.param .u64 k_param_0)\n{\n"
    "\t.reg .b32 %r<4>;\n"
    "\t.loc 1 10 3\n"
    "\tmov.u32 %r1, 1;\n"
    "\t// @argus begin outer\n"
    "\t.loc 1 11 3\n"
    "\tadd.s32 %r2, %r1, 2;\n"
    "\t// @argus begin inner\n"
    "\tmul.lo.s32 %r3, %r2, %r2;\n"
    "\t// @argus end inner\n"
    "\t// @argus end outer\n"
    "\t.loc 2 20 5\n"
    "\tret;\n}\n"
    "\t.file 1 \"k.cu\"\n"
    "\t.file 2 \"k.cuh\"\n";

TEST(PaintPtx, PaintsEveryInstructionAndRecordsWhatItReplaced) {
  auto module = ptx::parseModule(kSmall, "k.ptx");
  ASSERT_TRUE(module.has_value()) << module.error().text();
  auto result = applyTransforms(*module, {"paint_ptx"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();

  // The paint file takes the next free index and is declared before the kernel.
  const std::string printed = ptx::printModule(*module);
  const size_t file = printed.find(".file 3 \"argus-paint\"");
  ASSERT_NE(file, std::string::npos) << printed;
  EXPECT_LT(file, printed.find(".entry")) << printed;
  EXPECT_EQ(printed.find(".loc 1 "), std::string::npos) << printed;
  EXPECT_EQ(printed.find(".loc 2 "), std::string::npos) << printed;

  // Every instruction directly follows its own painted .loc.
  const ptx::Function& k = *module->findFunction("k");
  uint32_t expected = 1;
  for (size_t i = 0; i < k.body.size(); ++i) {
    if (k.body[i].kind != ptx::Statement::Kind::Instruction) continue;
    ASSERT_GT(i, 0u);
    EXPECT_EQ(k.body[i - 1].directive.name, ".loc");
    EXPECT_EQ(k.body[i - 1].directive.text, fmt::format("3 {} 1", expected));
    ++expected;
  }
  EXPECT_EQ(expected, 5u);

  const nlohmann::json& map = result->paintMap;
  EXPECT_EQ(map["format"], "argus_paint_map 1");
  EXPECT_EQ(map["file"], "argus-paint");
  EXPECT_EQ(map["fileIndex"], 3);
  ASSERT_EQ(map["lines"].size(), 4u);
  const auto& lines = map["lines"];
  for (size_t n = 0; n < lines.size(); ++n) {
    EXPECT_EQ(lines[n]["line"], n + 1);
    EXPECT_EQ(lines[n]["function"], "k");
  }
  EXPECT_EQ(lines[0]["opcode"], "mov.u32");
  EXPECT_EQ(lines[0]["regions"], nlohmann::json::array());
  EXPECT_EQ(lines[0]["source"], (nlohmann::json{{"file", "k.cu"}, {"line", 10}}));
  EXPECT_EQ(lines[1]["opcode"], "add.s32");
  EXPECT_EQ(lines[1]["regions"], (nlohmann::json{"outer"}));
  EXPECT_EQ(lines[1]["source"]["line"], 11);
  EXPECT_EQ(lines[2]["opcode"], "mul.lo.s32");
  EXPECT_EQ(lines[2]["regions"], (nlohmann::json{"outer/inner"}));
  EXPECT_EQ(lines[2]["source"]["line"], 11);
  EXPECT_EQ(lines[3]["opcode"], "ret");
  EXPECT_EQ(lines[3]["source"], (nlohmann::json{{"file", "k.cuh"}, {"line", 20}}));
  // Statement indices point into the body the pass received.
  auto original = ptx::parseModule(kSmall, "k.ptx");
  ASSERT_TRUE(original.has_value());
  const ptx::Function& before = *original->findFunction("k");
  for (const auto& line : lines) {
    const auto& s = before.body.at(line["statement"].get<size_t>());
    EXPECT_EQ(s.instruction.opcode, line["opcode"].get<std::string>());
  }

  EXPECT_EQ(result->statistics["paint_ptx"]["instructions"], 4);
  EXPECT_EQ(result->statistics["paint_ptx"]["functions"], 1);
  EXPECT_EQ(result->statistics["paint_ptx"]["locs_removed"], 3);

  // The printed module parses again, and painting it twice is an error.
  auto reparsed = ptx::parseModule(printed, "painted.ptx");
  ASSERT_TRUE(reparsed.has_value()) << reparsed.error().text();
  auto twice = applyTransforms(*reparsed, {"paint_ptx"}, {});
  ASSERT_FALSE(twice.has_value());
  EXPECT_NE(twice.error().message.find("already painted"), std::string::npos);
}

TEST(PaintPtx, WithoutFileTableTakesIndexOne) {
  auto module = ptx::parseModule(
      ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n",
      "k.ptx");
  ASSERT_TRUE(module.has_value());
  auto result = applyTransforms(*module, {"paint_ptx"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();
  EXPECT_EQ(result->paintMap["fileIndex"], 1);
  EXPECT_EQ(result->paintMap["lines"][0]["source"]["file"], "");
  EXPECT_NE(ptx::printModule(*module).find(".loc 1 1 1"), std::string::npos);
}

TEST(PaintPtx, UnbalancedMarkersFail) {
  auto module = ptx::parseModule(
      ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
      "\t// @argus begin a\n\tret;\n}\n",
      "k.ptx");
  ASSERT_TRUE(module.has_value());
  auto result = applyTransforms(*module, {"paint_ptx"}, {});
  ASSERT_FALSE(result.has_value());
  EXPECT_TRUE(result.error().message.starts_with("paint_ptx")) << result.error().message;
}

/// ptxas -lineinfo, SASS instruction text per function.
std::map<std::string, std::vector<std::string>> buildSass(const std::string& ptxText,
                                                          const std::string& target,
                                                          const fs::path& dir,
                                                          const std::string& stem,
                                                          std::string* error) {
  auto cubin = sass::assemblePtx(ptxText, target, dir, stem, /*lineInfo=*/true);
  if (!cubin) {
    *error = cubin.error().text();
    return {};
  }
  return sassInstructions(*cubin, error);
}

class PaintPtxExample : public ::testing::TestWithParam<std::string> {};

TEST_P(PaintPtxExample, OneUniqueLinePerInstructionAndSameSass) {
  ptx::Module module = loadModule(dataDir() / "ptx" / GetParam());
  ASSERT_FALSE(HasFailure());
  const ptx::Module original = module;
  const std::string originalText = ptx::printModule(module);
  auto result = applyTransforms(module, {"paint_ptx"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string painted = ptx::printModule(module);

  // Count instructions of the original; every one has a line, lines are 1..N in order.
  size_t instructions = 0;
  for (const ptx::Function* f : original.functions()) {
    for (const auto& s : f->body) instructions += s.kind == ptx::Statement::Kind::Instruction;
  }
  const auto& lines = result->paintMap["lines"];
  ASSERT_EQ(lines.size(), instructions);
  for (size_t n = 0; n < lines.size(); ++n) ASSERT_EQ(lines[n]["line"], n + 1);
  // Examples have regions and .locs; the map keeps both.
  size_t owned = 0;
  size_t withSource = 0;
  for (const auto& line : lines) {
    owned += !line["regions"].empty();
    withSource += line["source"]["line"].get<uint32_t>() > 0;
  }
  EXPECT_GT(owned, 0u);
  EXPECT_GT(withSource, instructions / 2);

  // No original .loc survives; the paint .file precedes the first .loc.
  auto reparsed = ptx::parseModule(painted, "painted.ptx");
  ASSERT_TRUE(reparsed.has_value()) << reparsed.error().text();
  const std::string fileIndex = std::to_string(result->paintMap["fileIndex"].get<uint32_t>());
  for (const ptx::Function* f : reparsed->functions()) {
    for (const auto& s : f->body) {
      if (s.kind == ptx::Statement::Kind::Directive && s.directive.name == ".loc") {
        ASSERT_TRUE(s.directive.text.starts_with(fileIndex + " ")) << s.directive.text;
      }
    }
  }
  EXPECT_LT(painted.find(".file " + fileIndex + " \"argus-paint\""), painted.find(".loc"));

  auto dir = makeTempDir("argus-paint");
  ASSERT_TRUE(dir.has_value());
  std::string error;
  auto sassOriginal = buildSass(originalText, module.target(), *dir, "original", &error);
  if (!error.empty() && error.find("ptxas failed") == std::string::npos) {
    fs::remove_all(*dir);
    GTEST_SKIP() << error;
  }
  ASSERT_TRUE(error.empty()) << error;
  auto sassPainted = buildSass(painted, module.target(), *dir, "painted", &error);
  fs::remove_all(*dir);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_FALSE(sassOriginal.empty());
  EXPECT_EQ(sassOriginal, sassPainted);
}

INSTANTIATE_TEST_SUITE_P(Examples, PaintPtxExample, ::testing::ValuesIn(exampleFixtures()));

}  // namespace
}  // namespace argus::passes
