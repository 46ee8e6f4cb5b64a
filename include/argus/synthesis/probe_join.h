// Synthesis of derived async-op latencies: joins a forced-wait probe run (insert_forced_wait +
// lower_markers_to_trace scoped to iter=i) with the reference full-trace run, iteration by
// iteration (docs/architecture.md "Synthesis": exact joins on scope coordinates, never timestamps
// across runs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/support/status.h"
#include "argus/trace/decode.h"

namespace argus::synthesis {

/// One decoded traced launch with the trace map it was decoded with.
struct TracedRun {
  const trace::DecodedTrace* trace = nullptr;
  const trace::TraceMap* map = nullptr;
};

/// What to join: the probe description that insert_forced_wait reported
/// (TransformResult::statistics["probe"]: op, iteration, region.id, iteration_region.id, ...).
struct ProbeJoinRequest {
  nlohmann::json probe;
  std::vector<TracedRun> probeRuns;      ///< Launches of the probe variant.
  std::vector<TracedRun> referenceRuns;  ///< Launches of the reference (full trace) variant.
};

/// Joins one probe (op k, iteration i) with the reference. Regions are matched by region ID
/// (never by index: the probe variant has one region more), occurrences by (iteration, CTA,
/// warp). Output JSON, times in the trace's time-base units:
///   latency: the probe region's durations (count, median, p95, min, max, mean) over the
///            warps/CTAs that recorded it in iteration i;
///   iteration_probe / iteration_reference: the iteration region's durations in iteration i,
///            over the (CTA, warp) pairs that recorded the probe and recorded the iteration in
///            both runs (`joined` counts them);
///   exposed = median over pairs of (probe iteration - reference iteration) duration;
///   slack (overlap) = max(0, median latency - exposed): the part of the latency the reference
///            run hid behind other work; `slack_clamped` says when the difference was negative
///            (the forced wait cost more than the op's latency, e.g. run-to-run noise).
/// Qualification `derived`; `provenance` is left null for the caller to fill.
/// Errors: missing probe fields, time bases that differ between runs, no probe occurrence in
/// iteration i, no reference occurrence of the iteration region for the joined pairs.
[[nodiscard]] Result<nlohmann::json> probeJoin(const ProbeJoinRequest& request);

/// One probe collection's process, as its trace bundle's run record describes it.
struct ProbeProcess {
  std::string collect;    ///< The collect task.
  std::string device;     ///< Where it ran ("" unknown).
  bool tookTurn = false;  ///< It waited for the device's turn (gpu_turn in the run record).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> kernels;  ///< [start, end) ns, CUPTI clock
  /// When the process ran, [start, end) ns since the epoch; {0, 0} unknown (taken as overlapping
  /// every other process of its device).
  std::pair<std::uint64_t, std::uint64_t> lifetime{0, 0};
  /// Its turn events (turn_timeline.jsonl: set_up_asked, set_up_held, turn_asked, turn_taken,
  /// traced_launch_returned, trace_written, exit_handler, turn_released) in time order, ns on
  /// CUPTI's clock.
  std::vector<std::pair<std::string, std::uint64_t>> turnEvents = {};
  /// System clock minus CUPTI's clock in this process, ns (from its turn events); nullopt when
  /// unknown, and then its lifetime cannot be set beside kernels.
  std::optional<std::int64_t> epochMinusCupti = std::nullopt;
};

/// Isolation of probes that ran as concurrent processes: no kernel of one may overlap a kernel of
/// another on the same device. Returns {processes, turns_taken, shared_device: [devices with more
/// than one probe], kernels_checked, unchecked: [collects without kernel intervals], unverified:
/// [collects that ran at the same time as another probe of their device, without kernel
/// intervals or without a turn], overlaps: [{first,
/// second, device, first_kernel: [s, e], second_kernel: [s, e]}], one per pair of processes,
/// neighbours: [...]}. `neighbours` has, for each process with kernels and a known clock offset,
/// what the other processes of its device were doing outside their turns while its kernels ran
/// (from its first kernel's start to its last one's end): {collect, kernels: [s, e], beside:
/// [{collect, phase: "starting" (process start to its set-up hold: outside every hold) |
/// "ending" (its turn given up to its end: under the shared teardown hold unless
/// ARGUS_GPU_TURN_TEARDOWN=none), overlap_ns}], last_exit: {collect, before_ns} (the latest other
/// process to end before its kernels, and how long before) or null, timeline: [[event, ns since its
/// first turn event]] (where its time under the holds went)}. Informational: it decides nothing.
[[nodiscard]] nlohmann::json probeIsolation(const std::vector<ProbeProcess>& processes);

/// A probe process runs with one hardware work queue (CUDA_DEVICE_MAX_CONNECTIONS=1,
/// backends/run.cpp) unless the program spec sets it: the caution to report beside its latency
/// when its run record ({work_queues, kernel_streams}) shows kernels on more than one stream,
/// which one queue may have serialized where the reference run overlapped them; nullopt when
/// there is nothing to say.
[[nodiscard]] std::optional<std::string> workQueueCaution(const nlohmann::json& run);

}  // namespace argus::synthesis
