// readPcMap on painted builds of the examples: every SASS instruction with a painted line maps to
// a PTX instruction, painted and unpainted builds have the same SASS, region owners come through.
#include "argus/sass/pcmap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "argus/passes/transforms.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/support/process.h"

namespace argus::sass {
namespace {

namespace fs = std::filesystem;

const nlohmann::json kPaintMap = {
    {"format", "argus_paint_map 1"},
    {"file", "argus-paint"},
    {"fileIndex", 3},
    {"lines",
     {
         {{"line", 1},
          {"function", "k"},
          {"statement", 1},
          {"opcode", "mov.u32"},
          {"regions", nlohmann::json::array()},
          {"source", {{"file", "k.cu"}, {"line", 10}}}},
         {{"line", 2},
          {"function", "k"},
          {"statement", 4},
          {"opcode", "add.s32"},
          {"regions", {"outer"}},
          {"source", {{"file", "k.cu"}, {"line", 11}}}},
     }},
};

constexpr const char* kDisassembly =
    "\t.target\tsm_90a\n"
    "//--------------------- .text.k            --------------------------\n"
    "\t.section\t.text.k,\"ax\",@progbits\n"
    "k:\n"
    ".text.k:\n"
    "\t//## File \"argus-paint\", line 1\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
    "        /*0010*/                   S2R R3, SR_TID.X ;\n"
    "\t//## File \"argus-paint\", line 2\n"
    "        /*0020*/               @P0 BRA `(.L_x_1) ;\n"
    ".L_x_1:\n"
    "\t//## File \"other.cu\", line 7\n"
    "        /*0030*/                   EXIT ;\n";

TEST(PcMap, ParsesAnnotatedDisassembly) {
  auto entries = parsePcMap(kDisassembly, kPaintMap);
  ASSERT_TRUE(entries.has_value()) << entries.error().text();
  ASSERT_EQ(entries->size(), 4u);
  const auto& e = *entries;
  EXPECT_EQ(e[0].function, "k");
  EXPECT_EQ(e[0].pc, 0u);
  EXPECT_EQ(e[0].opcode, "LDC");
  EXPECT_EQ(e[0].line, 1u);
  EXPECT_EQ(e[0].ptxOpcode, "mov.u32");
  EXPECT_EQ(e[0].sourceLine, 10u);
  EXPECT_EQ(e[1].pc, 0x10u);
  EXPECT_EQ(e[1].line, 1u);  // the row holds until the next annotation
  EXPECT_EQ(e[2].opcode, "BRA");
  EXPECT_EQ(e[2].instruction, "@P0 BRA `(.L_x_1)");
  EXPECT_EQ(e[2].line, 2u);
  EXPECT_EQ(e[2].ptxStatement, 4u);
  EXPECT_EQ(e[2].regions, (std::vector<std::string>{"outer"}));
  EXPECT_EQ(e[3].opcode, "EXIT");
  EXPECT_FALSE(e[3].line.has_value());
  EXPECT_TRUE(e[3].regions.empty());

  const nlohmann::json j = toJson(e[2]);
  EXPECT_EQ(j["pc"], 0x20);
  EXPECT_EQ(j["ptx_opcode"], "add.s32");
  EXPECT_EQ(j["source"]["line"], 11);
  EXPECT_TRUE(toJson(e[3])["line"].is_null());
}

TEST(PcMap, RejectsLinesMissingFromThePaintMapAndBadMaps) {
  std::string text = kDisassembly;
  text.replace(text.find("line 2"), 6, "line 9");
  auto entries = parsePcMap(text, kPaintMap);
  ASSERT_FALSE(entries.has_value());
  EXPECT_NE(entries.error().message.find("not in the paint map"), std::string::npos);
  EXPECT_FALSE(parsePcMap(kDisassembly, nlohmann::json::object()).has_value());
}

// --- the examples, built with ptxas -lineinfo ---

fs::path dataDir() {
  return fs::path(ARGUS_TEST_DATA_DIR);
}

std::vector<std::string> exampleFixtures() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dataDir() / "ptx", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("examples_") && name.ends_with(".ptx")) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

class PcMapExample : public ::testing::TestWithParam<std::string> {};

TEST_P(PcMapExample, MapsEverySassInstructionOfThePaintedBuild) {
  auto text = readFile(dataDir() / "ptx" / GetParam());
  ASSERT_TRUE(text.has_value()) << text.error().text();
  auto parsed = ptx::parseModule(*text, GetParam());
  ASSERT_TRUE(parsed.has_value()) << parsed.error().text();
  const ptx::Module original = *parsed;
  ptx::Module module = *parsed;
  auto painted = passes::applyTransforms(module, {"paint_ptx"}, {});
  ASSERT_TRUE(painted.has_value()) << painted.error().text();

  auto dir = makeTempDir("argus-pcmap");
  ASSERT_TRUE(dir.has_value());
  auto reference = assemblePtx(ptx::printModule(original), module.target(), *dir, "reference",
                               /*lineInfo=*/true);
  if (!reference && reference.error().message.find("ptxas failed") == std::string::npos) {
    fs::remove_all(*dir);
    GTEST_SKIP() << reference.error().text();
  }
  ASSERT_TRUE(reference.has_value()) << reference.error().text();
  auto paintedCubin = assemblePtx(ptx::printModule(module), module.target(), *dir, "painted",
                                  /*lineInfo=*/true);
  ASSERT_TRUE(paintedCubin.has_value()) << paintedCubin.error().text();
  const fs::path cubin = *paintedCubin;

  auto entries = readPcMap(cubin, painted->paintMap);
  if (!entries && !findTool("nvdisasm")) {
    fs::remove_all(*dir);
    GTEST_SKIP() << entries.error().text();
  }
  ASSERT_TRUE(entries.has_value()) << entries.error().text();

  // Same SASS in the painted and the reference build, by cuobjdump and by sameSass.
  auto referenceSass = cuobjdumpSass(*reference);
  auto paintedSass = cuobjdumpSass(cubin);
  auto same = sameSass(*reference, cubin);
  fs::remove_all(*dir);
  ASSERT_TRUE(referenceSass.has_value()) << referenceSass.error().text();
  ASSERT_TRUE(paintedSass.has_value()) << paintedSass.error().text();
  auto& sassPainted = *paintedSass;
  ASSERT_FALSE(referenceSass->empty());
  EXPECT_EQ(*referenceSass, sassPainted);
  EXPECT_TRUE(same.has_value()) << same.error().text();

  // One entry per SASS instruction, in order, with cuobjdump's opcodes.
  std::map<std::string, std::vector<const PcEntry*>> byFunction;
  for (const PcEntry& e : *entries) byFunction[e.function].push_back(&e);
  ASSERT_EQ(byFunction.size(), sassPainted.size());
  for (const auto& [function, list] : byFunction) {
    ASSERT_EQ(list.size(), sassPainted[function].size()) << function;
    for (size_t i = 0; i < list.size(); ++i) {
      EXPECT_EQ(list[i]->pc, i * 16) << function;
      std::istringstream words(sassPainted[function][i]);
      std::string opcode;
      words >> opcode;
      if (opcode.starts_with('@')) words >> opcode;
      EXPECT_EQ(list[i]->opcode, opcode) << function << " #" << i;
    }
  }

  // Every painted SASS instruction names a PTX instruction of the original module.
  size_t attributed = 0;
  size_t inRegions = 0;
  for (const PcEntry& e : *entries) {
    if (!e.line) continue;
    ++attributed;
    inRegions += !e.regions.empty();
    const ptx::Function* f = original.findFunction(e.ptxFunction);
    ASSERT_NE(f, nullptr) << e.ptxFunction;
    ASSERT_TRUE(e.ptxStatement.has_value());
    ASSERT_LT(*e.ptxStatement, f->body.size());
    const ptx::Statement& s = f->body[*e.ptxStatement];
    ASSERT_EQ(s.kind, ptx::Statement::Kind::Instruction) << e.function << " " << e.pc;
    EXPECT_EQ(s.instruction.opcode, e.ptxOpcode);
    EXPECT_FALSE(e.sourceFile.empty()) << e.function << " " << e.pc;
  }
  // Only padding after the final EXIT/BRA (NOPs) and the like may lack a line.
  for (const PcEntry& e : *entries) {
    if (!e.line) {
      EXPECT_TRUE(e.opcode == "NOP" || e.opcode == "BRA") << e.instruction;
    }
  }
  EXPECT_GT(attributed, entries->size() / 2);
  EXPECT_GT(inRegions, 0u);

  if (GetParam() == "examples_tma_gemm.ptx") {
    size_t hgmmaInMma = 0;
    for (const PcEntry& e : *entries) {
      if (e.opcode.starts_with("HGMMA") &&
          std::find(e.regions.begin(), e.regions.end(), "mainloop/mma") != e.regions.end()) {
        ++hgmmaInMma;
      }
    }
    EXPECT_GT(hgmmaInMma, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, PcMapExample, ::testing::ValuesIn(exampleFixtures()));

}  // namespace
}  // namespace argus::sass
