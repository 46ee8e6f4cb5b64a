// Running a program variant for a Collect adapter: its run command with `{exe}` replaced, the
// task's device and deadline, the spec's correctness check. Every adapter that runs the program
// (region_trace, cupti_sass, ncu, system_trace) runs it through here.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "argus/program/program.h"
#include "argus/runtime/executor.h"
#include "argus/support/process.h"
#include "argus/support/status.h"

namespace argus::collect {

/// The last `lines` lines of `text` (all of it when it has fewer), for run records and task logs.
[[nodiscard]] std::string outputTail(const std::string& text, std::size_t lines);

/// What a variant's program runs with for the environment variable `name`: the spec's run.env
/// value, else Argus's own environment's (which the program inherits), else nullopt (Argus's
/// choice applies, e.g. CUDA_MODULE_LOADING=EAGER for region-trace runs).
[[nodiscard]] std::optional<std::string> userSetting(const program::ProgramSpec& spec,
                                                     const char* name);

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

}  // namespace argus::collect
