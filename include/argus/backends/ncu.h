// The Nsight Compute adapter: command lines that profile a program with `ncu` (clocks untouched,
// source counters) and export the report's per-instruction SASS table, and the parser that turns
// that table into the same per-PC structure as the CUPTI collectors (argus/backends/pc_evidence.h),
// keyed by (function, PC offset).
//
// Collection (one report per run; every kernel launch that matches is replayed per metric pass):
//   ncu --clock-control none --section SourceCounters --metrics smsp__inst_executed.sum,...
//       --import-source no [-k NAME] [-c N] -f -o REPORT PROGRAM ARGS...
// Export of the per-PC table and of the whole-kernel totals:
//   ncu --import REPORT.ncu-rep --page source --print-source sass --csv
//   ncu --import REPORT.ncu-rep --page raw --csv
//
// The source page in CSV form, as parseNcuSourceCsv reads it: per profiled launch a line
// `"Kernel Name","<name>"` (other `"Key","Value"` lines may follow), a header row that holds
// `"Address"` and `"Source"` and one column per source counter ("Instructions Executed",
// "Thread Instructions Executed", "Warp Stall Sampling (All Samples)", ...), then one row per SASS
// instruction with its address in hex. Numbers may carry thousands separators ("1,024").
// A column whose values are all integers becomes a metric (additive); one with fractions goes to
// `fractional`. PC offsets are addresses minus the first address of the launch's table, so they
// are offsets from the kernel function's first instruction whether ncu prints absolute addresses
// or offsets. A `"Function Name"` line, where ncu prints one, starts a new function.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "argus/backends/pc_evidence.h"
#include "argus/support/status.h"

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

/// One PcEvidence per profiled launch, in report order (seq = position), collector "ncu",
/// instances 1. Errors name the line. [thread-safe]
[[nodiscard]] Result<std::vector<PcEvidence>> parseNcuSourceCsv(std::string_view csv);

/// One profiled launch of the raw page: identity columns and every metric column.
struct NcuRawLaunch {
  std::string kernel;
  std::map<std::string, std::string> values;  ///< Column name -> cell, as printed.

  /// The cell as a number (thousands separators dropped); nullopt when absent or not numeric.
  [[nodiscard]] std::optional<double> number(const std::string& column) const;
};

/// The raw page: a header row of column names (with "Kernel Name"), optionally a row of units,
/// then one row per launch. [thread-safe]
[[nodiscard]] Result<std::vector<NcuRawLaunch>> parseNcuRawCsv(std::string_view csv);

/// The source-page column that counts what a CUPTI SASS metric counts, "" when none is known:
/// smsp__sass_inst_executed -> "Instructions Executed", smsp__sass_thread_inst_executed ->
/// "Thread Instructions Executed", ..._pred_on -> "Predicated-On Thread Instructions Executed".
[[nodiscard]] std::string_view sourceColumnFor(std::string_view cuptiMetric);

/// Splits one CSV line (RFC 4180 quoting, no embedded newlines). [thread-safe]
[[nodiscard]] std::vector<std::string> splitCsvLine(std::string_view line);

}  // namespace argus::backends::ncu
