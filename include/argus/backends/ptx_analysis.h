// The ptx_analysis backend: the discovery Control task of the op_latency recipe
// (recipes/async_discovery.yaml). It finds the async op sites of the queried region subtree on
// the program's PTX, counts their dynamic instances per iteration in the reference run, and
// materializes one forced-completion probe branch (variant -> build -> collect) per selected
// (op, iteration). Sites it cannot probe get no branch and are listed with the reason.
//
//   ptx_analysis  ptx; reference_trace.evidence (optional: a trace bundle)
//                 config {kernel, subtree, probe_recipe}; region, scope = the query's
//                 -> op_sites (JSON, below) + branches
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/query/scope.h"
#include "argus/runtime/executor.h"
#include "argus/support/status.h"

namespace argus::backends {

/// What discovery works from.
struct ProbeDiscoveryInput {
  std::string ptx;              ///< The base program's PTX (the `ptx` task's output).
  std::string ptxTask = "ptx";  ///< Id of the task that yields it (the branches bind to it).
  /// Triton programs: the task whose `triton_dump` output the probe builds bind (config key
  /// `triton_dump` of the discovery task); empty for CUDA programs.
  std::string tritonDumpTask;
  std::string programVersion;
  std::string kernel;  ///< Mangled kernel name.
  std::string region;  ///< Region path; its subtree is searched (empty: whole kernel).
  /// Op IDs to probe (the query's `ops`); empty = every site. An ID that is not a site of the
  /// region's subtree is an error that lists the sites.
  std::vector<std::string> ops;
  /// The query's scope. Its `iter` clause selects the probed iterations (default: every
  /// iteration the reference run recorded); its other clauses are traced by every probe.
  query::Scope scope;
  /// The reference run's trace bundle (region_trace evidence); nullopt where it could not run.
  std::optional<std::string> referenceBundle;
  /// False where no GPU is available: branches stop at the probe builds.
  bool collect = true;
  /// Why, when `collect` is false ("needs a GPU, and <noGpu>").
  std::string noGpu = "this machine has none";
  /// The discovery task's `trace_config`: pass options for the probes' trace lowering (the
  /// spec's block shapes, the query's trace options).
  nlohmann::json traceConfig = nlohmann::json::object();
};

/// The op_sites document and the branches to add.
struct ProbeDiscovery {
  /// {kernel, region, sites (discovery JSON), reference {available, launches, instances
  /// {op: {iteration: occurrences}}}, iterations_requested, probes [{op, kind, iteration,
  /// instances, shared_phase, shared_phase_with, note, variant, build, collect}], not_probed [{op,
  /// kind, line, iteration?, reason}], not_collected [{task, reason}]}.
  nlohmann::json opSites;
  std::vector<runtime::TaskDescriptor> branches;
};

/// Discovery and branch materialization as a pure function (what the executor runs).
/// Errors: PTX that does not parse, unknown kernel/region, a reference bundle that does not
/// decode. A site that cannot be probed is not an error: it is listed under not_probed.
[[nodiscard]] Result<ProbeDiscovery> discoverProbes(const ProbeDiscoveryInput& input);

/// Registers `ptx_analysis`. `collectProbes` false (no GPU on this machine): the branches stop
/// at the probe builds and the collections are listed as not run, `noGpu` saying why.
[[nodiscard]] Result<void> registerPtxAnalysisExecutor(runtime::ExecutorRegistry& registry,
                                                       bool collectProbes,
                                                       std::string noGpu = "this machine has none");

}  // namespace argus::backends
