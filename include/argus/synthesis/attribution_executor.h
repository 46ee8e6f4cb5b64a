// Synthesis executors that turn PC bundles (argus/evidence/pc_bundle.h) into attributed signals:
//
//   ownership_weights  input `evidence`: the mapping run's bundle. Output `pc_region_map`: the
//                      mapping run (schema argus.mapping_run/1: the mapping build's map, its
//                      per-PC counts n(r,p), and per-region counts of the mapping build).
//   pc_attribution     input `evidence`: a reference build's bundle (CUPTI SASS metrics, PC
//                      sampling or ncu), optional `pc_region_map.pc_region_map`. Calls
//                      synthesis::attribute and publishes one document per signal of the recipe
//                      (schema argus.pc_signal/1): per region value, share and ambiguity, the same
//                      per source file, exact/estimate, and the evidence's identity and totals.
//                      With input `scope_trace` (an unscoped trace bundle) and a task scope, the
//                      documents are restricted to the scope through the trace's occurrences
//                      (scopeSignal).
// Every number they publish is `attributed`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "argus/query/scope.h"
#include "argus/runtime/executor.h"
#include "argus/support/status.h"
#include "argus/synthesis/attribution.h"

namespace argus::synthesis {

/// The mapping run document (argus.mapping_run/1) of a pc_mapping bundle. [thread-safe]
[[nodiscard]] Result<nlohmann::json> mappingRunDocument(std::string_view bundleText);

/// The MappingRun that attribute() takes, from a mapping run document. [thread-safe]
[[nodiscard]] Result<MappingRun> mappingRunFromDocument(const nlohmann::json& document);

/// Attributes a reference bundle and returns {signal name: argus.pc_signal/1 document} for the
/// signals `recipe` produces (sass_counters: inst_executed, inst_mix, barrier_inst, mem_inst;
/// pc_sampling: stall_reasons; ncu_source_counters: ncu_source_counters). Fails when the bundle's
/// evidence does not belong to its map. [thread-safe]
[[nodiscard]] Result<nlohmann::json> attributeBundle(std::string_view bundleText,
                                                     const std::optional<nlohmann::json>& mapping,
                                                     const std::string& recipe);

/// Per region path: its occurrences in a trace, and how many of them a scope selects.
struct ScopeShares {
  std::string scope;  ///< The scope's canonical text.
  std::map<std::string, std::pair<uint64_t, uint64_t>> occurrences;  ///< path -> (in scope, all)
  uint64_t lostRecords = 0;  ///< Occurrences the trace lost or could not decode.
  /// The scope names SMs: which SM runs which CTA differs from run to run, so the trace run's SMs
  /// need not be the counters run's.
  bool bySm = false;
};

/// The shares of a trace bundle's occurrences that `scope` selects, per region. [thread-safe]
[[nodiscard]] Result<ScopeShares> scopeShares(std::string_view traceBundle,
                                              const query::Scope& scope);

/// An argus.pc_signal/1 document restricted to a scope through occurrence shares: per-PC
/// counters keep no warp, SM or iteration, but a region's executions happen inside its
/// occurrences, so where a scope selects all of a region's occurrences or none (a producer region
/// under role=producer, a consumer loop under warpgroup=0) the region's value in the scope is its
/// value or 0, exactly; where it selects some, the selected share of occurrences stands for the
/// share of executions, and the document says `estimate` with that basis. Code that no
/// occurrence holds (outside every region) and the per-source-file view are listed under
/// `not_scoped` with their unscoped values. [thread-safe]
[[nodiscard]] nlohmann::json scopeSignal(const nlohmann::json& document, const ScopeShares& shares);

/// Registers ownership_weights and pc_attribution.
void registerAttributionExecutors(runtime::ExecutorRegistry& registry);

}  // namespace argus::synthesis
