// What every per-PC collection (cupti_sass's pc_mapping, cupti_sass and cupti_pc_sampling, and
// ncu) reads before it runs the program: the build's cubin and paint map, its disassembly, and
// the painted == unpainted SASS check of a reference build, into a PC bundle
// (argus/evidence/pc_bundle.h).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "argus/evidence/pc_bundle.h"
#include "argus/program/program.h"
#include "argus/runtime/executor.h"
#include "argus/support/status.h"

namespace argus::collect {

/// The task's config[key] when it is a string, else `fallback`.
[[nodiscard]] std::string configString(const runtime::TaskContext& ctx, const char* key,
                                       std::string fallback);

/// The input artifact `name` as a file: its own file, else its bytes written to `fallback`
/// (memoized inputs may arrive as bytes). Errors (prefixed with `component`) when the task has no
/// such input.
[[nodiscard]] Result<std::filesystem::path> inputFile(runtime::TaskContext& ctx,
                                                      const std::string& name,
                                                      const std::filesystem::path& fallback,
                                                      std::string_view component);

/// Reads the inputs every PC collection needs, runs the identity checks that do not need the
/// run (paint map, disassembly, painted == unpainted SASS) and fills those fields of `bundle`.
/// [thread-safe]
[[nodiscard]] Result<void> preparePcBundle(const program::ProgramSpec& spec,
                                           runtime::TaskContext& ctx, std::string_view component,
                                           evidence::PcBundle& bundle);

}  // namespace argus::collect
