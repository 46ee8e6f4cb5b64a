// Timeline export: region traces and system traces as one Chrome/Perfetto JSON timeline
// (ui.perfetto.dev and chrome://tracing open it).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/support/status.h"

namespace argus::report {

/// The Chrome/Perfetto timeline of every traced launch in a region-trace bundle (one process
/// per SM, one track per warp).
[[nodiscard]] Result<nlohmann::json> bundleTimeline(std::string_view bundleBytes);

/// What one collection left for the timeline: its region-trace bundle (empty: none) and its
/// system traces as (artifact name, bytes), the first process's named `system_trace`.
struct CollectionEvidence {
  std::string regionTrace;
  std::vector<std::pair<std::string, std::string>> systemTraces;
};

/// One timeline of a query's collections: every region trace and every process's system trace
/// ({traceEvents, displayTimeUnit: ns}); evidence that does not decode is left out. No events:
/// an empty traceEvents array.
[[nodiscard]] nlohmann::json queryTimeline(const std::vector<CollectionEvidence>& collections);

}  // namespace argus::report
