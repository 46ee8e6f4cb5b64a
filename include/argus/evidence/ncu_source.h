// Nsight Compute's source page (the per-instruction SASS table) and raw page as ncu exports them
// in CSV (argus/backends/ncu.h has the command lines), parsed into the per-PC structure of the
// CUPTI collectors (argus/evidence/pc_evidence.h), keyed by (function, PC offset).
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
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "argus/evidence/pc_evidence.h"
#include "argus/support/status.h"

namespace argus::evidence::ncu {

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

}  // namespace argus::evidence::ncu
