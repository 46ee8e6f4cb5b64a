// The `probe_join` Synthesize executor: the op_latency answer of the forced-completion probe
// recipe. It joins every probe branch that discovery materialized with the reference run,
// exactly by iteration (synthesis::probeJoin), and says which sites were not probed and why.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "argus/runtime/executor.h"
#include "argus/support/status.h"

namespace argus::synthesis {

/// The op_latency document from discovery's op_sites, the reference trace bundle and, per
/// probe, its variant's `probe` description and its collection's trace bundle, keyed
/// "<task id>/<output>" (TaskContext::evidence). Output: {unit, qualification "derived", ops
/// [probeJoin's JSON + kind, shared_phase, note, instances, correctness, provenance],
/// not_probed, not_collected, failed [{op, iteration, error}]}. A probe whose evidence is missing
/// or does not join is listed under `failed`, never estimated.
[[nodiscard]] Result<nlohmann::json> joinProbes(
    const nlohmann::json& opSites, std::string_view referenceBundle,
    const std::map<std::string, runtime::Artifact>& evidence);

/// Registers `probe_join` (inputs `async_discovery.op_sites`, `reference_trace.evidence`; the
/// probes' outputs arrive as evidence; output `op_latency`).
[[nodiscard]] Result<void> registerProbeJoinExecutor(runtime::ExecutorRegistry& registry);

}  // namespace argus::synthesis
