// `argus plan`: the measurement plan a region query needs, without running it.
#include <iostream>
#include <memory>

#include "argus/report/plan.h"
#include "commands.h"

namespace argus::cli {
namespace {

struct PlanOptions {
  session::QueryRequest query;
  bool json = false;
  bool dot = false;
  bool explain = false;
};

int runPlan(const PlanOptions& o) {
  auto prepared = session::prepareQuery(o.query);
  if (!prepared) return reportError(prepared.error());
  if (o.json)
    std::cout << report::planJson(prepared->plan).dump(2) << "\n";
  else if (o.dot)
    std::cout << report::planDot(prepared->plan);
  else
    std::cout << report::planText(prepared->plan, o.explain);
  return 0;
}

}  // namespace

void addQueryOptions(CLI::App& verb, session::QueryRequest& o) {
  verb.add_option("--query", o.queryFile,
                  "Query as a JSON file (fields program, kernel, "
                  "region, scope, signals, workspace, ops)");
  verb.add_option("--program", o.program, "Program spec (argus.yaml), .cu or .ptx");
  verb.add_option("--version", o.version,
                  "A program version of --workspace instead of --program: an optimizer's fork "
                  "(`argus ws fork v1 --file kernel.ttgir=EDITED`), checked out into the "
                  "workspace; a Triton kernel is compiled from the fork's .ttgir");
  verb.add_option("--kernel", o.kernel, "Kernel name (default: the only kernel)");
  verb.add_option("--region", o.region, "Region path (main/body) or ID; covers its subtree");
  verb.add_option("--scope", o.scope,
                  "Occurrences to measure: role, warp, warpgroup, iter, sm, cta, launch; "
                  "e.g. role=producer,iter=0..7");
  verb.add_option("--signals", o.signals, "Comma-separated signals (`argus recipes` lists them)");
  verb.add_option("--workspace", o.workspace,
                  "Workspace directory (default .argus beside the program)");
  verb.add_option("--ops", o.ops,
                  "op_latency: comma-separated op IDs to probe (`argus ptx discover` lists them; "
                  "default every site in the region's subtree)");
  verb.add_option("--trace-option", o.traceOptions,
                  "KEY=VALUE for the trace variants' pass, repeatable: parted=record (record the "
                  "occurrences warps begin without lane 0, not only count them), "
                  "record_layout=full (64-bit timestamps), time_base=clock64, ... "
                  "(docs/tracing.md). Each choice is its own variant in the workspace");
  verb.add_option("--derive", o.derive,
                  "Regions derived into the kernels' PTX, without editing the source: "
                  "comma-separated selectors: loops, ops (every async-op and barrier kind "
                  "present), loop:[FILE:]LINE, op:KIND, func:NAME, lines:[FILE:]A-B "
                  "(docs/regions-file.md); `argus regions TARGET --derive ...` shows the tree");
  verb.add_option("--regions-file", o.regionsFile,
                  "A region file (YAML or JSON, docs/regions-file.md): named regions by selector, "
                  "nested, and `refine:` splits of marked regions");
  verb.add_option("--recipes", o.recipes, "Recipe directory (default: the shipped catalog)");
}

std::vector<Command> addPlanCommands(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  auto* verb = app.add_subcommand(
      "plan",
      "Plan the compiles, runs and synthesis a region query needs (nothing runs).\n"
      "Example: argus plan --program examples/tma_gemm/argus.yaml --region mainloop "
      "--signals duration,inst_mix,op_latency --explain");
  addQueryOptions(*verb, o->query);
  auto* json = verb->add_flag("--json", o->json, "The plan as JSON (schema argus_query_plan 1)");
  auto* dot = verb->add_flag("--dot", o->dot, "The task graph as Graphviz DOT");
  verb->add_flag("--explain", o->explain, "Say why each pair of collections runs separately");
  json->excludes(dot);
  return {Command{verb, [o] { return runPlan(*o); }}};
}

}  // namespace argus::cli
