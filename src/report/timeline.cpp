// Timeline export (argus/report/timeline.h).
#include "argus/report/timeline.h"

#include <cstddef>
#include <span>

#include "argus/evidence/system_trace.h"
#include "argus/evidence/trace_bundle.h"
#include "argus/trace/decode.h"

namespace argus::report {

using json = nlohmann::json;

Result<json> bundleTimeline(std::string_view bundleBytes) {
  auto bundle = evidence::decodeBundle(bundleBytes);
  if (!bundle) return std::unexpected(bundle.error());
  json events = json::array();
  for (const auto& launch : bundle->launches) {
    if (launch.buffer.empty()) continue;
    const std::string kernel = launch.info.value("kernel", "");
    if (!bundle->traceMap.contains(kernel)) continue;
    auto map = trace::parseTraceMap(bundle->traceMap[kernel]);
    if (!map) return std::unexpected(map.error());
    auto decoded = trace::decodeTrace(
        std::as_bytes(std::span(launch.buffer.data(), launch.buffer.size())), *map);
    if (!decoded) return std::unexpected(decoded.error());
    json trace = trace::chromeTrace(*decoded, *map);
    for (auto& e : trace["traceEvents"]) events.push_back(e);
  }
  return json{{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

json queryTimeline(const std::vector<CollectionEvidence>& collections) {
  json events = json::array();
  for (const auto& c : collections) {
    if (!c.regionTrace.empty())
      if (auto timeline = bundleTimeline(c.regionTrace))
        for (auto& e : (*timeline)["traceEvents"]) events.push_back(std::move(e));
    std::vector<evidence::SystemTrace> processes;
    for (const auto& [name, bytes] : c.systemTraces) {
      auto trace = evidence::parseSystemTrace(bytes);
      if (!trace) continue;
      // The first process's trace first: it keeps the plain track names.
      if (name == "system_trace")
        processes.insert(processes.begin(), std::move(*trace));
      else
        processes.push_back(std::move(*trace));
    }
    if (!processes.empty())
      for (auto& e : evidence::systemTraceChrome(processes)["traceEvents"])
        events.push_back(std::move(e));
  }
  return json{{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

}  // namespace argus::report
