// The argus verbs. Each add*Commands function registers its subcommands on the app and returns
// what to run when one of them was given; main() dispatches to the parsed one.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "argus/planner/planner.h"
#include "argus/query/query.h"
#include "argus/support/status.h"
#include "argus/workspace/workspace.h"

namespace argus::cli {

/// One verb (possibly nested, like `ptx print`) and the action to run when it was parsed.
struct Command {
  CLI::App* verb = nullptr;
  std::function<int()> run;
};

/// `argus regions TARGET`
std::vector<Command> addRegionsCommands(CLI::App& app);
/// `argus ptx print FILE`, `argus ptx cfg FILE`
std::vector<Command> addPtxCommands(CLI::App& app);

/// `argus recipes`
std::vector<Command> addRecipesCommands(CLI::App& app);

/// The query flags `plan` and `query` share.
struct QueryOptions {
  std::string queryFile;
  std::string program, kernel, region, scope, signals, workspace, ops;
  std::string recipes;
  std::string version;  ///< A program version of the workspace, in place of program.
  std::vector<std::string> traceOptions;  ///< --trace-option KEY=VALUE, repeatable.
};
/// Registers the shared query flags on a verb.
void addQueryOptions(CLI::App& verb, QueryOptions& options);

/// A query with its recipe catalog and plan, ready to run.
struct PreparedQuery {
  query::Query query;
  planner::RecipeCatalog catalog;
  planner::QueryPlan plan;
  /// --version: the workspace's program version the query runs on (checked out for it).
  std::optional<workspace::VersionId> version{};
};
/// Builds the query (flags or --query FILE), loads recipes and the program's region structure,
/// and plans it.
Result<PreparedQuery> prepareQuery(const QueryOptions& options);

/// `argus plan`
std::vector<Command> addPlanCommands(CLI::App& app);
/// `argus query`
std::vector<Command> addQueryCommands(CLI::App& app);
/// `argus build`
std::vector<Command> addBuildCommands(CLI::App& app);
/// `argus pcmap TARGET`
std::vector<Command> addPcmapCommands(CLI::App& app);

/// `argus ws list|show|gc|fork`. Ids print and parse with a one-letter table prefix:
/// v12 = version, a34 = artifact, t56 = task, r7 = run.
std::vector<Command> addWorkspaceCommands(CLI::App& app);
/// `argus trace DIR`: region timings of a trace directory written by libargus_inject.so.
std::vector<Command> addTraceCommands(CLI::App& app);

/// Prints "argus: component: message" to stderr and returns the exit code for errors (1).
int reportError(const Error& error);

}  // namespace argus::cli
