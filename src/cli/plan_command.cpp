// `argus plan`: the measurement plan a region query needs, without running it.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/planner/planner.h"
#include "argus/program/checkout.h"
#include "argus/program/program.h"
#include "argus/program/triton.h"
#include "argus/ptx/parser.h"
#include "argus/support/process.h"
#include "commands.h"

namespace argus::cli {
namespace {

struct PlanOptions {
  QueryOptions query;
  bool json = false;
  bool dot = false;
  bool explain = false;
};

Result<query::Query> buildQuery(const QueryOptions& o) {
  if (!o.queryFile.empty()) {
    auto text = readFile(o.queryFile);
    if (!text) return std::unexpected(text.error());
    auto parsed = nlohmann::json::parse(*text, nullptr, false);
    if (parsed.is_discarded()) return fail("query", fmt::format("{}: not valid JSON", o.queryFile));
    auto q = query::queryFromJson(parsed);
    if (!q) return std::unexpected(Error{"query", o.queryFile + ": " + q.error().message});
    return q;
  }
  if (o.program.empty() || o.signals.empty())
    return fail("query", "give --program and --signals (and usually --region), or --query FILE");
  query::Query q;
  q.program = o.program;
  q.kernel = o.kernel;
  q.region = o.region;
  q.workspace = o.workspace;
  auto scope = query::parseScope(o.scope);
  if (!scope) return std::unexpected(scope.error());
  q.scope = std::move(*scope);
  auto signals = query::parseSignalList(o.signals);
  if (!signals) return std::unexpected(signals.error());
  q.signals = std::move(*signals);
  auto traceOptions = query::parseTraceOptions(o.traceOptions, "--trace-option");
  if (!traceOptions) return std::unexpected(traceOptions.error());
  q.traceOptions = std::move(*traceOptions);
  if (!o.ops.empty()) {
    auto ops = query::parseSignalList(o.ops);  // the same comma-separated list rules
    if (!ops) return fail("query", fmt::format("--ops `{}` has an empty entry", o.ops));
    q.ops = std::move(*ops);
  }
  return q;
}

int runPlan(const PlanOptions& o) {
  auto prepared = prepareQuery(o.query);
  if (!prepared) return reportError(prepared.error());
  if (o.json)
    std::cout << planner::toJson(prepared->plan).dump(2) << "\n";
  else if (o.dot)
    std::cout << prepared->plan.plan.toDot();
  else
    std::cout << planner::toText(prepared->plan, o.explain);
  return 0;
}

/// What the planner needs of a target. A Triton program's PTX exists only after a GPU run, so
/// its region tree comes from the spec (or a TTGIR it lists) and the plan's first task dumps
/// the PTX; other targets are planned from their PTX.
Result<planner::ProgramContext> programContext(const std::string& target) {
  const auto ext = std::filesystem::path(target).extension();
  unsigned gpus = 1;
  std::map<std::string, std::array<uint32_t, 3>> blocks;
  if (ext == ".yaml" || ext == ".yml") {
    auto spec = program::loadProgramSpec(target);
    if (!spec) return std::unexpected(spec.error());
    if (spec->language == "triton") {
      auto regions = program::tritonPlanningRegions(*spec);
      if (!regions) return std::unexpected(regions.error());
      auto version = program::tritonProgramVersion(*spec);
      if (!version) return std::unexpected(version.error());
      planner::ProgramContext context{target, std::move(*version), std::move(*regions), "triton"};
      context.gpus = spec->run.gpus;
      context.blocks = program::blockShapes(*spec);  // as `argus build` gives the trace pass
      return context;
    }
    gpus = spec->run.gpus;
    blocks = program::blockShapes(*spec);
  }
  auto source = program::loadTargetPtx(target);
  if (!source) return std::unexpected(source.error());
  auto module = ptx::parseModule(source->text, source->displayName);
  if (!module) return std::unexpected(module.error());
  auto regions = ptx::analyzeRegions(*module);
  if (!regions) return std::unexpected(regions.error());
  planner::ProgramContext context{target, source->version, std::move(*regions)};
  context.gpus = gpus;
  context.blocks = std::move(blocks);
  return context;
}

}  // namespace

Result<PreparedQuery> prepareQuery(const QueryOptions& options) {
  QueryOptions o = options;
  std::optional<workspace::VersionId> version;
  if (!o.version.empty()) {
    // A program version of the workspace (an optimizer's fork): its files are checked out into
    // the workspace and the query runs on the spec there.
    if (!o.program.empty() || !o.queryFile.empty())
      return fail("query", "--version names the program; give it without --program or --query");
    if (o.workspace.empty())
      return fail("query", fmt::format("--version {} needs --workspace, the workspace that holds "
                                       "it",
                                       o.version));
    auto ref = workspace::parseObjectRef(o.version);
    if (!ref ||
        (ref->kind != workspace::ObjectKind::version && ref->kind != workspace::ObjectKind::any))
      return fail("query", fmt::format("--version `{}`: give a program version id like v3 "
                                       "(`argus ws list` shows them)",
                                       o.version));
    auto ws = workspace::Workspace::open(o.workspace, workspace::OpenOptions{.create = false});
    if (!ws) return std::unexpected(ws.error());
    version = workspace::VersionId(ref->value);
    auto spec =
        program::checkoutVersion(*ws, *version, ws->directory() / "checkouts" / version->text());
    if (!spec) return std::unexpected(spec.error());
    o.program = spec->string();
  }
  auto q = buildQuery(o);
  if (!q) return std::unexpected(q.error());
  auto catalog =
      planner::RecipeCatalog::load(o.recipes.empty() ? planner::RecipeCatalog::defaultDirectory()
                                                     : std::filesystem::path(o.recipes));
  if (!catalog) return std::unexpected(catalog.error());
  auto context = programContext(q->program);
  if (!context) return std::unexpected(context.error());
  auto plan = planner::planQuery(*q, *catalog, *context);
  if (!plan) return std::unexpected(plan.error());
  return PreparedQuery{std::move(*q), std::move(*catalog), std::move(*plan), version};
}

void addQueryOptions(CLI::App& verb, QueryOptions& o) {
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
