// Text rendering of attributed per-PC signals for `argus query` (pc_report.cpp).
#pragma once

#include <nlohmann/json.hpp>

namespace argus::cli {

/// Prints an argus.pc_signal/1 document as a table (region, value, share, ambiguity), the total,
/// the per-source-file view and the evidence's identity checks; false (nothing printed) for any
/// other value.
bool printPcSignal(const nlohmann::ordered_json& value);

}  // namespace argus::cli
