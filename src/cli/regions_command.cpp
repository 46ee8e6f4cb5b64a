// `argus regions TARGET`: the region tree of every kernel in a CUDA source or PTX file.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/ptx/parser.h"
#include "argus/ptx/regions.h"
#include "argus/support/process.h"
#include "commands.h"

namespace argus::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

/// PTX text of a TARGET: a .ptx file as is, a .cu file through nvcc with Argus's include
/// directory and line info (so messages can name source lines).
struct PtxSource {
  std::string text;
  std::string displayName;  ///< What messages call the PTX.
};

Result<PtxSource> loadTarget(const std::string& target, const std::string& arch,
                             const std::vector<std::string>& nvccFlags) {
  fs::path path(target);
  std::error_code ec;
  if (!fs::exists(path, ec)) return fail("cli", fmt::format("`{}` does not exist", target));
  const std::string ext = path.extension().string();
  if (ext == ".ptx") {
    auto text = readFile(path);
    if (!text) return std::unexpected(text.error());
    return PtxSource{std::move(*text), target};
  }
  if (ext == ".cu") {
    auto nvcc = findTool("nvcc");
    if (!nvcc) return std::unexpected(nvcc.error());
    auto dir = makeTempDir("argus-nvcc");
    if (!dir) return std::unexpected(dir.error());
    fs::path out = *dir / (path.stem().string() + ".ptx");
    std::vector<std::string> argv{nvcc->string(), "-ptx", "-lineinfo", "-arch=" + arch,
                                  "-I" ARGUS_INCLUDE_DIR};
    argv.insert(argv.end(), nvccFlags.begin(), nvccFlags.end());
    argv.insert(argv.end(), {"-o", out.string(), path.string()});
    auto run = runProcess(argv);
    std::string text;
    if (run && run->exitCode == 0) {
      auto read = readFile(out);
      if (!read) return std::unexpected(read.error());
      text = std::move(*read);
    }
    fs::remove_all(*dir, ec);
    if (!run) return std::unexpected(run.error());
    if (run->exitCode != 0)
      return fail("nvcc", fmt::format("compiling `{}` to PTX failed (exit {}):\n{}", target,
                                      run->exitCode, run->err));
    return PtxSource{std::move(text), out.filename().string()};
  }
  return fail("cli",
              fmt::format("`{}`: TARGET must be a CUDA source (.cu) or PTX (.ptx) file", target));
}

json positionJson(const ptx::MarkerSite& site) {
  json j{{"ptx_line", site.ptx.line}};
  if (!site.source.file.empty())
    j["source"] = {{"file", site.source.file}, {"line", site.source.line}};
  if (!site.iteration.empty()) j["iteration"] = site.iteration;
  if (!site.role.empty()) j["role"] = site.role;
  return j;
}

json regionsJson(const std::vector<ptx::FunctionRegions>& all, const std::string& source) {
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

void printRegionsText(const std::vector<ptx::FunctionRegions>& all) {
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

struct RegionsOptions {
  std::string target;
  std::string arch = "sm_90a";
  std::vector<std::string> nvccFlags;
  bool json = false;
};

int runRegions(const RegionsOptions& o) {
  auto source = loadTarget(o.target, o.arch, o.nvccFlags);
  if (!source) return reportError(source.error());
  auto module = ptx::parseModule(source->text, source->displayName);
  if (!module) return reportError(module.error());
  auto analysis = ptx::analyzeRegions(*module);
  if (!analysis) return reportError(analysis.error());
  if (o.json)
    std::cout << regionsJson(*analysis, o.target).dump(2) << "\n";
  else
    printRegionsText(*analysis);
  return 0;
}

}  // namespace

std::vector<Command> addRegionsCommands(CLI::App& app) {
  auto o = std::make_shared<RegionsOptions>();
  auto* verb = app.add_subcommand("regions", "Print each kernel's region tree of a .cu or .ptx");
  verb->add_option("TARGET", o->target, "CUDA source (.cu; compiled with nvcc -ptx) or PTX")
      ->required();
  verb->add_option("--arch", o->arch, "GPU architecture for nvcc")->capture_default_str();
  verb->add_option("--nvcc-flag", o->nvccFlags, "Extra nvcc flag for .cu targets (repeatable)")
      ->allow_extra_args(false);
  verb->add_flag("--json", o->json, "Machine-readable output (schema argus.regions/1)");
  return {Command{verb, [o] { return runRegions(*o); }}};
}

}  // namespace argus::cli
