// The region-trace evidence: what the region_trace collector (argus/backends/run.h) packs from a
// run under libargus_inject.so, and the kernels.jsonl records (CUPTI kernel activity) that the
// injection libraries write and synthesis times kernels by.
//
// A "trace bundle" is one artifact: the launches the library saw (one buffer per traced launch
// plus its launches.jsonl line), the trace map, and how the run went.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/support/status.h"

namespace argus::evidence {

/// One traced launch inside a bundle.
struct BundleLaunch {
  nlohmann::json info;  ///< The injection library's launch line (seq, kernel, grid, block...).
  std::string buffer;   ///< The buffer bytes it copied back (header + records).
};

/// Evidence of one region-trace collection: launches, the trace map, and how the run went.
struct TraceBundle {
  nlohmann::json traceMap;  ///< argus_trace_map objects by kernel name.
  /// {exit_code, device, command, stdout_tail, stderr_tail, injection_errors, process_ns: [start,
  /// end] of the run in ns since the epoch}, and when the
  /// library wrote them: kernel_intervals ([[start_ns, end_ns]...], CUPTI's clock) and gpu_turn
  /// (turn.json: the wait for the device's turn); for a probe run with one hardware work queue,
  /// work_queues (1) and kernel_streams (the (context, stream) pairs its kernels ran on, when
  /// CUPTI recorded kernels).
  nlohmann::json run;
  std::vector<BundleLaunch> launches;
};

/// Binary form: "ARGUSTB1", u64 little-endian JSON length, JSON {trace_map, run, launches:[{info,
/// offset, size}]}, then the buffers. [thread-safe]
[[nodiscard]] std::string encodeBundle(const TraceBundle& bundle);
/// Inverse of encodeBundle; errors name the byte offset of the problem.
[[nodiscard]] Result<TraceBundle> decodeBundle(std::string_view bytes);

/// A kernels.jsonl record's (start_ns, end_ns - start_ns); nothing when it lacks either time
/// (CUPTI leaves them 0 when it could not take them) or they are out of order.
[[nodiscard]] std::optional<std::pair<std::uint64_t, std::uint64_t>> kernelRecordTimes(
    const nlohmann::json& record);

/// Adds to each launch whose `seq` a kernels.jsonl record (the injection library's CUPTI kernel
/// records) carries its kernel time: info["kernel_ns"] (end - start). Records with seq -1 (the
/// library did not know the launch) and launches without a record are left alone.
void addKernelTimes(std::vector<BundleLaunch>& launches,
                    const std::vector<nlohmann::json>& kernels);

/// The records per warp slot (ARGUS_TRACE_CAPACITY, in 32-byte records) that would have kept a
/// run's dropped records, when its slots overflowed: a traced launch that dropped records while
/// keeping at least 90 % of what its slots hold (so the drops are full slots, not passes run
/// without lane 0, which leave slots empty). The capacity scales the used one by (kept +
/// dropped) / kept, with a quarter more for warps above the average, and is capped so that the
/// launch's buffer stays within `maxBytes`. nullopt: no launch overflowed, or no larger capacity
/// fits. `capacity` is the run's ARGUS_TRACE_CAPACITY.
[[nodiscard]] std::optional<std::uint32_t> overflowCapacity(
    const std::vector<BundleLaunch>& launches, std::uint32_t capacity, std::uint64_t maxBytes);

/// How many streams the kernels of a kernels.jsonl (the injection library's CUPTI kernel records,
/// one object a line) ran on: distinct (context, stream) pairs, as CUPTI's stream ids are unique
/// within a context only. nullopt when no record has a stream (no kernel activity, or a library
/// older than the field). Copies and memsets are not among the records.
[[nodiscard]] std::optional<std::size_t> kernelStreams(const std::vector<nlohmann::json>& kernels);

}  // namespace argus::evidence
