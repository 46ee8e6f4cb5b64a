// For every PTX fixture: parse, print, and check that (1) printing is a fixed point of
// parse+print and (2) ptxas builds the printed text into the same machine code as the original.
//
// ptxas output is byte-identical for whitespace/comment-only changes *unless* the PTX carries
// debug information (`.file`/`.loc` with debug sections): then ptxas embeds the PTX text itself
// in the cubin (.nv_debug_ptx_txt), so the files differ. The test therefore compares whole
// cubins first and, when they differ, the SASS of each function as `cuobjdump -sass` prints it
// (which includes every instruction's encoding).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "argus/ptx/derive.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/support/process.h"

namespace argus::ptx {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> fixtureNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(ARGUS_TEST_DATA_DIR) / "ptx", ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".ptx") {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// Splits `cuobjdump -sass` output into function name -> its SASS listing.
std::map<std::string, std::string> sassByFunction(const std::string& sass) {
  std::map<std::string, std::string> functions;
  std::string current = "<header>";
  std::size_t pos = 0;
  while (pos < sass.size()) {
    std::size_t end = sass.find('\n', pos);
    if (end == std::string::npos) end = sass.size();
    std::string_view line(sass.data() + pos, end - pos);
    if (auto at = line.find("Function : "); at != std::string_view::npos) {
      current = std::string(line.substr(at + 11));
    }
    functions[current].append(line).append("\n");
    pos = end + 1;
  }
  return functions;
}

std::string firstDifference(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  std::size_t lineStart = a.rfind('\n', i == 0 ? 0 : i - 1);
  lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
  auto lineOf = [&](const std::string& s) {
    std::size_t e = s.find('\n', lineStart);
    return lineStart < s.size() ? s.substr(lineStart, e - lineStart) : std::string("<end>");
  };
  return "original: " + lineOf(a) + "\n  printed:  " + lineOf(b);
}

/// ptxas on the original fixture and on `printed` make the same machine code: identical cubins,
/// or (PTX with debug information) the same SASS of every function.
void expectSameMachineCode(const fs::path& original, const std::string& printed,
                           const std::string& target) {
  ASSERT_FALSE(target.empty()) << "fixture has no .target directive";
  auto ptxas = findTool("ptxas");
  if (!ptxas) GTEST_SKIP() << ptxas.error().text();
  auto dir = makeTempDir("argus-ptx-roundtrip");
  ASSERT_TRUE(dir.has_value()) << dir.error().text();
  const fs::path printedPath = *dir / "printed.ptx";
  ASSERT_TRUE(writeFile(printedPath, printed).has_value());

  auto assemble = [&](const fs::path& ptx, const std::string& cubinName) -> std::string {
    const fs::path cubin = *dir / cubinName;
    auto run = runProcess({ptxas->string(), "-arch=" + target, "-o", cubin.string(), ptx.string()},
                          {.workingDirectory = std::nullopt, .timeout = std::chrono::seconds(300)});
    EXPECT_TRUE(run.has_value()) << (run ? "" : run.error().text());
    if (!run) return {};
    EXPECT_EQ(run->exitCode, 0) << "ptxas failed on " << ptx << ":\n" << run->err;
    return cubin.string();
  };
  const std::string cubinA = assemble(original, "original.cubin");
  const std::string cubinB = assemble(printedPath, "printed.cubin");
  if (::testing::Test::HasFailure()) {
    fs::remove_all(*dir);
    return;
  }
  auto bytesA = readFile(cubinA);
  auto bytesB = readFile(cubinB);
  ASSERT_TRUE(bytesA && bytesB);
  if (*bytesA == *bytesB) {
    fs::remove_all(*dir);
    return;  // byte-identical cubins
  }

  auto cuobjdump = findTool("cuobjdump");
  if (!cuobjdump) {
    fs::remove_all(*dir);
    GTEST_SKIP() << "cubins differ in bytes (expected when the PTX has debug info); comparing "
                    "SASS needs cuobjdump: "
                 << cuobjdump.error().text();
  }
  auto sass = [&](const std::string& cubin) {
    auto run = runProcess({cuobjdump->string(), "-sass", cubin});
    EXPECT_TRUE(run && run->exitCode == 0) << (run ? run->err : run.error().text());
    return run ? sassByFunction(run->out) : std::map<std::string, std::string>{};
  };
  const auto sassA = sass(cubinA);
  const auto sassB = sass(cubinB);
  fs::remove_all(*dir);
  ASSERT_GT(sassA.size(), 1u) << "cuobjdump printed no functions";
  for (const auto& [name, code] : sassA) {
    auto it = sassB.find(name);
    if (it == sassB.end()) {
      ADD_FAILURE() << "function " << name << " is missing from the printed PTX's cubin";
    } else if (it->second != code) {
      ADD_FAILURE() << "SASS of function " << name << " differs\n  "
                    << firstDifference(code, it->second);
    }
  }
  for (const auto& [name, code] : sassB) {
    if (!sassA.contains(name))
      ADD_FAILURE() << "function " << name << " appears only after printing";
  }
}

TEST(PtxRoundTripCorpus, HasFixtures) {
  EXPECT_FALSE(fixtureNames().empty())
      << "no *.ptx files in " << ARGUS_TEST_DATA_DIR << "/ptx; the round-trip test needs fixtures";
}

class PtxRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(PtxRoundTrip, PrintsAFixedPointAndTheSameMachineCode) {
  const fs::path original = fs::path(ARGUS_TEST_DATA_DIR) / "ptx" / GetParam();
  auto text = readFile(original);
  ASSERT_TRUE(text.has_value()) << text.error().text();
  auto module = parseModule(*text, GetParam());
  ASSERT_TRUE(module.has_value()) << module.error().text();
  const std::string printed = printModule(*module);
  auto reparsed = parseModule(printed, GetParam() + " (printed)");
  ASSERT_TRUE(reparsed.has_value()) << reparsed.error().text();
  ASSERT_EQ(printModule(*reparsed), printed) << "print(parse(print(parse(x)))) != print(parse(x))";
  ASSERT_EQ(reparsed->functions().size(), module->functions().size());

  expectSameMachineCode(original, printed, module->target());
}

TEST_P(PtxRoundTrip, DerivedRegionsLeaveTheMachineCodeAsItWas) {
  // Every loop and op kind derived (argus/ptx/derive.h): markers are comments, and the
  // trampolines some edges need are branches ptxas threads away.
  const fs::path original = fs::path(ARGUS_TEST_DATA_DIR) / "ptx" / GetParam();
  auto text = readFile(original);
  ASSERT_TRUE(text.has_value()) << text.error().text();
  auto module = parseModule(*text, GetParam());
  ASSERT_TRUE(module.has_value()) << module.error().text();
  auto defs = definitionsFromList("loops,ops");
  ASSERT_TRUE(defs.has_value());
  auto placed = deriveRegions(*module, *defs);
  ASSERT_TRUE(placed.has_value()) << (placed ? "" : placed.error().text());
  expectSameMachineCode(original, printModule(*module), module->target());
}

std::string testName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.size() - 4);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PtxRoundTrip, ::testing::ValuesIn(fixtureNames()), testName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PtxRoundTrip);

}  // namespace
}  // namespace argus::ptx
