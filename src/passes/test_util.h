// Helpers shared by the pass tests: fixtures, and ptxas/cuobjdump runs through argus::sass.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "argus/passes/transforms.h"
#include "argus/ptx/derive.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/sass/pcmap.h"
#include "argus/support/process.h"

namespace argus::passes::testing {

namespace fs = std::filesystem;

inline fs::path dataDir() {
  return fs::path(ARGUS_TEST_DATA_DIR);
}

/// tests/data/ptx/examples_*.ptx, sorted.
inline std::vector<std::string> exampleFixtures() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dataDir() / "ptx", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("examples_") && name.ends_with(".ptx")) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

inline ptx::Module loadModule(const fs::path& path) {
  auto text = readFile(path);
  EXPECT_TRUE(text.has_value()) << (text ? "" : text.error().text());
  if (!text) return {};
  auto module = ptx::parseModule(*text, path.filename().string());
  EXPECT_TRUE(module.has_value()) << (module ? "" : module.error().text());
  return module ? *module : ptx::Module{};
}

/// A tests/data/ptx fixture with regions derived from a `--derive` list (failures are test
/// failures: check HasFailure()).
inline ptx::Module loadDerived(const std::string& fixture, const std::string& derive) {
  ptx::Module module = loadModule(dataDir() / "ptx" / fixture);
  auto defs = ptx::definitionsFromList(derive);
  EXPECT_TRUE(defs.has_value()) << (defs ? "" : defs.error().text());
  if (!defs) return module;
  auto placed = ptx::deriveRegions(module, *defs);
  EXPECT_TRUE(placed.has_value()) << (placed ? "" : placed.error().text());
  return module;
}

/// Assembles PTX text; returns the cubin path or an error text (empty optional + message).
struct Assembled {
  bool ok = false;
  std::string message;
  fs::path cubin;
};

inline Assembled assemble(const std::string& ptxText, const std::string& target,
                          const fs::path& dir, const std::string& stem) {
  auto cubin = sass::assemblePtx(ptxText, target, dir, stem, /*lineInfo=*/false);
  if (!cubin) return {false, cubin.error().text(), {}};
  return {true, "", *cubin};
}

/// Per function: the SASS instruction texts (sass::cuobjdumpSass); empty + `error` on failure.
inline std::map<std::string, std::vector<std::string>> sassInstructions(const fs::path& cubin,
                                                                        std::string* error) {
  auto sass = sass::cuobjdumpSass(cubin);
  if (!sass) {
    *error = sass.error().text();
    return {};
  }
  return *sass;
}

/// The opcode (with modifiers) of a SASS line, without predicate guard and operands.
inline std::string sassOpcode(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  in >> word;
  if (word.starts_with('@')) in >> word;
  return word;
}

}  // namespace argus::passes::testing
