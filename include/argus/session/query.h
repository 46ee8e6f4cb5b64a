// The session: one API from a region query to its report, used by the CLI, the Python client
// (through the CLI's JSON) and the agent server. query -> plan -> executor catalog -> capability
// check -> run -> report.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "argus/planner/planner.h"
#include "argus/planner/recipe.h"
#include "argus/query/query.h"
#include "argus/report/report.h"
#include "argus/runtime/launcher.h"
#include "argus/support/status.h"
#include "argus/workspace/ids.h"

namespace argus::session {

/// A query as its fronts give it: flags (or a query file) before they are checked.
struct QueryRequest {
  std::string queryFile;  ///< A JSON query (fields program, kernel, region, scope, signals, ...).
  std::string program, kernel, region, scope, signals, workspace, ops;
  std::string recipes;  ///< Recipe directory; empty: the shipped catalog.
  std::string version;  ///< A program version of the workspace, in place of program.
  std::vector<std::string> traceOptions;  ///< KEY=VALUE for the trace variants' pass.
  std::string derive;                     ///< --derive: selectors of regions derived into the PTX.
  std::string regionsFile;                ///< --regions-file: a region file.
};

/// A query with its recipe catalog and plan, ready to run.
struct PreparedQuery {
  query::Query query;
  planner::RecipeCatalog catalog;
  planner::QueryPlan plan;
  /// --version: the workspace's program version the query runs on (checked out for it).
  std::optional<workspace::VersionId> version{};
};

/// Builds the query (flags or the query file), loads recipes and the program's region structure,
/// and plans it. A version is checked out into its workspace first.
[[nodiscard]] Result<PreparedQuery> prepareQuery(const QueryRequest& request);

/// Probe processes started at once per GPU by default: 8, or the host's CPU threads if fewer.
[[nodiscard]] std::size_t defaultConcurrentProbes();

/// How a query runs.
struct RunSettings {
  std::size_t concurrentProbes = defaultConcurrentProbes();
  bool progress = true;  ///< Progress lines on stderr while tasks run.
  /// Where to write the timeline of the query's collections (Chrome/Perfetto JSON); none: no file.
  std::optional<std::filesystem::path> timeline{};
  /// Where to write the report as one HTML page with the timeline (report::writeHtml); none: no
  /// page.
  std::optional<std::filesystem::path> html{};
  /// --executor slurm: every program run (the collections) as a Slurm job (runtime/launcher.h);
  /// none: on this machine.
  std::optional<runtime::SlurmOptions> slurm{};
};

/// A finished query.
struct QueryRun {
  report::QueryReport report;
  std::size_t gpuSkipped = 0;  ///< GPU collections this machine could not run.
  bool failed = false;         ///< Some task that ran failed.
  /// The artifact the report was kept as in the workspace (`a57`, kind `report`: `argus report`
  /// reads it back), or empty with `reportNotKept` saying why.
  std::string reportArtifact;
  std::string reportNotKept;
  /// Why the HTML page (RunSettings::html) could not be written; the report itself stands.
  std::optional<Error> htmlError;
};

/// Runs a prepared query: registers the adapters' executors, takes out of the plan what this
/// build and machine cannot run (with the reason), runs the rest against the query's workspace
/// and assembles the report. Errors: the query cannot run at all (no spec, a bad workspace).
[[nodiscard]] Result<QueryRun> runQuery(const PreparedQuery& prepared, const RunSettings& settings);

}  // namespace argus::session
