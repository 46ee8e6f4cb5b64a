// Helpers shared by the PTX unit tests: wrap a body into a minimal sm_90a module and parse it.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "argus/ptx/parser.h"
#include "argus/ptx/regions.h"

namespace argus::ptx::testing {

/// A module with one kernel `k(.param .u32 k_param_0)` whose body is `body`, plus `.file 1`.
inline std::string kernelPtx(const std::string& body) {
  return ".version 8.8\n.target sm_90a\n.address_size 64\n\t.file\t1 \"/src/k.cu\"\n\n"
         ".visible .entry k(\n\t.param .u32 k_param_0\n)\n{\n"
         "\t.reg .pred \t%p<4>;\n\t.reg .b32 \t%r<10>;\n" +
         body + "}\n";
}

/// Parses PTX text that the test expects to be valid.
inline Module parseOrDie(const std::string& text) {
  auto module = parseModule(text, "test.ptx");
  EXPECT_TRUE(module.has_value()) << (module ? "" : module.error().text());
  return module ? std::move(*module) : Module{};
}

/// The analysis of function `name` (its FunctionRegions), a test failure when there is none.
inline const FunctionRegions& functionRegions(const std::vector<FunctionRegions>& all,
                                              const std::string& name) {
  for (const auto& f : all)
    if (f.function == name) return f;
  ADD_FAILURE() << "no function " << name;
  return all.front();
}

/// The paths of a function's regions, in the analysis's order.
inline std::vector<std::string> regionPaths(const FunctionRegions& f) {
  std::vector<std::string> out;
  for (const auto& r : f.regions) out.push_back(r.path);
  return out;
}

}  // namespace argus::ptx::testing
