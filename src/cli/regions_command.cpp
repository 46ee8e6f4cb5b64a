// `argus regions TARGET`: the region tree of every kernel in a CUDA source or PTX file.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "argus/report/inspect.h"
#include "argus/session/inspect.h"
#include "commands.h"

namespace argus::cli {
namespace {

struct RegionsOptions {
  std::string target;
  std::string arch = "sm_90a";
  std::vector<std::string> nvccFlags;
  std::string derive;
  std::string regionsFile;
  std::string ptxOut;
  std::string kernel;
  bool json = false;
};

int runRegions(const RegionsOptions& o) {
  auto tree = session::regions({.target = o.target,
                                .arch = o.arch,
                                .nvccFlags = o.nvccFlags,
                                .derive = {o.derive, o.regionsFile},
                                .ptxOut = o.ptxOut,
                                .kernel = o.kernel});
  if (!tree) return reportError(tree.error());
  if (o.json) {
    std::cout << report::regionsJson(*tree).dump(2) << "\n";
    return 0;
  }
  const auto text = report::regionsText(*tree);
  std::cout << text.out;
  for (const auto& warning : text.warnings) std::cerr << warning;
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
  verb->add_option("--derive", o->derive,
                   "Also derive regions from the program itself (comma-separated selectors): "
                   "loops, ops, loop:[FILE:]LINE, op:KIND, op:call=NAME, func:NAME, "
                   "lines:[FILE:]A-B; e.g. --derive loops,ops (docs/regions-file.md)");
  verb->add_option("--regions-file", o->regionsFile,
                   "Also the regions of a region file (YAML or JSON, docs/regions-file.md)");
  verb->add_option("--ptx-out", o->ptxOut,
                   "Write the PTX the tree comes from, with the derived regions' markers, to this "
                   "file (for `argus ptx discover`, `ptx cfg`, or reading)");
  verb->add_option("--kernel", o->kernel,
                   "The Triton kernel whose regions a Triton spec derives (default: the spec's "
                   "only kernel). Its PTX comes from one run of the spec's script with Triton's "
                   "dump knobs, so this needs a GPU");
  verb->add_flag("--json", o->json, "Machine-readable output (schema argus.regions/1)");
  return {Command{verb, [o] { return runRegions(*o); }}};
}

}  // namespace argus::cli
