// `argus ptx print FILE` and `argus ptx cfg FILE`: the PTX front end on its own.
#include <iostream>
#include <memory>
#include <string>

#include "argus/report/inspect.h"
#include "argus/session/inspect.h"
#include "commands.h"

namespace argus::cli {
namespace {

struct PrintOptions {
  std::string file;
  std::string output;
  bool json = false;
};

int runPrint(const PrintOptions& o) {
  if (o.json) {
    auto summary = session::ptxSummary(o.file);
    if (!summary) return reportError(summary.error());
    std::cout << summary->dump(2) << "\n";
    return 0;
  }
  auto printed = session::printPtx({.file = o.file, .output = o.output});
  if (!printed) return reportError(printed.error());
  if (o.output.empty()) std::cout << *printed;
  return 0;
}

struct CfgOptions {
  std::string file;
  std::string function;
  bool json = false;
};

int runCfg(const CfgOptions& o) {
  auto cfg = session::ptxCfg({.file = o.file, .function = o.function});
  if (!cfg) return reportError(cfg.error());
  if (o.json)
    std::cout << cfg->json.dump(2) << "\n";
  else
    std::cout << cfg->dot;
  return 0;
}

struct DiscoverOptions {
  std::string file;
  std::string kernel;
  std::string region;
  bool json = false;
};

int runDiscover(const DiscoverOptions& o) {
  auto sites = session::discoverOps({.file = o.file, .kernel = o.kernel, .region = o.region});
  if (!sites) return reportError(sites.error());
  if (o.json)
    std::cout << report::opSitesJson(*sites).dump(2) << "\n";
  else
    std::cout << report::opSitesTable(*sites);
  return 0;
}

}  // namespace

std::vector<Command> addPtxCommands(CLI::App& app) {
  auto* ptx = app.add_subcommand("ptx", "PTX front-end tools");
  ptx->require_subcommand(1);

  auto p = std::make_shared<PrintOptions>();
  auto* print = ptx->add_subcommand("print", "Parse PTX and print it back (round trip)");
  print->add_option("FILE", p->file, "PTX file")->required()->check(CLI::ExistingFile);
  print->add_option("-o,--output", p->output, "Write the printed PTX here instead of stdout");
  print->add_flag("--json", p->json, "Print a JSON summary of the parsed module instead");

  auto c = std::make_shared<CfgOptions>();
  auto* cfg = ptx->add_subcommand("cfg", "Print a function's control-flow graph as Graphviz DOT");
  cfg->add_option("FILE", c->file, "PTX file")->required()->check(CLI::ExistingFile);
  cfg->add_option("--function", c->function, "Function name (default: every function)");
  cfg->add_flag("--json", c->json, "Blocks and edges as JSON instead of DOT");

  auto d = std::make_shared<DiscoverOptions>();
  auto* discover = ptx->add_subcommand(
      "discover",
      "List the asynchronous op sites (TMA, bulk copies, cp.async, WGMMA) with op IDs "
      "and completion conditions");
  discover->add_option("FILE", d->file, "PTX file")->required()->check(CLI::ExistingFile);
  discover->add_option("--kernel", d->kernel, "Only this kernel (default: every kernel)");
  discover->add_option("--region", d->region, "Only this region's subtree (path)");
  discover->add_flag("--json", d->json, "Sites with their completion conditions as JSON");

  return {Command{print, [p] { return runPrint(*p); }}, Command{cfg, [c] { return runCfg(*c); }},
          Command{discover, [d] { return runDiscover(*d); }}};
}

}  // namespace argus::cli
