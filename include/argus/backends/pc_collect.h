// The Collect executors of per-PC hardware evidence and the one evidence artifact they publish,
// the "PC bundle": what a collection measured (argus_pc_evidence launches) together with the PC
// map of exactly the cubin it measured (the build's `nvdisasm -g -c` text and its paint map), so
// that synthesis joins evidence only with the map of the same cubin and needs no CUDA tools.
//
//   pc_mapping         mapping build (clone_shared_callees + paint_ptx) under
//   libargus_cupti_sass.so
//                      with smsp__sass_inst_executed: n(r,p), every PC one owner
//   cupti_sass         reference build (paint_ptx), CUPTI SASS metrics: warp/thread instructions...
//   cupti_pc_sampling  reference build, CUPTI PC sampling: stall reasons per PC
//   ncu                reference build under `ncu --clock-control none` (source counters)
//
// Inputs (bound by the planner): `executable` and `cubin` of build/<variant>, `paint_map` of
// variant/<variant>; for the reference variant also its painted `ptx` and the front end's
// `unpainted_ptx`, from which the executor checks that painting changed no SASS. Config: `kernel`
// (mangled), optional `launches` (collected launches of the kernel, default 1: the first) and
// `metrics` (SASS metric names). Output: the evidence name of the recipe, a PC bundle.
//
// Identity checks, each failing the task with a message that says what differed:
//   CUPTI: the cubin the driver loaded (saved by the collector as cubin-<crc>.cubin) must be the
//   build's cubin byte for byte (or, failing that, hold the same SASS per function);
//   ncu: every profiled PC's instruction must be the build's instruction at that PC.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/backends/pc_evidence.h"
#include "argus/program/program.h"
#include "argus/runtime/executor.h"
#include "argus/support/status.h"

namespace argus::backends {

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
  std::vector<PcEvidence> launches;                    ///< Launches of `kernel`, in order.
  nlohmann::json totals = nlohmann::json::object();    ///< ncu raw-page kernel totals.
  nlohmann::json run = nlohmann::json::object();       ///< {command, exit_code, wall_ms, ...}
};

/// JSON text of a bundle ({"format": kPcBundleFormat, ...}). [thread-safe]
[[nodiscard]] std::string encodePcBundle(const PcBundle& bundle);
/// Inverse of encodePcBundle; errors name the field. [thread-safe]
[[nodiscard]] Result<PcBundle> decodePcBundle(std::string_view text);

/// Where the collectors find libargus_cupti_sass.so: $ARGUS_CUPTI_SASS_LIB, else the build tree's.
[[nodiscard]] Result<std::filesystem::path> cuptiSassLibrary();

/// Registers pc_mapping, cupti_sass and cupti_pc_sampling (libargus_cupti_sass.so) for `spec`.
void registerCuptiPcExecutors(runtime::ExecutorRegistry& registry, program::ProgramSpec spec);

/// Registers the `ncu` Collect executor for `spec` (src/backends/ncu/executor.cpp).
void registerNcuExecutor(runtime::ExecutorRegistry& registry, program::ProgramSpec spec);

/// Shared by the collectors (executors.cpp): reads the inputs every PC collection needs, runs
/// the identity checks that do not need the run (paint map, disassembly, painted == unpainted
/// SASS) and fills those fields of `bundle`. [thread-safe]
[[nodiscard]] Result<void> preparePcBundle(const program::ProgramSpec& spec,
                                           runtime::TaskContext& ctx, std::string_view component,
                                           PcBundle& bundle);

}  // namespace argus::backends
