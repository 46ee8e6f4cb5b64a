// The planner: from a region query to a measurement-valid plan (docs/architecture.md, "The
// pipeline", steps 1–3).
//
// Each requested signal resolves to a recipe; recipes are bound to the program version, region
// and scope, prerequisites are added recursively and shared ones once (one PTX, one mapping run
// for all attributed signals). Collections are then partitioned by their effects: two share a
// run only when they need the same program variant and neither's effects invalidate the other's
// outputs; isolated recipes (forced-completion probes) always run alone. The plan is
// measurement-valid, not minimal, and says for every separated pair which rule separated them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/planner/recipe.h"
#include "argus/probe/branches.h"
#include "argus/ptx/regions.h"
#include "argus/query/query.h"
#include "argus/runtime/plan.h"
#include "argus/support/status.h"

namespace argus::planner {

/// What the planner knows of the program: its version and its region structure.
struct ProgramContext {
  std::string target;   ///< As the user named it (spec, .cu or .ptx).
  std::string version;  ///< Program version (content hash).
  std::vector<ptx::FunctionRegions> functions;
  /// `cuda` or `triton`. A Triton program's PTX exists only after its script ran on a GPU, so
  /// its `ptx` task is a `triton_dump` (GPU) and its builds are override wrappers.
  std::string language = "cuda";
  /// GPUs one run of the program needs (its spec's run.gpus; 0: all).
  unsigned gpus = 1;
  /// The block shapes the spec gives (kernels[].block), by kernel: the trace variants' lane-0
  /// analysis uses them (lower_markers_to_trace's `blocks` option).
  std::map<std::string, std::array<uint32_t, 3>> blocks = {};
  /// Regions the query derives into the PTX (`derive`, `regions_file`, `regions_key`: the
  /// nvcc_ptx task's config); empty: none beyond the program's own.
  nlohmann::json derive = nlohmann::json::object();
};

/// One collection: a recipe bound to a program variant, and the run partition it landed in.
struct Collection {
  std::string key;  ///< `recipe@variant`, unique in a plan.
  std::string recipe;
  std::string variant;  ///< Variant key, e.g. `full_trace`, `scoped_trace[iter=0..7]`.
  std::string task;     ///< Id of the Collect task that runs the partition.
  int partition = 0;
  friend bool operator==(const Collection&, const Collection&) = default;
};

/// Why two collections do not share a run.
struct Separation {
  std::string first;   ///< Collection key.
  std::string second;  ///< Collection key.
  std::string rule;    ///< `isolated`, `variant`, `exclusion` or `effect`.
  std::string reason;  ///< One sentence for people.
  friend bool operator==(const Separation&, const Separation&) = default;
};

/// A planned query: the task DAG plus what the planner decided and why.
struct QueryPlan {
  query::Query query;
  std::string programVersion;
  std::string kernel;      ///< Mangled kernel name.
  std::string regionPath;  ///< Resolved region (path), empty for the whole kernel.
  std::string regionId;
  std::vector<std::string> subtree;  ///< Region paths the query covers (the region and below).
  runtime::Plan plan;
  std::vector<Collection> collections;
  std::vector<Separation> separations;
  std::map<std::string, std::string> answers;  ///< Signal -> Synthesize task that answers it.
  friend bool operator==(const QueryPlan&, const QueryPlan&) = default;
};

/// Plans a query. Errors: unknown kernel, region or signal (listing what exists), and a scope
/// coordinate that a requested signal's recipe cannot retain (listing what it keeps).
[[nodiscard]] Result<QueryPlan> planQuery(const query::Query& query, const RecipeCatalog& catalog,
                                          const ProgramContext& program);

/// The rule that keeps two recipes' collections out of one run, or nullopt when they may share.
/// `variantA`/`variantB` are their variant keys.
struct SeparationRule {
  std::string rule;
  std::string reason;
};
[[nodiscard]] std::optional<SeparationRule> separationRule(const Recipe& a,
                                                           const std::string& variantA,
                                                           const Recipe& b,
                                                           const std::string& variantB);

// ProbeTarget, ProbeOrigin and probeBranches(origin, targets): argus/probe/branches.h, which the
// discovery Control task (src/backends/ptx_analysis) uses without the planner.
using probe::probeBranches;
using probe::ProbeOrigin;
using probe::ProbeTarget;

/// The same, derived from a planned query (its `ptx` task, kernel, region and scope).
[[nodiscard]] Result<std::vector<runtime::TaskDescriptor>> probeBranches(
    const QueryPlan& plan, const std::vector<ProbeTarget>& targets);

/// JSON of a planned query: {"argus_query_plan": 1, query, kernel, region..., "plan",
/// "collections", "separations", "answers"}; queryPlanFromJson restores an equal QueryPlan.
[[nodiscard]] nlohmann::json toJson(const QueryPlan& plan);
[[nodiscard]] Result<QueryPlan> queryPlanFromJson(const nlohmann::json& json);

/// Readable text: tasks, partitions, and (with `explain`) why each separated pair is apart.
[[nodiscard]] std::string toText(const QueryPlan& plan, bool explain);

}  // namespace argus::planner
