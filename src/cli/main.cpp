// The `argus` command line: one subcommand per verb of DESIGN.md's interface.
#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "argus/ptx/cfg.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/ptx/regions.h"
#include "argus/support/process.h"

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

constexpr int kExitError = 1;

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && text ? std::string(text.get()) : name;
}

/// PTX text of a TARGET: a .ptx file as is, a .cu file through nvcc with Argus's include
/// directory and line info (so messages can name source lines).
struct PtxSource {
  std::string text;
  std::string displayName;  ///< What messages call the PTX.
};

argus::Result<PtxSource> loadTarget(const std::string& target, const std::string& arch,
                                    const std::vector<std::string>& nvccFlags) {
  fs::path path(target);
  std::error_code ec;
  if (!fs::exists(path, ec)) return argus::fail("cli", fmt::format("`{}` does not exist", target));
  const std::string ext = path.extension().string();
  if (ext == ".ptx") {
    auto text = argus::readFile(path);
    if (!text) return std::unexpected(text.error());
    return PtxSource{std::move(*text), target};
  }
  if (ext == ".cu") {
    auto nvcc = argus::findTool("nvcc");
    if (!nvcc) return std::unexpected(nvcc.error());
    auto dir = argus::makeTempDir("argus-nvcc");
    if (!dir) return std::unexpected(dir.error());
    fs::path out = *dir / (path.stem().string() + ".ptx");
    std::vector<std::string> argv{nvcc->string(), "-ptx", "-lineinfo", "-arch=" + arch,
                                  "-I" ARGUS_INCLUDE_DIR};
    argv.insert(argv.end(), nvccFlags.begin(), nvccFlags.end());
    argv.insert(argv.end(), {"-o", out.string(), path.string()});
    auto run = argus::runProcess(argv);
    std::string text;
    if (run && run->exitCode == 0) {
      auto read = argus::readFile(out);
      if (!read) return std::unexpected(read.error());
      text = std::move(*read);
    }
    fs::remove_all(*dir, ec);
    if (!run) return std::unexpected(run.error());
    if (run->exitCode != 0)
      return argus::fail("nvcc", fmt::format("compiling `{}` to PTX failed (exit {}):\n{}", target,
                                             run->exitCode, run->err));
    return PtxSource{std::move(text), out.filename().string()};
  }
  return argus::fail(
      "cli", fmt::format("`{}`: TARGET must be a CUDA source (.cu) or PTX (.ptx) file", target));
}

int report(const argus::Error& error) {
  std::cerr << "argus: " << error.text() << "\n";
  return kExitError;
}

json positionJson(const argus::ptx::MarkerSite& site) {
  json j{{"ptx_line", site.ptx.line}};
  if (!site.source.file.empty())
    j["source"] = {{"file", site.source.file}, {"line", site.source.line}};
  if (!site.iteration.empty()) j["iteration"] = site.iteration;
  if (!site.role.empty()) j["role"] = site.role;
  return j;
}

json regionsJson(const std::vector<argus::ptx::FunctionRegions>& all, const std::string& source) {
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
                       {"demangled", demangle(fn.function)},
                       {"entry", fn.isEntry},
                       {"regions", regions},
                       {"warnings", warnings}});
  }
  return json{{"schema", "argus.regions/1"}, {"source", source}, {"kernels", kernels}};
}

void printRegionsText(const std::vector<argus::ptx::FunctionRegions>& all) {
  bool any = false;
  for (const auto& fn : all) {
    if (!fn.isEntry && fn.regions.empty()) continue;
    any = true;
    fmt::print("{} {}\n", fn.isEntry ? "kernel" : "function", demangle(fn.function));
    if (fn.regions.empty()) fmt::print("  (no regions)\n");
    for (const auto& r : fn.regions) {
      size_t depth = static_cast<size_t>(std::count(r.path.begin(), r.path.end(), '/'));
      std::string where;
      if (!r.begins.empty()) {
        const auto& b = r.begins.front();
        where =
            b.source.file.empty()
                ? fmt::format("ptx:{}", b.ptx.line)
                : fmt::format("{}:{}", fs::path(b.source.file).filename().string(), b.source.line);
      }
      std::string coords;
      for (const auto& b : r.begins) {
        if (!b.iteration.empty() && coords.find("iter") == std::string::npos) coords += " iter";
        if (!b.role.empty() && coords.find("role=" + b.role) == std::string::npos)
          coords += " role=" + b.role;
      }
      std::string label = std::string(2 + 2 * depth, ' ') + r.name;
      fmt::print("{:<36} {}  {:>6} ptx instr  begin {}{}\n", label, r.id, r.instructions, where,
                 coords);
    }
    for (const auto& w : fn.warnings)
      fmt::print(stderr, "argus: warning: {} ptx line {}: {}\n", fn.function, w.ptx.line,
                 w.message);
  }
  if (!any) fmt::print("no kernels found\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Argus measures GPU kernels around semantic regions marked with ARGUS_REGION_* in\n"
      "CUDA C++ (include/argus/region.cuh). Every verb takes --json.\n\n"
      "Examples:\n"
      "  argus regions examples/nested_regions/kernel.cu     region tree of each kernel\n"
      "  argus ptx print kernel.ptx -o roundtrip.ptx          parse and print PTX back\n",
      "argus"};
  app.set_version_flag("--version", std::string("argus ") + ARGUS_VERSION);
  app.require_subcommand(1);

  // argus regions TARGET
  auto* regions = app.add_subcommand("regions", "Print each kernel's region tree of a .cu or .ptx");
  std::string regionsTarget, arch = "sm_90a";
  std::vector<std::string> nvccFlags;
  bool regionsJsonOut = false;
  regions->add_option("TARGET", regionsTarget, "CUDA source (.cu; compiled with nvcc -ptx) or PTX")
      ->required();
  regions->add_option("--arch", arch, "GPU architecture for nvcc")->capture_default_str();
  regions->add_option("--nvcc-flag", nvccFlags, "Extra nvcc flag for .cu targets (repeatable)")
      ->allow_extra_args(false);
  regions->add_flag("--json", regionsJsonOut, "Machine-readable output (schema argus.regions/1)");

  // argus ptx print FILE / argus ptx cfg FILE
  auto* ptx = app.add_subcommand("ptx", "PTX front-end tools");
  ptx->require_subcommand(1);
  auto* print = ptx->add_subcommand("print", "Parse PTX and print it back (round trip)");
  std::string printFile, printOut;
  bool printJson = false;
  print->add_option("FILE", printFile, "PTX file")->required()->check(CLI::ExistingFile);
  print->add_option("-o,--output", printOut, "Write the printed PTX here instead of stdout");
  print->add_flag("--json", printJson, "Print a JSON summary of the parsed module instead");
  auto* cfg = ptx->add_subcommand("cfg", "Print a function's control-flow graph as Graphviz DOT");
  std::string cfgFile, cfgFunction;
  bool cfgJson = false;
  cfg->add_option("FILE", cfgFile, "PTX file")->required()->check(CLI::ExistingFile);
  cfg->add_option("--function", cfgFunction, "Function name (default: every function)");
  cfg->add_flag("--json", cfgJson, "Blocks and edges as JSON instead of DOT");

  CLI11_PARSE(app, argc, argv);

  if (regions->parsed()) {
    auto source = loadTarget(regionsTarget, arch, nvccFlags);
    if (!source) return report(source.error());
    auto module = argus::ptx::parseModule(source->text, source->displayName);
    if (!module) return report(module.error());
    auto analysis = argus::ptx::analyzeRegions(*module);
    if (!analysis) return report(analysis.error());
    if (regionsJsonOut)
      std::cout << regionsJson(*analysis, regionsTarget).dump(2) << "\n";
    else
      printRegionsText(*analysis);
    return 0;
  }

  if (print->parsed()) {
    auto text = argus::readFile(printFile);
    if (!text) return report(text.error());
    auto module = argus::ptx::parseModule(*text, printFile);
    if (!module) return report(module.error());
    if (printJson) {
      json functions = json::array();
      for (const auto* fn : module->functions())
        functions.push_back({{"name", fn->name},
                             {"entry", fn->isEntry},
                             {"has_body", fn->hasBody},
                             {"params", fn->params.size()},
                             {"statements", fn->body.size()}});
      std::cout << json{{"schema", "argus.ptx/1"},
                        {"file", printFile},
                        {"target", module->target()},
                        {"functions", functions}}
                       .dump(2)
                << "\n";
      return 0;
    }
    std::string printed = argus::ptx::printModule(*module);
    if (printOut.empty()) {
      std::cout << printed;
      return 0;
    }
    if (auto ok = argus::writeFile(printOut, printed); !ok) return report(ok.error());
    return 0;
  }

  if (cfg->parsed()) {
    auto text = argus::readFile(cfgFile);
    if (!text) return report(text.error());
    auto module = argus::ptx::parseModule(*text, cfgFile);
    if (!module) return report(module.error());
    json all = json::array();
    bool found = false;
    for (const auto* fn : module->functions()) {
      if (!fn->hasBody || (!cfgFunction.empty() && fn->name != cfgFunction)) continue;
      found = true;
      auto graph = argus::ptx::buildControlFlowGraph(*fn, cfgFile);
      if (!graph) return report(graph.error());
      if (!cfgJson) {
        std::cout << argus::ptx::cfgToDot(*fn, *graph);
        continue;
      }
      json blocks = json::array();
      for (const auto& b : graph->blocks)
        blocks.push_back({{"begin", b.begin}, {"end", b.end}, {"successors", b.successors}});
      all.push_back({{"function", fn->name}, {"blocks", blocks}});
    }
    if (!found)
      return report(argus::Error{
          "cli", fmt::format("no function with a body named `{}` in `{}`", cfgFunction, cfgFile)});
    if (cfgJson) std::cout << all.dump(2) << "\n";
    return 0;
  }
  return 0;
}
