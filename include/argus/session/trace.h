// `argus trace`'s engine: the region timings of a trace directory libargus_inject.so wrote for a
// variant run by hand, or of a trace Proton wrote (triton.profiler, instrumentation backend,
// data="trace"), in SM cycles, the same timings `argus query` reports.
#pragma once

#include <string>

#include "argus/report/trace.h"
#include "argus/support/status.h"

namespace argus::session {

struct TraceRequest {
  std::string dir;          ///< The ARGUS_TRACE_DIR of the run.
  std::string traceMap;     ///< The variant's trace_map.json; empty: DIR/trace_map.json.
  std::string region;       ///< Only this region's subtree (path).
  std::string scope;        ///< Occurrences to keep.
  std::string chromeTrace;  ///< Also write a Chrome/Perfetto timeline here.
  std::string proton;       ///< A Proton Chrome trace to import instead of a directory.
  std::string kernel;       ///< Proton: the kernel (default: the trace's only one).
  std::string workspace;    ///< Proton: keep the trace and the timings here as artifacts.
};

/// Decodes the trace into region timings (and writes the timeline when asked). Fails on a
/// request that mixes the two sources' options, a missing or malformed trace map, a trace that
/// does not decode.
[[nodiscard]] Result<report::TraceTimings> traceTimings(const TraceRequest& request);

}  // namespace argus::session
