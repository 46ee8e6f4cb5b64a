// What `argus trace` shows: the region timings of one trace directory or one Proton trace, as
// JSON (the timing documents themselves) and as a table.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace argus::report {

/// Region timings decoded from a trace.
struct TraceTimings {
  /// The duration and occurrences documents (synthesis's region timing); a Proton import adds
  /// `source` and, when kept in a workspace, `provenance`.
  nlohmann::json timing;
  /// Where a Proton import came from; none for a trace directory.
  struct Proton {
    std::string file;  ///< The file as given.
    std::string kernel;
    std::size_t occurrences = 0;
    double frequencyMhz = 0;
  };
  std::optional<Proton> proton{};
};

/// The timings as a table (region, count, median, p95, total, iterations) under a heading that
/// says where they came from, the launch notes and, for a kept Proton import, its artifacts.
[[nodiscard]] std::string traceText(const TraceTimings& timings);

}  // namespace argus::report
