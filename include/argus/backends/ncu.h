// The Nsight Compute adapter: command lines that profile a program with `ncu` (clocks untouched,
// source counters) and export the report's per-instruction SASS table, whose tables
// argus/evidence/ncu_source.h parses into the per-PC structure of argus/evidence/pc_evidence.h.
//
// Collection (one report per run; every kernel launch that matches is replayed per metric pass):
//   ncu --clock-control none --section SourceCounters --metrics smsp__inst_executed.sum,...
//       --import-source no [-k NAME] [-c N] -f -o REPORT PROGRAM ARGS...
// Export of the per-PC table and of the whole-kernel totals:
//   ncu --import REPORT.ncu-rep --page source --print-source sass --csv
//   ncu --import REPORT.ncu-rep --page raw --csv
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "argus/program/program.h"
#include "argus/runtime/executor.h"

namespace argus::backends::ncu {

/// What an ncu collection profiles.
struct NcuProfileOptions {
  std::string ncu = "ncu";                   ///< Executable.
  std::filesystem::path report;              ///< Output base; ncu appends `.ncu-rep`.
  std::vector<std::string> kernels = {};     ///< Kernel names (-k, exact); empty: every kernel.
  std::optional<std::uint64_t> launchCount;  ///< -c: profile at most N launches.
  std::vector<std::string> sections = {"SourceCounters"};
  /// Whole-kernel totals beside the per-PC table, for the cross-check with the per-PC sums.
  std::vector<std::string> metrics = {"smsp__inst_executed.sum", "smsp__thread_inst_executed.sum"};
};

/// argv of the profiling run of `program` (argv). Clock control is always `none`: Argus never
/// changes clocks. [thread-safe]
[[nodiscard]] std::vector<std::string> profileCommand(const NcuProfileOptions& options,
                                                      const std::vector<std::string>& program);

/// argv that prints the report's per-PC SASS table as CSV (the input of parseNcuSourceCsv).
[[nodiscard]] std::vector<std::string> sourceExportCommand(const std::string& ncu,
                                                           const std::filesystem::path& reportFile);

/// argv that prints the report's raw metrics as CSV (the input of parseNcuRawCsv).
[[nodiscard]] std::vector<std::string> rawExportCommand(const std::string& ncu,
                                                        const std::filesystem::path& reportFile);

}  // namespace argus::backends::ncu

namespace argus::backends {

/// Registers the `ncu` Collect executor for `spec` (src/backends/ncu/executor.cpp): profiles a
/// variant, publishes a PC bundle (argus/evidence/pc_bundle.h).
void registerNcuExecutor(runtime::ExecutorRegistry& registry, program::ProgramSpec spec);

}  // namespace argus::backends
