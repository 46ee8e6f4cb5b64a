// `argus compare` (argus/session/compare.h).
#include "argus/session/compare.h"

#include <fmt/format.h>

#include "argus/query/scope.h"
#include "argus/synthesis/region_timing.h"
#include "argus/workspace/workspace.h"

namespace argus::session {
namespace {

using json = nlohmann::json;

/// One side: its query run, and the trace bundle its duration was synthesized from.
struct Side {
  report::QueryReport report;
  std::string evidence;
};

Result<Side> runSide(const CompareRequest& r, const std::string& version,
                     const RunSettings& settings) {
  QueryRequest q;
  q.version = version;
  q.workspace = r.workspace;
  q.kernel = r.kernel;
  q.region = r.region;
  q.scope = r.scope;
  q.signals = "duration";
  q.derive = r.derive;
  q.regionsFile = r.regionsFile;
  q.recipes = r.recipes;
  auto prepared = prepareQuery(q);
  if (!prepared) return std::unexpected(prepared.error());
  auto run = runQuery(*prepared, settings);
  if (!run) return std::unexpected(run.error());
  const report::SignalEntry* duration = nullptr;
  for (const auto& s : run->report.signals)
    if (s.signal == "duration") duration = &s;
  if (duration == nullptr || !duration->value)
    return fail("compare",
                fmt::format("version {}: duration was not answered ({}): compare needs both "
                            "versions' traces",
                            version,
                            duration == nullptr ? "not planned"
                            : duration->reason  ? *duration->reason
                            : duration->error   ? *duration->error
                                                : duration->status));
  // The synthesis task's input is the trace bundle.
  const json& provenance = duration->provenance.value_or(json::object());
  auto ws = workspace::Workspace::open(r.workspace,
                                       workspace::OpenOptions{.create = false, .readOnly = true});
  if (!ws) return std::unexpected(ws.error());
  auto id = workspace::parseObjectRef(provenance.value("task", ""));
  if (!id || id->kind != workspace::ObjectKind::task)
    return fail("compare", fmt::format("version {}: the duration has no task in the workspace to "
                                       "read its trace from",
                                       version));
  auto task = ws->task(workspace::TaskId(id->value));
  if (!task) return std::unexpected(task.error());
  if (task->inputs.empty())
    return fail("compare",
                fmt::format("version {}: task {} has no trace input", version, task->id.text()));
  auto bytes = ws->readArtifact(task->inputs.front());
  if (!bytes) return std::unexpected(bytes.error());
  return Side{std::move(run->report), std::move(*bytes)};
}

}  // namespace

Result<json> compareVersions(const CompareRequest& r, const RunSettings& settings) {
  if (r.signals != "duration")
    return fail("compare", fmt::format("--signals {}: compare answers `duration` so far (per "
                                       "region, the median occurrence time with a bootstrap "
                                       "interval)",
                                       r.signals));
  if (r.workspace.empty())
    return fail("compare", "give --workspace, the workspace that holds both versions");
  auto a = runSide(r, r.a, settings);
  if (!a) return std::unexpected(a.error());
  auto b = runSide(r, r.b, settings);
  if (!b) return std::unexpected(b.error());
  auto scope = query::parseScope(r.scope);
  if (!scope) return std::unexpected(scope.error());
  auto sa = synthesis::regionSamples(a->evidence, a->report.region, *scope);
  if (!sa) return std::unexpected(sa.error());
  auto sb = synthesis::regionSamples(b->evidence, b->report.region, *scope);
  if (!sb) return std::unexpected(sb.error());
  json doc{{"schema", "argus.compare/1"},
           {"workspace", r.workspace},
           {"a", {{"version", r.a}, {"program_version", a->report.programVersion}}},
           {"b", {{"version", r.b}, {"program_version", b->report.programVersion}}},
           {"kernel", a->report.kernel},
           {"region", a->report.region},
           {"scope", scope->all() ? "all" : scope->canonical()},
           {"qualification", "derived"},
           {"duration", synthesis::compareSamples(*sa, *sb, r.options)}};
  return doc;
}

}  // namespace argus::session
