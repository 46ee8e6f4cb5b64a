// System-trace evidence: what libargus_system_trace.so (argus/backends/system_trace.h) writes from
// CUPTI activity records, the reader that joins it, and its Chrome/Perfetto export.
//
// File format ("argus.system_trace", version 1): JSON lines, one object per line, each with a
// `type`. The first line is the header; the rest arrive in CUPTI buffer order (not time order).
//   {"type":"header","format":"argus.system_trace","version":1,"pid":P,"cupti":"libcupti.so..",
//    "labels":{...}}                        labels: ARGUS_SYSTEM_TRACE_LABELS (k=v,k=v) of the run
//   {"type":"kernel","name":N,"device":D,"context":C,"stream":S,"correlation":I,"start_ns":T0,
//    "end_ns":T1,"grid":[x,y,z],"block":[x,y,z],"registers":R,"static_shared":B,
//    "dynamic_shared":B}
//   {"type":"memcpy","kind":"htod|dtoh|dtod|htoh|peer|...","bytes":B,"device":D,"stream":S,
//    "correlation":I,"start_ns":T0,"end_ns":T1}
//   {"type":"memset","bytes":B,"value":V,"device":D,"stream":S,"correlation":I,"start_ns":T0,
//    "end_ns":T1}
//   {"type":"api","domain":"runtime|driver","cbid":K,"correlation":I,"thread":TID,
//    "start_ns":T0,"end_ns":T1}           the host call that launched a GPU operation
//   {"type":"marker","flag":"start|end|instant","id":M,"thread":TID,"timestamp_ns":T,
//    "name":N,"domain":DOM}                NVTX push/pop and start/end ranges (CUPTI MARKER)
//   {"type":"dropped","count":N}           records CUPTI could not store
// All times are CUPTI timestamps (ns, one clock for host and GPU records). A GPU operation and
// the API call that launched it share `correlation`; the earliest API start with that id is the
// launch's enter time, so launch-to-start latency = start_ns - that time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/support/status.h"

namespace argus::evidence {

/// An NVTX range, paired from its start and end markers.
struct TraceRange {
  std::string name;    ///< The message of the push / start.
  std::string domain;  ///< NVTX domain ("" for the default domain).
  uint64_t thread = 0;
  uint64_t id = 0;
  int64_t startNs = 0;
  int64_t endNs = 0;
  int depth = 0;  ///< Nesting depth on its thread (0 = outermost).
  /// `key=value` words of the name (e.g. "argus.comm chunk_bytes=1048576 sms=16").
  std::map<std::string, std::string> labels;
};

/// One GPU operation: a kernel, a memcpy or a memset.
struct TraceOp {
  enum class Kind { Kernel, Memcpy, Memset };
  Kind kind = Kind::Kernel;
  std::string name;      ///< Kernel name; "memcpy <kind>" / "memset" otherwise.
  std::string copyKind;  ///< memcpy only (htod, dtoh, dtod, ...).
  uint32_t device = 0;
  uint32_t stream = 0;
  uint32_t correlation = 0;
  int64_t startNs = 0;
  int64_t endNs = 0;
  uint64_t bytes = 0;               ///< memcpy / memset payload; 0 for kernels.
  uint32_t grid[3] = {0, 0, 0};     ///< kernels only
  uint32_t block[3] = {0, 0, 0};    ///< kernels only
  std::optional<int64_t> launchNs;  ///< Enter time of the launching API call, when recorded.
  std::optional<uint64_t> thread;   ///< Host thread of that call.
  bool nccl = false;                ///< Kernel named like an NCCL collective (isNcclKernelName).
  int range = -1;  ///< Innermost NVTX range (index into SystemTrace::ranges) around the launch.

  [[nodiscard]] int64_t durationNs() const { return endNs - startNs; }
  /// Launch-to-start latency (start minus API enter), when the API call was recorded.
  [[nodiscard]] std::optional<int64_t> launchLatencyNs() const {
    if (!launchNs) return std::nullopt;
    return startNs - *launchNs;
  }
};

/// A joined system trace of one run.
struct SystemTrace {
  nlohmann::json header;           ///< The header line.
  std::vector<TraceOp> ops;        ///< Sorted by start time.
  std::vector<TraceRange> ranges;  ///< Sorted by start time.
  uint64_t dropped = 0;            ///< Records CUPTI dropped.
  uint64_t unmatchedMarkers = 0;   ///< Start markers without an end (or ends without a start).
};

/// True for NCCL's device kernels: names starting `ncclDevKernel` or `ncclKernel` (possibly
/// mangled, e.g. `_Z..ncclDevKernel_AllGather_RING_LL..`). [thread-safe]
[[nodiscard]] bool isNcclKernelName(std::string_view name);

/// The `key=value` words of an NVTX message. [thread-safe]
[[nodiscard]] std::map<std::string, std::string> parseLabels(std::string_view message);

/// Parses and joins a system-trace file's text: pairs markers into ranges, attaches each GPU
/// operation's launch time (earliest API record with its correlation id) and innermost enclosing
/// range on the launching thread. Errors name the line. [thread-safe]
[[nodiscard]] Result<SystemTrace> parseSystemTrace(std::string_view jsonl);
/// parseSystemTrace of a file.
[[nodiscard]] Result<SystemTrace> readSystemTrace(const std::filesystem::path& file);

/// Chrome/Perfetto trace-event JSON: one process per device with one track (tid) per stream for
/// GPU operations, and a "host" process with one track per thread for NVTX ranges. Times in µs.
[[nodiscard]] nlohmann::json systemTraceChrome(const SystemTrace& trace);

/// The same for the traces of several processes of one run (one per GPU), on one timeline:
/// process p > 0 gets its own Chrome processes (GPU d of process p, host of process p), so no
/// two processes share a track.
[[nodiscard]] nlohmann::json systemTraceChrome(const std::vector<SystemTrace>& processes);

}  // namespace argus::evidence
