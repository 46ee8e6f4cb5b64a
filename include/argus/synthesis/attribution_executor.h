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
// Every number they publish is `attributed`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

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

/// Registers ownership_weights and pc_attribution.
void registerAttributionExecutors(runtime::ExecutorRegistry& registry);

}  // namespace argus::synthesis
