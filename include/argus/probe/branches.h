// The probe branches of op_latency's discovery: per discovered asynchronous op site and iteration,
// the variant, build and region-trace collection tasks that a discovery Control task
// (src/backends/ptx_analysis) adds to a running plan and the planner derives from a planned
// query (planner::probeBranches(plan, targets)). Below the planner so that the backend that adds
// them does not reach up the pipeline.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/query/scope.h"
#include "argus/runtime/task.h"
#include "argus/support/status.h"

namespace argus::probe {

/// A discovered asynchronous op site and the iterations to probe it in.
struct ProbeTarget {
  std::string opId;  ///< Stable op ID from discovery.
  std::string kind;  ///< `tma_load`, `cp_async`, `wgmma`, ...
  std::vector<int64_t> iterations;
  /// insert_forced_wait's `shared_phase` option (`wait_after_last` for a TMA load whose
  /// expect_tx phase later loads share); empty = the pass's default (`refuse`).
  std::string sharedPhase;
  std::optional<int64_t> cta;  ///< Probe only this linear CTA (pass option `cta`).
};

/// What probe branches derive from: the base program, kernel, region and query scope, and the
/// task whose `ptx` output holds the base PTX.
struct ProbeOrigin {
  std::string programVersion;
  std::string kernel;  ///< Mangled kernel name.
  std::string regionPath;
  query::Scope scope;  ///< The query's scope; each probe traces it with `iter` set to its own.
  std::string ptxTask = "ptx";
  /// Triton programs: the task whose `triton_dump` output the probe builds need (the override
  /// key); empty for CUDA programs.
  std::string tritonDumpTask;
  unsigned gpus = 1;  ///< GPUs one run of the program needs (ProgramContext::gpus).
  /// Pass options the probe variants' trace lowering gets beside their own: the spec's block
  /// shapes (`blocks`) and the query's trace options, as the query's trace variants get them.
  nlohmann::json traceConfig = nlohmann::json::object();
};

/// The branches a discovery Control task adds for its sites: per (op, iteration) a probe
/// variant transform (`variant/probe[OP@I]`: transforms [insert_forced_wait,
/// lower_markers_to_trace], pass options op/iteration/shared_phase/cta, scope = the query's with
/// iter=I; outputs ptx, trace_map and `probe`, the pass's probe description), its build and its
/// region-trace collection (`collect/probe[OP@I]`, output `region_trace`), each collection alone
/// on its device. [thread-safe]
[[nodiscard]] Result<std::vector<runtime::TaskDescriptor>> probeBranches(
    const ProbeOrigin& origin, const std::vector<ProbeTarget>& targets);

}  // namespace argus::probe
