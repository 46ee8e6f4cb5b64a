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

/// Where the collector finds the injection library: $ARGUS_INJECT_LIB, else beside the argus
/// binary's build tree (compile-time default).
[[nodiscard]] Result<std::filesystem::path> injectionLibrary();

/// The lock file of a device's turn (ARGUS_GPU_TURN, src/backends/region_trace/gpu_turn.h): one
/// per device id in the temporary directory, so every Argus run on the machine shares it.
[[nodiscard]] std::filesystem::path gpuTurnFile(const std::string& device);

/// Registers the `region_trace` Collect executor for a program spec: input `executable` (and
/// `trace_map`), output `region_trace` (a trace bundle). Runs the spec's run command with `{exe}`
/// replaced, CUDA_VISIBLE_DEVICES set to the task's device and the injection library loaded;
/// fails (keeping the program's output in the task log) when the run fails its success check.
void registerRunExecutors(runtime::ExecutorRegistry& registry, program::ProgramSpec spec);

}  // namespace argus::backends
