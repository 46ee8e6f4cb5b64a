// Synthesis of the observed kernel_duration signal from CUPTI kernel records.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "argus/query/scope.h"
#include "argus/runtime/executor.h"
#include "argus/support/status.h"

namespace argus::synthesis {

/// kernel_duration from a `cupti_activity` evidence document (backends/run.cpp: `kernel`,
/// `kernels` = the injection library's kernels.jsonl records, `run`): the launches of `kernel`
/// in the order they started on the GPU (with several streams, not necessarily the order the
/// program launched them, which region timings' `launch` follows), those the scope's launch
/// clause selects (0-based; its other
/// clauses, which select occurrences inside a kernel, do not apply to a whole launch and are said
/// so in `note`), their CUPTI durations in ns: count, total, mean, median, p95, min, max, and
/// each selected launch's duration (`per_launch`, the first 64). Fails when no launch is left.
[[nodiscard]] Result<nlohmann::json> kernelTiming(std::string_view evidence,
                                                  const query::Scope& scope);

/// Registers the `kernel_timing` Synthesize executor (input `evidence`; output
/// `kernel_duration`, JSON).
void registerKernelTimingExecutor(runtime::ExecutorRegistry& registry);

}  // namespace argus::synthesis
