// Import of Proton's intra-kernel trace (Triton's profiler, instrumentation backend, data="trace")
// as observed region occurrences, for users who already have one.
//
// Proton writes a Chrome trace: one complete event ("ph": "X") per scope occurrence, named after
// the scope, on process "<kernel> Core<sm> CTA<cta>" and thread "warp <w> (line <l>)". Its `ts`
// and `dur` are cycles of its cycle metric divided by the event's "Frequency (MHz)" argument (a
// nominal frequency, 1000 MHz by default: not the SM clock), so the importer multiplies them back
// into cycles: durations are SM cycles (TimeBase::SmClock). Begin times are Proton's, which start
// near 0 in every CTA, so they order one warp's scopes but are not comparable across CTAs. A file
// with several launches of the kernel is imported as one launch (Proton's names do not say which
// launch an event belongs to).
// Scopes that lie inside another scope of the same warp are its children (region path
// "outer/inner"); region IDs are ptx::regionId(kernel, path), the IDs Argus gives the same scopes
// when it reads them from the kernel's TTGIR. Proton scopes carry no iteration or role.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/support/status.h"
#include "argus/trace/decode.h"

namespace argus::trace {

struct ProtonImport {
  TraceMap map;                      ///< Regions by first appearance; time base SmClock.
  DecodedTrace trace;                ///< Occurrences with sm, cta, warp; sorted like decodeTrace's.
  double frequencyMhz = 0;           ///< The nominal frequency Proton divided by.
  std::vector<std::string> kernels;  ///< Every kernel the file holds events of.
};

/// Reads the Proton Chrome trace `doc` for `kernel` ("" = the file's only kernel). Errors name the
/// event index and field: not a Chrome trace, no Proton scope events, several kernels and none
/// chosen or an unknown one (both list the kernels), a process or thread name of another form, a
/// missing or differing frequency, negative times, scopes on one warp that overlap without
/// nesting.
[[nodiscard]] Result<ProtonImport> importProtonTrace(const nlohmann::json& doc,
                                                     std::string_view kernel);

}  // namespace argus::trace
