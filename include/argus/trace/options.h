// The trace pass's options that a user sets (lower_markers_to_trace,
// src/passes/trace_lowering.cpp): `argus build --pass-option KEY=VALUE` and a query's
// `--trace-option KEY=VALUE` (`trace_options` in its JSON) accept these keys and no others, so that
// a misspelt one is an error instead of a silently untraced choice. The pass reads each (its tests
// check that a bad value of every key listed here is refused by name); the options Argus sets
// itself (`blocks` from the program spec, `capacity_hint`) are not listed. Values are checked by
// the pass when it runs.
#pragma once

#include <array>
#include <string_view>

namespace argus::trace {

inline constexpr std::array<std::string_view, 7> kTraceOptionNames = {
    "parted",      "record_layout", "record_place", "time_base",
    "store_cache", "overflow",      "record_store"};

}  // namespace argus::trace
