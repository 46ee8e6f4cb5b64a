// Reading what libargus_inject.so wrote into ARGUS_TRACE_DIR: launches.jsonl (one JSON line per
// launch it saw) and launch-<seq>.bin (the buffer of each traced launch).
#pragma once

#include <filesystem>
#include <vector>

#include "argus/evidence/trace_bundle.h"
#include "argus/support/status.h"

namespace argus::backends {

/// Every launch of a trace directory, in index order, with its buffer when it was traced.
/// Errors: no launches.jsonl (the library did not run: check CUDA_INJECTION64_PATH), a line
/// that is not JSON, a buffer file that cannot be read. [thread-safe]
[[nodiscard]] Result<std::vector<evidence::BundleLaunch>> readTraceDir(
    const std::filesystem::path& dir);

}  // namespace argus::backends
