// `argus pcmap TARGET`: the static PC-to-region map of every kernel: each SASS instruction with
// the PTX instruction it came from, its owning regions and its source line, from a PTX-painted
// build that is checked to have the same SASS as the unpainted one.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/passes/transforms.h"
#include "argus/program/program.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/sass/pcmap.h"
#include "argus/support/process.h"
#include "commands.h"

namespace argus::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

struct PcmapOptions {
  std::string target;
  std::string arch = "sm_90a";
  bool json = false;
  bool summary = false;
};

int runPcmap(const PcmapOptions& o) {
  auto source = program::loadTargetPtx(o.target, o.arch);
  if (!source) return reportError(source.error());
  auto module = ptx::parseModule(source->text, source->displayName);
  if (!module) return reportError(module.error());
  std::string arch = module->target();
  if (arch.empty()) arch = o.arch;
  const std::string reference = ptx::printModule(*module);
  auto painted = passes::applyTransforms(*module, {"paint_ptx"}, {});
  if (!painted) return reportError(painted.error());
  auto dir = makeTempDir("argus-pcmap");
  if (!dir) return reportError(dir.error());
  auto cleanup = std::shared_ptr<void>(nullptr, [&](void*) {
    std::error_code ec;
    fs::remove_all(*dir, ec);
  });
  auto referenceCubin = sass::assemblePtx(reference, arch, *dir, "reference", true);
  if (!referenceCubin) return reportError(referenceCubin.error());
  auto paintedCubin = sass::assemblePtx(ptx::printModule(*module), arch, *dir, "painted", true);
  if (!paintedCubin) return reportError(paintedCubin.error());
  // The map is only valid for the reference build if painting changed no SASS.
  auto same = sass::sameSass(*referenceCubin, *paintedCubin);
  const bool transfers = same.has_value();
  auto entries = sass::readPcMap(*paintedCubin, painted->paintMap);
  if (!entries) return reportError(entries.error());

  std::map<std::string, std::map<std::string, size_t>> perRegion, perFile;
  for (const auto& e : *entries) {
    if (e.regions.empty()) {
      ++perRegion[e.function]["(outside every region)"];
    } else {
      for (const auto& r : e.regions) ++perRegion[e.function][r];
    }
    ++perFile[e.function][e.sourceFile.empty() ? "(no source line)"
                                               : fs::path(e.sourceFile).filename().string()];
  }
  if (o.json) {
    json all = json::array();
    for (const auto& e : *entries) {
      all.push_back({{"kernel", e.function},
                     {"pc", e.pc},
                     {"opcode", e.opcode},
                     {"regions", e.regions},
                     {"source", {{"file", e.sourceFile}, {"line", e.sourceLine}}},
                     {"ptx", {{"function", e.ptxFunction}, {"opcode", e.ptxOpcode}}},
                     {"instruction", e.instruction}});
    }
    std::cout << json{{"schema", "argus.pcmap/1"},
                      {"target", o.target},
                      {"painted_sass_equals_reference", transfers},
                      {"entries", all},
                      {"static_instructions_per_region", perRegion},
                      {"static_instructions_per_source_file", perFile}}
                     .dump(2)
              << "\n";
  } else {
    if (!o.summary) {
      fmt::print("{:<28} {:>7}  {:<30} {:<32} {}\n", "kernel", "pc", "opcode", "regions", "source");
      for (const auto& e : *entries) {
        std::string regions;
        for (const auto& r : e.regions) regions += (regions.empty() ? "" : "|") + r;
        fmt::print(
            "{:<28} {:>#7x}  {:<30} {:<32} {}:{}\n", program::demangle(e.function).substr(0, 28),
            e.pc, e.opcode.substr(0, 30), regions.empty() ? "-" : regions,
            e.sourceFile.empty() ? "?" : fs::path(e.sourceFile).filename().string(), e.sourceLine);
      }
      fmt::print("\n");
    }
    for (const auto& [function, counts] : perRegion) {
      fmt::print("{}: static SASS instructions per region\n", program::demangle(function));
      for (const auto& [region, n] : counts) fmt::print("  {:<40} {:>7}\n", region, n);
      fmt::print("  per source file:\n");
      for (const auto& [file, n] : perFile[function]) fmt::print("  {:<40} {:>7}\n", file, n);
    }
  }
  if (!transfers) {
    std::cerr << "argus: pcmap: warning: the painted build's SASS differs from the reference "
                 "build's, so this map describes the painted build only: "
              << same.error().message << "\n";
  }
  return 0;
}

}  // namespace

std::vector<Command> addPcmapCommands(CLI::App& app) {
  auto o = std::make_shared<PcmapOptions>();
  auto* verb = app.add_subcommand(
      "pcmap",
      "Static PC-to-region map: every SASS instruction with its PTX instruction, owning\n"
      "regions and source line (PTX painting + the cubin's line table), plus static\n"
      "instruction counts per region and per source file.");
  verb->add_option("TARGET", o->target, "Program spec (argus.yaml), CUDA source (.cu) or PTX")
      ->required();
  verb->add_option("--arch", o->arch, "GPU architecture for .cu targets")->capture_default_str();
  verb->add_flag("--summary", o->summary, "Only the per-region and per-file counts");
  verb->add_flag("--json", o->json, "Machine-readable output (schema argus.pcmap/1)");
  return {Command{verb, [o] { return runPcmap(*o); }}};
}

}  // namespace argus::cli
