// `argus ptx print FILE` and `argus ptx cfg FILE`: the PTX front end on its own.
#include <algorithm>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/analysis/discover.h"
#include "argus/ptx/cfg.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/support/process.h"
#include "commands.h"

namespace argus::cli {
namespace {

using json = nlohmann::ordered_json;

Result<ptx::Module> loadPtx(const std::string& file) {
  auto text = readFile(file);
  if (!text) return std::unexpected(text.error());
  return ptx::parseModule(*text, file);
}

struct PrintOptions {
  std::string file;
  std::string output;
  bool json = false;
};

int runPrint(const PrintOptions& o) {
  auto module = loadPtx(o.file);
  if (!module) return reportError(module.error());
  if (o.json) {
    json functions = json::array();
    for (const auto* fn : module->functions())
      functions.push_back({{"name", fn->name},
                           {"entry", fn->isEntry},
                           {"has_body", fn->hasBody},
                           {"params", fn->params.size()},
                           {"statements", fn->body.size()}});
    std::cout << json{{"schema", "argus.ptx/1"},
                      {"file", o.file},
                      {"target", module->target()},
                      {"functions", functions}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::string printed = ptx::printModule(*module);
  if (o.output.empty()) {
    std::cout << printed;
    return 0;
  }
  if (auto ok = writeFile(o.output, printed); !ok) return reportError(ok.error());
  return 0;
}

struct CfgOptions {
  std::string file;
  std::string function;
  bool json = false;
};

int runCfg(const CfgOptions& o) {
  auto module = loadPtx(o.file);
  if (!module) return reportError(module.error());
  json all = json::array();
  bool found = false;
  for (const auto* fn : module->functions()) {
    if (!fn->hasBody || (!o.function.empty() && fn->name != o.function)) continue;
    found = true;
    auto graph = ptx::buildControlFlowGraph(*fn, o.file);
    if (!graph) return reportError(graph.error());
    if (!o.json) {
      std::cout << ptx::cfgToDot(*fn, *graph);
      continue;
    }
    json blocks = json::array();
    for (const auto& b : graph->blocks)
      blocks.push_back({{"begin", b.begin}, {"end", b.end}, {"successors", b.successors}});
    all.push_back({{"function", fn->name}, {"blocks", blocks}});
  }
  if (!found)
    return reportError(
        Error{"cli", fmt::format("no function with a body named `{}` in `{}`; `argus ptx print {} "
                                 "--json` lists the functions",
                                 o.function, o.file, o.file)});
  if (o.json) std::cout << all.dump(2) << "\n";
  return 0;
}

struct DiscoverOptions {
  std::string file;
  std::string kernel;
  std::string region;
  bool json = false;
};

int runDiscover(const DiscoverOptions& o) {
  auto module = loadPtx(o.file);
  if (!module) return reportError(module.error());
  auto sites = analysis::discoverAsyncOps(*module, o.kernel, o.region);
  if (!sites) return reportError(sites.error());
  if (o.json) {
    std::cout << analysis::toJson(*sites).dump(2) << "\n";
    return 0;
  }
  fmt::print("{:<40} {:<10} {:>6}  {:<28} {}\n", "op id", "kind", "line", "region", "completion");
  for (const auto& site : *sites) {
    const auto j = analysis::toJson(site);
    std::string regions;
    for (const auto& r : site.regions) regions += (regions.empty() ? "" : "|") + r;
    std::string completion;
    if (j.contains("completion")) {
      const auto& c = j["completion"];
      completion = c.value("kind", std::string());
      if (c.contains("barrier")) {
        const auto& b = c["barrier"];
        completion += " " + b.value("text", std::string());
        if (b.value("resolved", false)) completion += " = " + b.value("base", std::string());
      }
      if (c.contains("waits")) completion += fmt::format(", {} wait site(s)", c["waits"].size());
      // Parity phases of the barrier waits, as discovery proved them (or why it could not).
      std::vector<std::string> phases;
      for (const auto& w : c.value("waits", json::array())) {
        if (!w.contains("parity") || !w["parity"].contains("phase")) continue;
        const auto& ph = w["parity"]["phase"];
        std::string text = ph.value("form", std::string()) + ": " +
                           ph.value("expression", ph.value("reason", std::string()));
        if (std::ranges::find(phases, text) == phases.end()) phases.push_back(std::move(text));
      }
      for (const auto& text : phases) completion += "; phase " + text;
      if (!c.value("resolved", true))
        completion += " (unresolved: " + c.value("reason", std::string()) + ")";
    }
    fmt::print("{:<40} {:<10} {:>6}  {:<28} {}\n", site.opId, analysis::toString(site.kind),
               site.where.line, regions.empty() ? "-" : regions, completion);
  }
  fmt::print("{} async op sites; --json gives the completion conditions in full\n", sites->size());
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
