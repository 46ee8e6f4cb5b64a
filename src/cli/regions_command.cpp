// `argus regions TARGET`: the region tree of every kernel in a CUDA source or PTX file.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/program/program.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/regions.h"
#include "argus/support/process.h"
#include "argus/ttgir/regions.h"
#include "commands.h"

namespace argus::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

json positionJson(const ptx::MarkerSite& site) {
  json j{{"ptx_line", site.ptx.line}};
  if (!site.source.file.empty())
    j["source"] = {{"file", site.source.file}, {"line", site.source.line}};
  if (!site.iteration.empty()) j["iteration"] = site.iteration;
  if (!site.role.empty()) j["role"] = site.role;
  return j;
}

json regionsJson(const std::vector<ptx::FunctionRegions>& all, const std::string& source,
                 std::string_view representation) {
  json kernels = json::array();
  for (const auto& fn : all) {
    if (!fn.isEntry && fn.regions.empty()) continue;
    json regions = json::array();
    for (const auto& r : fn.regions) {
      json begins = json::array(), ends = json::array(), children = json::array();
      for (const auto& s : r.begins) begins.push_back(positionJson(s));
      for (const auto& s : r.ends) ends.push_back(positionJson(s));
      for (uint32_t c : r.children) children.push_back(fn.regions[c].id);
      regions.push_back({{"id", r.id},
                         {"name", r.name},
                         {"path", r.path},
                         {"parent", r.parent ? json(fn.regions[*r.parent].id) : json(nullptr)},
                         {"children", children},
                         {"ptx_instructions", r.instructions},
                         {"begins", begins},
                         {"ends", ends}});
    }
    json warnings = json::array();
    for (const auto& w : fn.warnings)
      warnings.push_back({{"ptx_line", w.ptx.line}, {"message", w.message}});
    kernels.push_back({{"name", fn.function},
                       {"demangled", program::demangle(fn.function)},
                       {"entry", fn.isEntry},
                       {"regions", regions},
                       {"warnings", warnings}});
  }
  // For TTGIR, `ptx_line` and `ptx_instructions` hold TTGIR lines and operations.
  return json{{"schema", "argus.regions/1"},
              {"source", source},
              {"representation", representation},
              {"kernels", kernels}};
}

void printRegionsText(const std::vector<ptx::FunctionRegions>& all,
                      std::string_view representation) {
  bool any = false;
  for (const auto& fn : all) {
    if (!fn.isEntry && fn.regions.empty()) continue;
    any = true;
    fmt::print("{} {}\n", fn.isEntry ? "kernel" : "function", program::demangle(fn.function));
    if (fn.regions.empty()) fmt::print("  (no regions)\n");
    for (const auto& r : fn.regions) {
      size_t depth = static_cast<size_t>(std::count(r.path.begin(), r.path.end(), '/'));
      std::string where;
      if (!r.begins.empty()) {
        const auto& b = r.begins.front();
        where =
            b.source.file.empty()
                ? fmt::format("{}:{}", representation, b.ptx.line)
                : fmt::format("{}:{}", fs::path(b.source.file).filename().string(), b.source.line);
      }
      std::string coords;
      for (const auto& b : r.begins) {
        if (!b.iteration.empty() && coords.find("iter") == std::string::npos) coords += " iter";
        if (!b.role.empty() && coords.find("role=" + b.role) == std::string::npos)
          coords += " role=" + b.role;
      }
      std::string label = std::string(2 + 2 * depth, ' ') + r.name;
      fmt::print("{:<36} {}  {:>6} {} {}  begin {}{}\n", label, r.id, r.instructions,
                 representation, representation == "ptx" ? "instr" : "ops  ", where, coords);
    }
    for (const auto& w : fn.warnings)
      fmt::print(stderr, "argus: warning: {} ptx line {}: {}\n", fn.function, w.ptx.line,
                 w.message);
  }
  if (!any) fmt::print("no kernels found\n");
}

struct RegionsOptions {
  std::string target;
  std::string arch = "sm_90a";
  std::vector<std::string> nvccFlags;
  bool json = false;
};

int runRegions(const RegionsOptions& o) {
  const std::string ext = fs::path(o.target).extension().string();
  if (ext == ".ttgir" || ext == ".ttir") {
    auto text = readFile(o.target);
    if (!text) return reportError(text.error());
    if (!ttgir::looksLikeTtgir(*text)) {
      return reportError(
          Error{"regions", fmt::format("`{}` is not a Triton MLIR module (no "
                                       "`module` with a `tt.func`); dump one with "
                                       "TRITON_KERNEL_DUMP=1 or kernel.asm[\"ttgir\"]",
                                       o.target)});
    }
    auto analysis = ttgir::analyzeRegions(*text, fs::path(o.target).filename().string());
    if (!analysis) return reportError(analysis.error());
    if (o.json)
      std::cout << regionsJson(*analysis, o.target, "ttgir").dump(2) << "\n";
    else
      printRegionsText(*analysis, "ttgir");
    return 0;
  }
  auto source = program::loadTargetPtx(o.target, o.arch, o.nvccFlags);
  if (!source) return reportError(source.error());
  auto module = ptx::parseModule(source->text, source->displayName);
  if (!module) return reportError(module.error());
  auto analysis = ptx::analyzeRegions(*module);
  if (!analysis) return reportError(analysis.error());
  if (o.json)
    std::cout << regionsJson(*analysis, o.target, "ptx").dump(2) << "\n";
  else
    printRegionsText(*analysis, "ptx");
  return 0;
}

}  // namespace

std::vector<Command> addRegionsCommands(CLI::App& app) {
  auto o = std::make_shared<RegionsOptions>();
  auto* verb = app.add_subcommand(
      "regions",
      "Print each kernel's region tree of a program spec, .cu, .ptx or Triton .ttgir/.ttir\n"
      "(Triton regions are Proton scopes: proton.record start/end)");
  verb->add_option("TARGET", o->target,
                   "Program spec (argus.yaml), CUDA source (.cu), PTX (.ptx) or Triton TTGIR/TTIR "
                   "(.ttgir, .ttir)")
      ->required();
  verb->add_option("--arch", o->arch, "GPU architecture for nvcc")->capture_default_str();
  verb->add_option("--nvcc-flag", o->nvccFlags,
                   "Extra nvcc flag for .cu and spec targets (repeatable)")
      ->allow_extra_args(false);
  verb->add_flag("--json", o->json, "Machine-readable output (schema argus.regions/1)");
  return {Command{verb, [o] { return runRegions(*o); }}};
}

}  // namespace argus::cli
