// The compile backend: the CPU executors that make a plan's artifacts before anything runs on a
// GPU (docs/architecture.md, pipeline step 4).
//
//   nvcc_ptx       config {target?, kernel?}         -> ptx         front-end PTX of the program
//   ptx_pass       ptx; config {transforms, ...}      -> ptx, trace_map (when the passes made one
//                  scope = the task's scope                          or the task declares it),
//                                                        probe (when declared: insert_forced_wait's
//                                                        statistics["probe"])
//                                                        paint_map (paint_ptx's argus_paint_map 1,
//                                                        when declared or made)
//   build_variant  ptx; config {variant}              -> executable, cubin (files), built by
//                                                        program::buildWithPtx in the task dir;
//                  Triton: ptx, triton_dump          -> executable (a wrapper that runs the
//                                                        script with the PTX substituted)
//   triton_dump    config {kernel} (GPU)              -> ptx, ttgir, triton_dump ({kernel,
//                                                        source_hash}: the override key); runs
//                                                        the Triton script once with dump knobs
//
// Every executor is stateless beyond the immutable CompileContext, so one instance serves
// concurrent tasks. [thread-safe]
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "argus/program/build.h"
#include "argus/program/program.h"
#include "argus/runtime/executor.h"
#include "argus/support/status.h"

namespace argus::backends {

/// What the compile executors know of the program beyond each task's descriptor.
struct CompileContext {
  /// The target (spec, .cu or .ptx) used when a task's config names none.
  std::filesystem::path target;
  /// The program spec that build_variant builds; when empty and `target` is a spec (.yaml), it is
  /// loaded at registration.
  std::optional<program::ProgramSpec> spec;
  /// Architecture for .cu targets (specs carry their own).
  std::string arch = "sm_90a";
  /// How variants are built (line info, extra flags, per-command timeout).
  program::BuildOptions build;
};

/// The records of the four executors (name, description, instance), for listings.
[[nodiscard]] Result<std::vector<runtime::ExecutorRecord>> compileExecutorRecords(
    CompileContext context);

/// Registers nvcc_ptx, triton_dump, ptx_pass and build_variant. Fails when a name is already
/// registered or the spec named by context.target does not load.
[[nodiscard]] Result<void> registerCompileExecutors(runtime::ExecutorRegistry& registry,
                                                    CompileContext context);

}  // namespace argus::backends
