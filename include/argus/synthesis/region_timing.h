// Synthesis of observed region timings from region-trace evidence.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/query/scope.h"
#include "argus/runtime/executor.h"
#include "argus/support/status.h"
#include "argus/trace/decode.h"

namespace argus::synthesis {

/// Decodes every traced launch of a trace bundle, keeps the occurrences of `regionPath`'s
/// subtree (all regions when empty) that `scope` selects (the launch coordinate filters
/// launches by their order, 0-based), and returns {"duration": ..., "occurrences": ...} JSON
/// documents with per-region statistics and per-iteration, per-role and per-SM breakdowns. The
/// duration document's `launch_notes` (when any) hold what the injection library noted of the
/// launches, such as why records were dropped (at most 8, "launch SEQ: NOTE").
[[nodiscard]] Result<nlohmann::json> regionTiming(std::string_view bundleBytes,
                                                  const std::string& regionPath,
                                                  const query::Scope& scope);

/// The samples behind regionTiming's statistics, for comparisons (compare.h): each kept
/// region's occurrence durations, and the selected launches' CUPTI kernel times.
struct RegionSamples {
  std::string kernel;
  std::string unit;  ///< `ns` (globaltimer) or `cycles` (clock64).
  std::map<std::string, std::vector<uint64_t>> durations;  ///< By region path.
  std::vector<uint64_t> kernelNs;
  uint64_t dropped = 0;         ///< Records lost (full slots, passes without lane 0).
  uint64_t invalidRecords = 0;  ///< Records that could not be decoded.
};
[[nodiscard]] Result<RegionSamples> regionSamples(std::string_view bundleBytes,
                                                  const std::string& regionPath,
                                                  const query::Scope& scope);

/// The same documents for occurrences already decoded (an imported trace, e.g. Proton's): keeps
/// `regionPath`'s subtree and what `scope` selects (launch is ignored: one launch). Fails when
/// nothing is left.
[[nodiscard]] Result<nlohmann::json> occurrenceTiming(const trace::DecodedTrace& trace,
                                                      const trace::TraceMap& map,
                                                      const std::string& regionPath,
                                                      const query::Scope& scope);

/// Registers the `region_timing` Synthesize executor (input `evidence`: a trace bundle; outputs
/// `duration` and `occurrences`, JSON).
void registerSynthesisExecutors(runtime::ExecutorRegistry& registry);

}  // namespace argus::synthesis
