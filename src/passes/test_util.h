// Helpers shared by the pass tests: fixtures, ptxas and cuobjdump runs.
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
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
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

/// Assembles PTX text; returns the cubin path or an error text (empty optional + message).
struct Assembled {
  bool ok = false;
  std::string message;
  fs::path cubin;
};

inline Assembled assemble(const std::string& ptxText, const std::string& target,
                          const fs::path& dir, const std::string& stem) {
  auto ptxas = findTool("ptxas");
  if (!ptxas) return {false, ptxas.error().text(), {}};
  const fs::path ptxPath = dir / (stem + ".ptx");
  const fs::path cubin = dir / (stem + ".cubin");
  if (auto w = writeFile(ptxPath, ptxText); !w) return {false, w.error().text(), {}};
  ProcessOptions options;
  options.timeout = std::chrono::seconds(300);
  auto run = runProcess(
      {ptxas->string(), "-arch=" + target, "-o", cubin.string(), ptxPath.string()}, options);
  if (!run) return {false, run.error().text(), {}};
  if (run->exitCode != 0) return {false, "ptxas failed:\n" + run->err, {}};
  return {true, "", cubin};
}

/// Per function: the SASS instruction lines (`/*0040*/ IMAD ... ;`, encodings dropped).
inline std::map<std::string, std::vector<std::string>> sassInstructions(const fs::path& cubin,
                                                                        std::string* error) {
  std::map<std::string, std::vector<std::string>> out;
  auto cuobjdump = findTool("cuobjdump");
  if (!cuobjdump) {
    *error = cuobjdump.error().text();
    return out;
  }
  auto run = runProcess({cuobjdump->string(), "-sass", cubin.string()});
  if (!run || run->exitCode != 0) {
    *error = run ? run->err : run.error().text();
    return out;
  }
  std::istringstream in(run->out);
  std::string line;
  std::string current;
  while (std::getline(in, line)) {
    if (auto at = line.find("Function : "); at != std::string::npos) {
      current = line.substr(at + 11);
      continue;
    }
    auto open = line.find("/*");
    auto close = line.find("*/", open == std::string::npos ? 0 : open);
    if (current.empty() || open == std::string::npos || close == std::string::npos) continue;
    std::string rest = line.substr(close + 2);
    auto semi = rest.find(';');
    if (semi == std::string::npos) continue;
    rest = rest.substr(0, semi);
    rest.erase(0, rest.find_first_not_of(' '));
    out[current].push_back(rest);
  }
  return out;
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
