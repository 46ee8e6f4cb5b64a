// The system_trace adapter: runs a program under libargus_system_trace.so, which records CUPTI
// activity (kernels, copies, launches, NVTX ranges) into the evidence file that
// argus/evidence/system_trace.h describes and reads.
#pragma once

#include <filesystem>

#include "argus/program/program.h"
#include "argus/runtime/executor.h"
#include "argus/support/status.h"

namespace argus::backends {

/// Where the collector finds libargus_system_trace.so: $ARGUS_SYSTEM_TRACE_LIB, else the build
/// tree's copy (compile-time default).
[[nodiscard]] Result<std::filesystem::path> systemTraceLibrary();

/// Registers the `system_trace` Collect executor for a program spec: input `executable`, output
/// `system_trace` (the file above). Runs the spec's run command under the library; the task's
/// config `labels` (object) become ARGUS_SYSTEM_TRACE_LABELS.
void registerSystemTraceExecutors(runtime::ExecutorRegistry& registry, program::ProgramSpec spec);

}  // namespace argus::backends
