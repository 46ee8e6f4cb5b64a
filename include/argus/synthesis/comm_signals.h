// Communication signals from a system trace (argus/evidence/system_trace.h): per-chunk
// communication time, launch overhead and throughput, grouped by chunk size and by the number of
// SMs reserved for communication.
//
// A communication operation is a GPU operation that is either an NCCL kernel (by name) or launched
// inside an NVTX range whose name starts with "argus.comm" (the bench's stand-in marks each chunk
// so). One chunk is one such range instance (all operations launched inside it), or one NCCL
// kernel launched outside any such range. Its size and SM reservation come from the range's
// labels `bytes=` and `sms=`; failing those, a memcpy's own byte count (sms 0: copy engine) and an
// NCCL kernel's grid size (NCCL runs one CTA per channel).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/evidence/system_trace.h"
#include "argus/runtime/executor.h"
#include "argus/support/status.h"

namespace argus::synthesis {

/// One communication chunk as recorded.
struct CommChunk {
  uint64_t bytes = 0;
  int sms = 0;
  std::string source;     ///< "nccl" or the range's `impl=` label (e.g. copy_kernel, memcpy)
  int64_t startNs = 0;    ///< First operation's GPU start.
  int64_t endNs = 0;      ///< Last operation's GPU end.
  int64_t launchNs = -1;  ///< First operation's API enter (-1: not recorded).
  int ops = 0;
  bool queued = false;  ///< Launched while an earlier chunk still ran (its wait is no overhead).
  [[nodiscard]] int64_t timeNs() const { return endNs - startNs; }
};

/// Statistics of the chunks of one (bytes, sms, source) group.
struct CommGroup {
  uint64_t bytes = 0;
  int sms = 0;
  std::string source;
  size_t chunks = 0;
  double meanNs = 0, medianNs = 0, minNs = 0;  ///< per-chunk GPU time
  /// Median launch-to-start of the chunks not queued behind another (-1: none recorded).
  double launchOverheadNs = -1;
  double chunkThroughputGBs = 0;  ///< bytes / median chunk time
  double sustainedGBs = 0;        ///< all bytes / (last end - first start) of the group's chunks
};

struct CommSignals {
  std::vector<CommChunk> chunks;  ///< In start order.
  std::vector<CommGroup> groups;  ///< Sorted by (source, sms, bytes).
};

/// Finds the communication chunks of `trace` and their statistics. [thread-safe]
[[nodiscard]] CommSignals commSignals(const evidence::SystemTrace& trace);

/// The groups of several processes of one run (one per GPU) as one: a collective is as slow as
/// its slowest rank, so each group's times and launch overhead are the largest process's, its
/// chunk count the sum, and its throughputs follow the slowest median. [thread-safe]
[[nodiscard]] std::vector<CommGroup> slowestProcess(
    const std::vector<std::vector<CommGroup>>& processes);

/// JSON of the signals: {comm_chunk_time, launch_overhead, comm_throughput} as lists of groups,
/// each entry with bytes, sms, source, and its values (ns or GB/s), qualification observed
/// (throughput derived: bytes come from labels).
[[nodiscard]] nlohmann::json commSignalsJson(const CommSignals& signals);

/// The groups back from commSignalsJson's form (or from an `argus query --json` report's
/// signals, each signal's `value`): chunk times from comm_chunk_time, launch overhead from
/// launch_overhead where present. Throughputs are recomputed from bytes and median time.
[[nodiscard]] Result<std::vector<CommGroup>> commGroupsFromJson(const nlohmann::json& chunkTime,
                                                                const nlohmann::json& overhead);

/// Kernel timeline summary: per kernel name count, total/mean GPU time and mean launch-to-start.
[[nodiscard]] nlohmann::json kernelTimelineJson(const evidence::SystemTrace& trace);

/// Registers `system_trace_signals`: input `evidence` (a system trace), outputs kernel_timeline,
/// launch_overhead, comm_chunk_time and comm_throughput.
void registerCommSignalsExecutor(runtime::ExecutorRegistry& registry);

}  // namespace argus::synthesis
