// The argus verbs. Each add*Commands function registers its subcommands on the app and returns
// what to run when one of them was given; main() dispatches to the parsed one.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "argus/session/query.h"
#include "argus/support/status.h"

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

/// Registers the query flags `plan` and `query` share on a verb.
void addQueryOptions(CLI::App& verb, session::QueryRequest& options);

/// `argus plan`
std::vector<Command> addPlanCommands(CLI::App& app);
/// `argus query`
std::vector<Command> addQueryCommands(CLI::App& app);
/// `argus build`
std::vector<Command> addBuildCommands(CLI::App& app);
/// `argus compare A B`
std::vector<Command> addCompareCommands(CLI::App& app);
/// `argus report REF`: a report the workspace kept, as text, JSON or HTML.
std::vector<Command> addReportCommands(CLI::App& app);
/// `argus pcmap TARGET`
std::vector<Command> addPcmapCommands(CLI::App& app);

/// `argus ws list|show|gc|fork`. Ids print and parse with a one-letter table prefix:
/// v12 = version, a34 = artifact, t56 = task, r7 = run.
std::vector<Command> addWorkspaceCommands(CLI::App& app);
/// `argus trace DIR`: region timings of a trace directory written by libargus_inject.so.
std::vector<Command> addTraceCommands(CLI::App& app);

/// Prints "argus: component: message" to stderr and returns the exit code for errors (1).
int reportError(const Error& error);

/// An output file's folder must exist (checked before work that may take minutes); the error
/// names the flag, the file and the folder. An empty `file` is no output.
[[nodiscard]] Result<void> checkOutputFolder(const std::string& component, const std::string& flag,
                                             const std::string& file);

}  // namespace argus::cli
