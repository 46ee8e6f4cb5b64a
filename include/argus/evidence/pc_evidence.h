// Per-PC hardware evidence of one kernel launch: the one structure that the CUPTI collectors
// (libargus_cupti_sass.so: SASS metrics, PC sampling) write and that the ncu adapter produces, so
// that synthesis joins every kind of per-PC evidence by (cubin, function, PC offset) the same way.
//
// File format "argus_pc_evidence 1" (JSON, one object per launch; encodePcEvidence writes it,
// parsePcEvidence reads it; unknown keys are ignored so the format can grow):
//
//   {"format": "argus_pc_evidence 1",
//    "collector": "cupti_sass_metrics" | "cupti_pc_sampling" | "ncu",
//    "seq": 0,                      launch sequence number in the process (0, 1, ... per launch)
//    "correlation": 12,             CUPTI correlation id of the launch call (0 for ncu)
//    "kernel": "nested_regions",    launched function's name (mangled, as the driver reports it)
//    "api": "cuLaunchKernel", "grid": [x,y,z], "block": [x,y,z],   (absent for ncu)
//    "device": 0,                   CUDA device ordinal the launch ran on (-1 when unknown)
//    "granularity": "gpu"|"sm"|"smsp"|"",  SASS metrics: what one instance is ("" otherwise)
//    "instances": 132,              values per (PC, metric): 1 for gpu, #SMs for sm, ...
//    "metrics": ["smsp__sass_inst_executed", ...],     metric names in `pcs[].metrics`
//    "stall_reasons": ["smsp__pcsamp_warps_issue_stalled_barrier", ...],  PC sampling names
//    "sampling": {"period_log2": 0, "total_samples": 0, "dropped_samples": 0,
//                 "non_user_samples": 0, "hardware_buffer_full": false},  PC sampling only
//    "dropped_records": 0,          records the collector knows it lost (0 when none)
//    "duration_ns": 1234 | null,    GPU duration from CUPTI kernel activity (see readPcEvidenceDir)
//    "note": "",                    why something is missing, in words
//    "functions": [
//      {"name": "_Z18transformOutOfLinef",   SASS function the PCs belong to
//       "cubin_crc": 305419896,               cuptiGetCubinCrc of the cubin (0 when unknown)
//       "cubin_file": "cubin-305419896.cubin",  the cubin saved beside, "" when not saved
//       "function_index": 5,                  symbol index in the module (CUPTI), 0 otherwise
//       "pcs": [                              sorted by pc, each pc once
//         {"pc": 16,                          byte offset from the function's first instruction
//          "sass": "FFMA R1, R2, R3, R4",     instruction text where the source gives it (ncu)
//          "metrics": {"smsp__sass_inst_executed": {"total": 4096, "per_instance": [...]}},
//                      per_instance present only when instances > 1; total = their sum
//          "stalls": {"smsp__pcsamp_warps_issue_stalled_barrier": 7},   samples per reason
//          "fractional": {"Avg. Threads Executed": 31.5}}]}]}         non-additive ncu columns
//
// A collection directory ($ARGUS_OUT_DIR of libargus_cupti_sass.so) holds:
//   pc-<seq>.json        one file per selected launch in the format above
//   cubin-<crc>.cubin    every module's cubin, once per CRC (`nvdisasm -g` builds its PC map)
//   launches.jsonl       one line per launch seen: {seq, correlation, kernel, selected, file, note}
//   kernels.jsonl        CUPTI kernel activity: {seq, correlation, kernel, start_ns, end_ns,
//                        duration_ns}, written when activity buffers complete (at exit)
//   metrics.txt          SASS metrics the device supports (name and description), once
//   errors.txt           problems, also printed on stderr with the prefix "argus-cupti:"
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "argus/support/status.h"

namespace argus::evidence {

inline constexpr std::string_view kPcEvidenceFormat = "argus_pc_evidence 1";

/// One metric at one PC: the total and, for per-SM (or per-SMSP) collection, each instance.
struct PcMetric {
  std::uint64_t total = 0;
  std::vector<std::uint64_t> perInstance = {};  ///< Empty when the collection had 1 instance.
};

/// Evidence at one SASS instruction.
struct PcRecord {
  std::uint64_t pc = 0;  ///< Byte offset from the start of the function.
  std::string sass;      ///< Instruction text when the source provides it (ncu), else "".
  std::map<std::string, PcMetric> metrics = {};
  std::map<std::string, std::uint64_t> stalls = {};  ///< PC sampling: samples per stall reason.
  std::map<std::string, double> fractional = {};     ///< Non-additive values (ncu averages).
};

/// The PCs of one SASS function of one cubin.
struct PcFunction {
  std::string name;
  std::uint64_t cubinCrc = 0;
  std::string cubinFile;  ///< File name of the saved cubin in the collection directory, or "".
  std::uint32_t functionIndex = 0;
  std::vector<PcRecord> pcs = {};  ///< Sorted by pc, unique.

  /// The record at `pc`, or nullptr.
  [[nodiscard]] const PcRecord* at(std::uint64_t pc) const;
};

/// PC sampling bookkeeping of one launch.
struct SamplingInfo {
  std::uint32_t periodLog2 = 0;  ///< 2^period cycles between samples; 0: CUPTI's default.
  std::uint64_t totalSamples = 0;
  std::uint64_t droppedSamples = 0;
  std::uint64_t nonUserSamples = 0;
  bool hardwareBufferFull = false;
};

/// Per-PC evidence of one kernel launch.
struct PcEvidence {
  std::string collector;  ///< cupti_sass_metrics | cupti_pc_sampling | ncu
  std::uint64_t seq = 0;
  std::uint32_t correlation = 0;
  std::string kernel;
  std::string api;
  std::uint32_t grid[3] = {0, 0, 0};
  std::uint32_t block[3] = {0, 0, 0};
  int device = -1;
  std::string granularity;
  std::uint32_t instances = 1;
  std::vector<std::string> metrics = {};
  std::vector<std::string> stallReasons = {};
  SamplingInfo sampling = {};
  std::uint64_t droppedRecords = 0;
  std::optional<std::uint64_t> durationNs = std::nullopt;
  std::string note;
  std::vector<PcFunction> functions = {};

  /// The function called `name`, or nullptr.
  [[nodiscard]] const PcFunction* function(std::string_view name) const;
  /// Sum of `metric` over every PC of every function.
  [[nodiscard]] std::uint64_t metricTotal(std::string_view metric) const;
};

/// The JSON text of `evidence` (format above). [thread-safe]
[[nodiscard]] std::string encodePcEvidence(const PcEvidence& evidence);

/// Reads one launch; errors name the JSON path of the problem ("functions[1].pcs[3].pc").
/// Checks the invariants the writers guarantee: PCs sorted and unique per function, a per-instance
/// list of `instances` values that sums to `total`. [thread-safe]
[[nodiscard]] Result<PcEvidence> parsePcEvidence(std::string_view json);

/// Reads every pc-<seq>.json of a collection directory, in seq order, and fills durationNs from
/// kernels.jsonl (matched by seq). Fails on the first unreadable file. [thread-safe]
[[nodiscard]] Result<std::vector<PcEvidence>> readPcEvidenceDir(const std::filesystem::path& dir);

/// The per-launch file name in a collection directory: pc-<seq>.json.
[[nodiscard]] std::string pcEvidenceFileName(std::uint64_t seq);

/// The cubin file name in a collection directory: cubin-<crc>.cubin.
[[nodiscard]] std::string cubinFileName(std::uint64_t crc);

}  // namespace argus::evidence
