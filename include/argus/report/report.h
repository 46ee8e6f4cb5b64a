// The report model: what one region query answered, how each number was obtained, and what was
// not collected and why. toJson() gives the agents' form (schema argus.report/1, the JSON Schema
// in src/report/report.schema.json); toText() the people's table. Both are pure functions of the
// model, so a stored report renders the same way again (the golden tests in src/report/).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/support/status.h"

namespace argus::report {

using Json = nlohmann::ordered_json;

/// One signal the query asked for: its answer (value and provenance) or why there is none.
struct SignalEntry {
  std::string signal;                          ///< "duration", "inst_mix", ...
  std::string task;                            ///< The plan task that answers it.
  std::optional<std::string> qualification{};  ///< observed | attributed | derived (its recipe's).
  std::optional<std::string> unit{};
  std::string scope = "all";  ///< The query's scope, canonical.
  std::string status;  ///< The task's state ("succeeded", "memoized", ...) or "not collected".
  std::optional<std::string> reason{};  ///< Not collected: the root cause.
  std::optional<std::string> error{};   ///< Failed: the task's error.
  std::optional<Json> value{};          ///< The synthesis document (signal-specific schema).
  std::optional<Json> provenance{};     ///< Task and artifact ids in the workspace.
};

/// What tracing cost the kernel: the traced launches' CUPTI median less the untraced reference
/// build's (derived, two runs).
struct TraceCost {
  double tracedMedian = 0.0;
  double untracedMedian = 0.0;
};

/// A planned task that did not run, with the first reason in its chain.
struct NotRun {
  std::string task;
  std::string reason;
};

/// A task that ran and failed.
struct Failure {
  std::string task;
  std::string error;
  std::string logTail;
};

/// How much work the answer took.
struct RunSummary {
  std::size_t planned = 0;   ///< Tasks of the plan, before the capability check.
  std::size_t ran = 0;       ///< Tasks the scheduler took (discovery's branches included).
  std::size_t executed = 0;  ///< Of those, executed now; the rest were reused from the workspace.
  std::vector<std::string> devices;
};

/// One query's answer.
struct QueryReport {
  Json query;                 ///< The query as query::toJson gives it.
  std::string scope = "all";  ///< The query's scope, canonical.
  std::string programVersion;
  std::string workspaceVersion;
  std::string workspace;  ///< The workspace directory.
  std::vector<std::pair<std::string, std::string>> newVariantVersions;  ///< (variant, version)
  std::string kernel;
  std::string region;  ///< Region path; empty: the whole kernel.
  std::string regionId;
  std::vector<SignalEntry> signals;
  std::optional<TraceCost> traceCost;
  std::vector<NotRun> notCollected;
  std::vector<Failure> failures;
  RunSummary run;
  /// op_latency discovery: its op_sites document per discovery task.
  std::vector<std::pair<std::string, Json>> discovery;
  /// The scheduler's own text of the run, shown under the table when a task failed.
  std::string runText;
};

/// The report as argus.report/1 JSON.
[[nodiscard]] Json toJson(const QueryReport& report);

/// The report as text for a terminal: one block per signal, then trace cost, discovery, what was
/// not run and a footer saying how much ran.
[[nodiscard]] std::string toText(const QueryReport& report);

/// Checks a document against the argus.report/1 JSON Schema (src/report/report.schema.json,
/// compiled in). The error names the first violating place (a JSON pointer) and the rule.
[[nodiscard]] Result<void> validate(const Json& document);

}  // namespace argus::report
