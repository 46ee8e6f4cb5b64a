// Running a built program variant on a device: the Collect side of region tracing.
//
// The collector runs the program's run command with the variant's executable, loads the
// injection library through CUDA_INJECTION64_PATH (so the user's host code is untouched), and
// packs what the library wrote (one buffer per traced launch plus its index) with the trace map
// into one evidence artifact, a "trace bundle".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/program/program.h"
#include "argus/runtime/executor.h"
#include "argus/support/process.h"
#include "argus/support/status.h"

namespace argus::backends {

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

/// Where the collector finds the injection library: $ARGUS_INJECT_LIB, else beside the argus
/// binary's build tree (compile-time default).
[[nodiscard]] Result<std::filesystem::path> injectionLibrary();

/// The lock file of a device's turn (ARGUS_GPU_TURN, src/backends/region_trace/gpu_turn.h): one
/// per device id in the temporary directory, so every Argus run on the machine shares it.
[[nodiscard]] std::filesystem::path gpuTurnFile(const std::string& device);

/// What a variant's program runs with for the environment variable `name`: the spec's run.env
/// value, else Argus's own environment's (which the program inherits), else nullopt (Argus's
/// choice applies, e.g. CUDA_MODULE_LOADING=EAGER for region-trace runs).
[[nodiscard]] std::optional<std::string> userSetting(const program::ProgramSpec& spec,
                                                     const char* name);

/// A kernels.jsonl record's (start_ns, end_ns - start_ns); nothing when it lacks either time
/// (CUPTI leaves them 0 when it could not take them) or they are out of order.
[[nodiscard]] std::optional<std::pair<std::uint64_t, std::uint64_t>> kernelRecordTimes(
    const nlohmann::json& record);

/// Adds to each launch whose `seq` a kernels.jsonl record (the injection library's CUPTI kernel
/// records) carries its kernel time: info["kernel_ns"] (end - start). Records with seq -1 (the
/// library did not know the launch) and launches without a record are left alone.
void addKernelTimes(std::vector<BundleLaunch>& launches,
                    const std::vector<nlohmann::json>& kernels);

/// How many streams the kernels of a kernels.jsonl (the injection library's CUPTI kernel records,
/// one object a line) ran on: distinct (context, stream) pairs, as CUPTI's stream ids are unique
/// within a context only. nullopt when no record has a stream (no kernel activity, or a library
/// older than the field). Copies and memsets are not among the records.
[[nodiscard]] std::optional<std::size_t> kernelStreams(const std::vector<nlohmann::json>& kernels);

/// The executable input as a file that can run (memoized inputs may arrive as bytes: then they
/// are written to dir/program).
[[nodiscard]] Result<std::filesystem::path> materializeExecutable(const runtime::Artifact& artifact,
                                                                  const std::filesystem::path& dir);

/// What a variant's run command did.
struct ProgramRun {
  std::vector<std::string> argv;  ///< As run (`prefix` words, then the spec's command).
  ProcessResult result;
};

/// Runs the spec's run command with `{exe}` = `exe`, preceded by `prefix` (a profiler's words,
/// e.g. ncu ...), with `environment` added, CUDA_VISIBLE_DEVICES set to the task's device and the
/// task's deadline as the limit; then the spec's correctness check. Errors (prefixed with
/// `component`) when the run cannot start, times out, exits with the skip code or not the success
/// code, lacks the expected stdout text, or fails its check. Appends the output to ctx.log.
/// [thread-safe]
[[nodiscard]] Result<ProgramRun> runVariant(
    const program::ProgramSpec& spec, runtime::TaskContext& ctx, const std::filesystem::path& exe,
    std::vector<std::pair<std::string, std::string>> environment, std::string_view component,
    const std::vector<std::string>& prefix = {});

/// Registers the `region_trace` Collect executor for a program spec: input `executable` (and
/// `trace_map`), output `region_trace` (a trace bundle). Runs the spec's run command with `{exe}`
/// replaced, CUDA_VISIBLE_DEVICES set to the task's device and the injection library loaded;
/// fails (keeping the program's output in the task log) when the run fails its success check.
void registerRunExecutors(runtime::ExecutorRegistry& registry, program::ProgramSpec spec);

}  // namespace argus::backends
