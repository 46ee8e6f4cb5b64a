// The trace pass's options (lower_markers_to_trace, src/passes/trace_lowering.cpp), declared once:
// name, type, default, help and allowed values (passes::OptionInfo). The pass parses its config
// with this table (and its typed options struct binds each row); `argus build --pass-option
// KEY=VALUE` and a query's `--trace-option KEY=VALUE` (`trace_options` in its JSON) accept the
// keys of its `user` rows and no others, so that a misspelt one is an error instead of a silently
// untraced choice. The pass checks the values when it runs (its tests check that a bad value of
// every user key is refused by name); the options Argus sets itself (`blocks` from the program
// spec, `capacity_hint`) are not user keys.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "argus/passes/options.h"

namespace argus::trace {

namespace option_values {
inline constexpr std::string_view kParted[] = {"count", "record"};
inline constexpr std::string_view kRecordLayout[] = {"full", "compact"};
inline constexpr std::string_view kRecordPlace[] = {"end", "begin"};
inline constexpr std::string_view kTimeBase[] = {"globaltimer", "clock64"};
inline constexpr std::string_view kStoreCache[] = {"cs", "wb", "cg"};
inline constexpr std::string_view kOverflow[] = {"count", "clamp"};
inline constexpr std::string_view kRecordStore[] = {"leader", "paired"};
}  // namespace option_values

/// Every option of lower_markers_to_trace; the user keys first, in the order errors list them.
inline constexpr std::array<passes::OptionInfo, 9> kTraceOptions = {{
    {.name = "parted",
     .type = "choice",
     .defaultValue = R"("count")",
     .help = "occurrences a warp begins without lane 0: counted as lost, or recorded by the "
             "lowest lane (compact layout)",
     .allowed = option_values::kParted,
     .user = true},
    {.name = "record_layout",
     .type = "choice",
     .defaultValue = R"("compact")",
     .help = "device records: 32-byte TraceRecords, or 16-byte CompactRecords (full when "
             "overflow=count or record_store=paired is given without a layout)",
     .allowed = option_values::kRecordLayout,
     .user = true},
    {.name = "record_place",
     .type = "choice",
     .defaultValue = R"("begin")",
     .help = "where the compact layout takes a leaf region's record place: its end or its "
             "begin marker",
     .allowed = option_values::kRecordPlace,
     .user = true},
    {.name = "time_base",
     .type = "choice",
     .defaultValue = R"("globaltimer")",
     .help = "timestamps: %globaltimer nanoseconds, or %clock64 SM cycles",
     .allowed = option_values::kTimeBase,
     .user = true},
    {.name = "store_cache",
     .type = "choice",
     .defaultValue = R"("cs")",
     .help = "cache operator of the record stores (st.global.<op>)",
     .allowed = option_values::kStoreCache,
     .user = true},
    {.name = "overflow",
     .type = "choice",
     .defaultValue = R"("clamp")",
     .help = "a full slot: records overwrite its last one (sequence-numbered), or add 1 to "
             "header.dropped (full layout)",
     .allowed = option_values::kOverflow,
     .user = true},
    {.name = "record_store",
     .type = "choice",
     .defaultValue = R"("leader")",
     .help = "who stores a record: lane 0, or lanes 0 and 1 one half each when the warp is "
             "converged (full layout)",
     .allowed = option_values::kRecordStore,
     .user = true},
    {.name = "capacity_hint",
     .type = "a positive 32-bit record count per warp",
     .defaultValue = "256",
     .help = "records per warp the host should allocate (in the trace map)"},
    {.name = "blocks",
     .type = R"({"kernel": [x, y, z]} with positive block extents)",
     .defaultValue = "{}",
     .help = "the block shape every launch of a kernel uses (the program spec's kernels[].block)"},
}};

/// The keys users set: the `user` rows of kTraceOptions.
inline constexpr auto kTraceOptionNames = [] {
  constexpr size_t n = [] {
    size_t count = 0;
    for (const auto& o : kTraceOptions) count += o.user ? 1 : 0;
    return count;
  }();
  std::array<std::string_view, n> names{};
  size_t i = 0;
  for (const auto& o : kTraceOptions)
    if (o.user) names[i++] = o.name;
  return names;
}();

}  // namespace argus::trace
