// Trace decoding: the raw buffer of one traced launch + the kernel's trace map -> occurrences,
// per-region duration statistics and a Chrome/Perfetto timeline.
//
// Pipeline (Perfetto's shape): bytes -> decodeTrace (validate header, read records) ->
// occurrences sorted by begin -> regionStatistics / chromeTrace.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/support/status.h"
#include "argus/trace/format.h"

namespace argus::trace {

/// The decoder's view of a trace map (`argus_trace_map` 1, made by lower_markers_to_trace).
struct TraceMap {
  struct Region {
    uint32_t index = 0;
    std::string id;
    std::string path;
    std::optional<uint32_t> parent;
  };
  std::string kernel;
  TimeBase timeBase = TimeBase::GlobalTimer;
  uint32_t capacityHint = 0;
  /// Records carry a per-warp sequence number in TraceRecord::warp bits 8..31 and a full slot
  /// overwrites its last record (pass option overflow=clamp); dropped records are counted from it.
  bool sequenced = false;
  /// The kernel wrote 16-byte records (record_layout=compact), which the injection library
  /// expands; a launch file whose header does not say so came from a library that cannot.
  bool compactRecords = false;
  std::vector<Region> regions;     ///< By region index.
  std::vector<std::string> roles;  ///< By role index.
  std::string scope;               ///< Canonical scope text; empty = all.
  /// The block shape the trace pass's lane-0 analysis assumed (the spec's kernels[].block):
  /// a launch with another shape may have lost occurrences begun without lane 0 uncounted.
  std::optional<std::array<uint32_t, 3>> block;
};

/// Reads a trace map; errors name the missing or malformed field.
[[nodiscard]] Result<TraceMap> parseTraceMap(const nlohmann::json& json);

/// How the records follow the header.
enum class BufferLayout {
  Full,     ///< warpSlots * capacityPerWarp records, as on the device.
  Compact,  ///< Only valid records, back to back (what a copy of used records produces).
  Auto,     ///< Full when the buffer is at least as large as the full layout, else Compact.
};

/// One recorded region occurrence.
struct Occurrence {
  uint32_t region = 0;  ///< Index into TraceMap::regions.
  uint64_t begin = 0;   ///< TimeBase units (ns for globaltimer, cycles for clock64).
  uint64_t end = 0;
  uint32_t sm = 0;
  uint32_t cta = 0;
  uint32_t warp = 0;
  std::optional<uint32_t> iteration;  ///< Absent when the marker had no `iter=`.
  std::optional<uint32_t> role;       ///< Index into TraceMap::roles; absent = no role.
  [[nodiscard]] uint64_t duration() const { return end >= begin ? end - begin : 0; }
};

/// The decoded launch.
struct DecodedTrace {
  TraceHeader header;
  std::vector<Occurrence> occurrences;  ///< Ordered by begin (then sm, cta, warp, region).
  uint64_t dropped = 0;                 ///< header.dropped: records lost to full warp slots.
  uint64_t invalidRecords = 0;  ///< Records with the valid bit but an unknown region or role,
                                ///< or end < begin; skipped.
};

/// Decodes one launch's buffer. Fails on a short header, bad magic or version, a zero
/// warpsPerCta with records, or a record area that is truncated for the layout; messages give
/// byte offsets. Records without the valid bit are unused slots and are skipped. [thread-safe]
[[nodiscard]] Result<DecodedTrace> decodeTrace(std::span<const std::byte> buffer,
                                               const TraceMap& map,
                                               BufferLayout layout = BufferLayout::Auto);

/// Duration statistics of a set of occurrences (TimeBase units).
/// median: mean of the two middle values for an even count. p95: nearest rank, the value at
/// 1-based rank ceil(0.95 * count) of the sorted durations.
struct DurationStats {
  uint64_t count = 0;
  uint64_t total = 0;  ///< Sum of the durations; UINT64_MAX when it would wrap (totalSaturated).
  bool totalSaturated = false;  ///< The sum exceeded 2^64-1: `total` is a lower bound.
  double mean = 0;
  double median = 0;
  uint64_t p95 = 0;
  uint64_t min = 0;
  uint64_t max = 0;
};
[[nodiscard]] DurationStats durationStats(std::vector<uint64_t> durations);

/// Statistics of one region, with breakdowns.
struct RegionStats {
  uint32_t region = 0;
  std::string id;
  std::string path;
  std::optional<uint32_t> parent;
  DurationStats duration;
  std::map<uint32_t, DurationStats> byIteration;  ///< Only occurrences with an iteration.
  std::map<std::string, DurationStats> byRole;    ///< "" for occurrences without a role.
  std::map<uint32_t, DurationStats> bySm;
};

/// One entry per region of the map (also regions that never occurred: count 0), by index, so
/// the tree (parent) is preserved and sum(children totals) <= parent total can be checked.
[[nodiscard]] std::vector<RegionStats> regionStatistics(const DecodedTrace& trace,
                                                        const TraceMap& map);

/// JSON form of the statistics (`{"time_base", "unit", "dropped", "regions": [...]}`).
[[nodiscard]] nlohmann::json statisticsJson(const std::vector<RegionStats>& stats,
                                            const DecodedTrace& trace, const TraceMap& map);

/// Chrome trace event format (loads in Perfetto and chrome://tracing): one process per SM or
/// per CTA, one thread per warp, one complete event ("X") per occurrence named by region path,
/// ts/dur in microseconds relative to the earliest begin (clock64 traces: kilocycles, said in
/// the metadata).
enum class ChromeGrouping { Sm, Cta };
[[nodiscard]] nlohmann::json chromeTrace(const DecodedTrace& trace, const TraceMap& map,
                                         ChromeGrouping grouping = ChromeGrouping::Sm);

}  // namespace argus::trace
