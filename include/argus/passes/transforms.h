// Program transforms on PTX: the passes that derive measurement variants from a program's PTX.
//
// Each pass is a small class in src/passes/ (see pass.h there for the base); this header is the
// entry point other modules use: apply a named list of transforms (a recipe's `transforms`) to a
// module. Passes keep no global state and report failure through the Result.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/ptx/ir.h"
#include "argus/query/scope.h"
#include "argus/support/status.h"

namespace argus::passes {

/// The passes' output version: change it whenever a pass writes other PTX (or maps) for the same
/// input and options, so that workspaces made before do not reuse the older output (it is the
/// `ptx_pass` executor's version, part of its tasks' memo keys). History: "2" (2026-11-30):
/// compact records take a leaf region's place at its begin marker, and a register iteration is
/// copied under %argus_on; "3" (2026-11-30): compact records in the halves order (format.h
/// kLayoutHalves), a leaf region's {begin, iteration} stored at its begin marker; "4"
/// (2026-11-30): a slot's counts in its place 0, a record's second half stored when the warp
/// takes its next place (format.h kLayoutCountFirst).
inline constexpr std::string_view kPassesVersion = "4";

/// Options shared by the transforms of one variant.
struct TransformOptions {
  /// Occurrences to record (scoped trace); `all` records every occurrence.
  query::Scope scope;
  /// Only this kernel (mangled name) is instrumented; empty = every kernel with markers.
  std::string kernel;
  /// Pass-specific settings from the task's config (e.g. {"op": ..., "iteration": ...}).
  nlohmann::json config = nlohmann::json::object();
};

/// What applying transforms produced besides the rewritten module.
struct TransformResult {
  /// Per instrumented kernel, the trace map the decoder needs (argus_trace_map 1: time base,
  /// region index -> id/path, role index -> name, markers). Empty object when nothing traces.
  nlohmann::json traceMap = nlohmann::json::object();
  /// From `paint_ptx`: painted line -> function, statement, opcode, owning regions, original
  /// source position (argus_paint_map 1, see src/passes/paint_ptx.cpp). Empty object otherwise.
  nlohmann::json paintMap = nlohmann::json::object();
  /// From `clone_shared_callees`: every non-entry function of the variant with its original and
  /// calling contexts, and the copies that keep several owners (argus_clone_map 1, see
  /// src/passes/clone_callees.cpp). Empty object otherwise; paint_ptx reads it for `origin`.
  nlohmann::json cloneMap = nlohmann::json::object();
  /// Pass statistics, e.g. {"lower_markers_to_trace": {"markers": 12, "records": 6}}.
  nlohmann::json statistics = nlohmann::json::object();
};

/// Names of the transforms that exist (`strip_markers`, `lower_markers_to_trace`, ...).
[[nodiscard]] std::vector<std::string> availableTransforms();

/// Applies `names` in order to `module`. An unknown name is an error listing the available
/// ones; a pass failure names the pass, the kernel and the PTX line. [thread-safe]
[[nodiscard]] Result<TransformResult> applyTransforms(ptx::Module& module,
                                                      const std::vector<std::string>& names,
                                                      const TransformOptions& options);

}  // namespace argus::passes
