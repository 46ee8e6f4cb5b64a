// The "PC bundle": the one evidence artifact of every per-PC collection (pc_mapping, cupti_sass,
// cupti_pc_sampling, ncu; argus/backends/pc_collect.h): what it measured (argus_pc_evidence
// launches) together with the PC map of exactly the cubin it measured (the build's
// `nvdisasm -g -c` text and its paint map), so that synthesis joins evidence only with the map of
// the same cubin and needs no CUDA tools.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/evidence/pc_evidence.h"
#include "argus/support/status.h"

namespace argus::evidence {

inline constexpr std::string_view kPcBundleFormat = "argus_pc_bundle 1";

/// Evidence of one per-PC collection and the map of the cubin it measured.
struct PcBundle {
  std::string collector;  ///< pc_mapping | cupti_sass | cupti_pc_sampling | ncu
  std::string variant;    ///< mapping | reference
  std::string kernel;     ///< Mangled kernel name the launches were selected by.
  std::string cubinHash;  ///< contentHash of the build's cubin (build/<variant>.cubin).
  std::uint64_t cubinBytes = 0;
  /// How the measured cubin was shown to be the build's: {"method": "identical bytes" | "same
  /// SASS" | "same instruction at every PC", "crc": ..., "file": ...}.
  nlohmann::json cubinCheck = nlohmann::json::object();
  /// Reference builds: {"painted_equals_unpainted": bool, "detail": text}; null otherwise.
  nlohmann::json sassCheck = nullptr;
  std::string disassembly;  ///< `nvdisasm -g -c` of the build's cubin (sass::parsePcMap input).
  nlohmann::json paintMap = nlohmann::json::object();  ///< argus_paint_map 1 of the variant.
  /// Mapping builds with callee copies: the argus.callee_copies/1 map of the build; null else.
  nlohmann::json calleeCopies = nullptr;
  std::vector<PcEvidence> launches;                  ///< Launches of `kernel`, in order.
  nlohmann::json totals = nlohmann::json::object();  ///< ncu raw-page kernel totals.
  nlohmann::json run = nlohmann::json::object();     ///< {command, exit_code, wall_ms, ...}
};

/// JSON text of a bundle ({"format": kPcBundleFormat, ...}). [thread-safe]
[[nodiscard]] std::string encodePcBundle(const PcBundle& bundle);
/// Inverse of encodePcBundle; errors name the field. [thread-safe]
[[nodiscard]] Result<PcBundle> decodePcBundle(std::string_view text);

}  // namespace argus::evidence
