// Text renderers of the signal documents synthesis writes, shared by every report that shows
// them (`argus query`, `argus trace`).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace argus::report {

/// 1234 -> "1.23 us", 1.5e6 -> "1.500 ms", 40 -> "40 ns".
[[nodiscard]] std::string formatNs(double ns);

/// A value in its unit: ns as formatNs does, cycles as "6168 cyc" / "378.6 kcyc" / "1.581 Mcyc",
/// anything else as "N unit".
[[nodiscard]] std::string formatQuantity(double value, std::string_view unit);

/// Any JSON document as indented lines: scalars as `key: value`, arrays of objects as tables
/// (one column per scalar field), long texts by their size only. For signals without a renderer
/// of their own, so that their report text stays readable and diffs line by line.
[[nodiscard]] std::string genericText(const nlohmann::ordered_json& value);

/// An argus.pc_signal/1 document as a table (region, value, share, ambiguity), the total, the
/// per-source-file view and the evidence's identity checks; nothing for any other value.
[[nodiscard]] std::optional<std::string> pcSignalText(const nlohmann::ordered_json& value);

/// A table of an op_latency document (op, kind, iteration, median latency, exposed, slack,
/// method) plus what was not probed.
[[nodiscard]] std::string opLatencyText(const nlohmann::json& opLatency);

/// A summary of discovery's op_sites: the probe branches it added (op, iteration, instances in
/// the reference), the sites it did not probe and the collections it could not add.
[[nodiscard]] std::string opSitesText(const nlohmann::json& opSites);

/// The duration document's table (region, count, mean, median, p95, total), launches, drops,
/// the traced kernel's time and the launch notes.
[[nodiscard]] std::string durationText(const nlohmann::ordered_json& value);

}  // namespace argus::report
