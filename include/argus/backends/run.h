// Running a built program variant on a device: the Collect side of region tracing.
//
// The collector runs the program's run command with the variant's executable, loads the
// injection library through CUDA_INJECTION64_PATH (so the user's host code is untouched), and
// packs what the library wrote (one buffer per traced launch plus its index) with the trace map
// into one evidence artifact, a "trace bundle".
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/program/program.h"
#include "argus/runtime/executor.h"
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
  nlohmann::json run;       ///< {exit_code, device, command, stdout_tail, stderr_tail, errors}
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

/// Registers the `region_trace` Collect executor for a program spec: input `executable` (and
/// `trace_map`), output `region_trace` (a trace bundle). Runs the spec's run command with `{exe}`
/// replaced, CUDA_VISIBLE_DEVICES set to the task's device and the injection library loaded;
/// fails (keeping the program's output in the task log) when the run fails its success check.
void registerRunExecutors(runtime::ExecutorRegistry& registry, program::ProgramSpec spec);

}  // namespace argus::backends
