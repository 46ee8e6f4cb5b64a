// `argus pcmap TARGET`: the static PC-to-region map of every kernel: each SASS instruction with
// the PTX instruction it came from, its owning regions and its source line, from a PTX-painted
// build that is checked to have the same SASS as the unpainted one.
#include <iostream>
#include <memory>
#include <string>

#include "argus/report/inspect.h"
#include "argus/session/inspect.h"
#include "commands.h"

namespace argus::cli {
namespace {

struct PcmapOptions {
  std::string target;
  std::string arch = "sm_90a";
  bool json = false;
  bool summary = false;
};

int runPcmap(const PcmapOptions& o) {
  auto map = session::pcmap({.target = o.target, .arch = o.arch});
  if (!map) return reportError(map.error());
  if (o.json)
    std::cout << report::pcmapJson(*map).dump(2) << "\n";
  else
    std::cout << report::pcmapText(*map, o.summary);
  if (!map->paintedEqualsReference) {
    std::cerr << "argus: pcmap: warning: the painted build's SASS differs from the reference "
                 "build's, so this map describes the painted build only: "
              << map->mismatch << "\n";
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
