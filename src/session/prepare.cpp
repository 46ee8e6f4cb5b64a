// The session's first steps: a query from its request, the program's region structure, and the
// plan (argus/session/query.h).
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/planner/planner.h"
#include "argus/program/checkout.h"
#include "argus/program/program.h"
#include "argus/program/triton.h"
#include "argus/ptx/callee_regions.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/regions.h"
#include "argus/session/query.h"
#include "argus/support/process.h"
#include "argus/workspace/workspace.h"

namespace argus::session {
namespace {

Result<query::Query> buildQuery(const QueryRequest& o) {
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
  q.derive = o.derive;
  q.regionsFile = o.regionsFile;
  if (!o.ops.empty()) {
    auto ops = query::parseSignalList(o.ops);  // the same comma-separated list rules
    if (!ops) return fail("query", fmt::format("--ops `{}` has an empty entry", o.ops));
    q.ops = std::move(*ops);
  }
  return q;
}

/// What the planner needs of a target. A Triton program's PTX exists only after a GPU run, so
/// its region tree comes from the spec (or a TTGIR it lists) and the plan's first task dumps
/// the PTX; one that derives regions is planned from its dumped PTX (a run of its script here),
/// since derived regions exist only there. Other targets are planned from their PTX.
Result<planner::ProgramContext> programContext(const std::string& target,
                                               const program::DeriveRequest& derive,
                                               const std::string& kernel) {
  const auto ext = std::filesystem::path(target).extension();
  unsigned gpus = 1;
  std::map<std::string, std::array<uint32_t, 3>> blocks;
  std::string language = "cuda";
  if (ext == ".yaml" || ext == ".yml") {
    auto spec = program::loadProgramSpec(target);
    if (!spec) return std::unexpected(spec.error());
    if (spec->language == "triton" && !program::derivesRegions(*spec, derive)) {
      auto regions = program::tritonPlanningRegions(*spec);
      if (!regions) return std::unexpected(regions.error());
      auto version = program::tritonProgramVersion(*spec);
      if (!version) return std::unexpected(version.error());
      planner::ProgramContext context{target, std::move(*version), std::move(*regions), "triton"};
      context.gpus = spec->run.gpus;
      context.blocks = program::blockShapes(*spec);  // as `argus build` gives the trace pass
      return context;
    }
    language = spec->language;
    if (language == "triton")
      std::fprintf(stderr,
                   "argus: running %s once to dump the Triton kernel's PTX, where its "
                   "regions are derived...\n",
                   spec->script.filename().c_str());
    gpus = spec->run.gpus;
    blocks = program::blockShapes(*spec);
  }
  auto source = program::loadTargetPtx(target, "sm_90a", {}, derive, kernel);
  if (!source) return std::unexpected(source.error());
  auto module = ptx::parseModule(source->text, source->displayName);
  if (!module) return std::unexpected(module.error());
  auto regions = ptx::analyzeRegions(*module);
  if (!regions) return std::unexpected(regions.error());
  // A kernel's tree includes the regions of the functions it calls, under the calling region.
  if (auto composed = ptx::composeCalleeRegions(*module, *regions); !composed)
    return std::unexpected(composed.error());
  planner::ProgramContext context{target, source->version, std::move(*regions), language};
  context.gpus = gpus;
  if (!derive.empty()) {
    // The PTX task derives the same regions; their material is part of its memo key.
    auto material = program::deriveMaterial(derive);
    if (!material) return std::unexpected(material.error());
    context.derive = {{"derive", derive.list},
                      {"regions_file", derive.file.string()},
                      {"regions_key", workspace::hashBytes(*material).hex()}};
  }
  context.blocks = std::move(blocks);
  return context;
}

}  // namespace

Result<PreparedQuery> prepareQuery(const QueryRequest& request) {
  QueryRequest o = request;
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
    const auto checkout = ws->directory() / "checkouts" / version->text();
    auto spec = program::checkoutVersion(*ws, *version, checkout);
    if (!spec) return std::unexpected(spec.error());
    o.program = spec->string();
    // A region file the version carries (`ws fork --regions-file`) and its spec does not name.
    auto files = ws->versionFiles(*version);
    if (!files) return std::unexpected(files.error());
    for (const auto& f : *files)
      if (f.artifact.kind == "region_file" && o.regionsFile.empty()) {
        auto loaded = program::loadProgramSpec(*spec);
        const bool named = loaded && loaded->derive.file.filename() == f.name;
        if (!named) o.regionsFile = (checkout / f.name).string();
      }
  }
  auto q = buildQuery(o);
  if (!q) return std::unexpected(q.error());
  auto catalog =
      planner::RecipeCatalog::load(o.recipes.empty() ? planner::RecipeCatalog::defaultDirectory()
                                                     : std::filesystem::path(o.recipes));
  if (!catalog) return std::unexpected(catalog.error());
  const program::DeriveRequest derive{q->derive, q->regionsFile.empty()
                                                     ? std::filesystem::path()
                                                     : std::filesystem::absolute(q->regionsFile)};
  auto context = programContext(q->program, derive, q->kernel);
  if (!context) return std::unexpected(context.error());
  auto plan = planner::planQuery(*q, *catalog, *context);
  if (!plan) return std::unexpected(plan.error());
  return PreparedQuery{std::move(*q), std::move(*catalog), std::move(*plan), version};
}

}  // namespace argus::session
