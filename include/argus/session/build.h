// `argus build`'s engine: one measurement variant of a program built by hand (what build_variant
// tasks do inside a query), for benchmarks and for looking at what Argus runs.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/program/region_file.h"
#include "argus/support/status.h"

namespace argus::session {

struct BuildRequest {
  std::string program;                   ///< Program spec (argus.yaml).
  std::string variant = "full_trace";    ///< original | trace_free | full_trace | scoped_trace
  std::string scope;                     ///< Occurrences a scoped_trace records.
  std::string kernel;                    ///< Instrument only this kernel; Triton: the one to dump.
  std::string timeBase;                  ///< globaltimer (default) or clock64.
  std::vector<std::string> passOptions;  ///< KEY=VALUE for the trace pass.
  std::string output;                    ///< Output directory.
  std::string ptx;  ///< Build from this PTX file instead of the front end's output.
  /// Regions derived into the front end's PTX after the spec's own (a Triton program's: its
  /// dumped PTX); not with `ptx`.
  program::DeriveRequest derive;
  /// Give every call path of a non-inlined device function its own byte-identical copy of the
  /// callee in the cubin (sass/callee_copies.h), the map written as callee_copies.json. CUDA
  /// programs only.
  bool copyCallees = false;
  /// Told each step that takes a while before it starts (a Triton script run once to dump its
  /// kernel), in a line for people; none: nothing is told.
  std::function<void(const std::string&)> progress{};
};

/// A built variant.
struct BuiltVariant {
  std::string variant;
  std::string program;  ///< The spec's name.
  std::filesystem::path executable;
  nlohmann::json statistics;  ///< The passes' statistics; empty when they kept none.
};

/// Builds the variant into request.output: the front end's PTX (or request.ptx), the variant's
/// passes, the build, and trace_map.json beside it for traced variants. A malformed pass option or
/// an unknown variant fails before anything is compiled.
[[nodiscard]] Result<BuiltVariant> buildVariant(const BuildRequest& request);

}  // namespace argus::session
