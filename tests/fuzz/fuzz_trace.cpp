// Argus's own trace records and Proton's: a trace bundle (the region_trace collector's artifact)
// is decoded, re-encoded and decoded again; each launch's buffer is decoded against its kernel's
// trace map and summarised the ways synthesis and `argus trace` do; region_timing runs on the
// whole bundle. A JSON input is tried as a Proton Chrome trace and as the cupti_activity
// document kernel timing reads.
#include <string>

#include <nlohmann/json.hpp>

#include "argus/evidence/trace_bundle.h"
#include "argus/query/scope.h"
#include "argus/synthesis/kernel_timing.h"
#include "argus/synthesis/region_timing.h"
#include "argus/trace/decode.h"
#include "argus/trace/proton.h"
#include "fuzz_util.h"

namespace {

void summarise(const argus::trace::DecodedTrace& trace, const argus::trace::TraceMap& map) {
  using namespace argus::trace;
  auto stats = regionStatistics(trace, map);
  (void)statisticsJson(stats, trace, map);
  (void)chromeTrace(trace, map, ChromeGrouping::Sm);
  (void)chromeTrace(trace, map, ChromeGrouping::Cta);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace argus;
  if (size > fuzz::kMaxInput) return -1;
  auto bytes = fuzz::text(data, size);
  const query::Scope all{};
  if (auto bundle = evidence::decodeBundle(bytes)) {
    auto again = evidence::decodeBundle(evidence::encodeBundle(*bundle));
    fuzz::require(again.has_value(), "an encoded bundle decodes");
    fuzz::require(again->launches.size() == bundle->launches.size(),
                  "a bundle round trip keeps its launches");
    for (const auto& launch : bundle->launches) {
      if (!launch.info.is_object() || !bundle->traceMap.is_object()) continue;
      auto kernel = launch.info.find("kernel");
      if (kernel == launch.info.end() || !kernel->is_string()) continue;
      auto mapJson = bundle->traceMap.find(kernel->get<std::string>());
      if (mapJson == bundle->traceMap.end()) continue;
      auto map = trace::parseTraceMap(*mapJson);
      if (!map) continue;
      auto buffer = std::as_bytes(std::span(launch.buffer.data(), launch.buffer.size()));
      if (auto decoded = trace::decodeTrace(buffer, *map)) summarise(*decoded, *map);
    }
    (void)synthesis::regionTiming(bytes, "", all);
    return 0;
  }
  auto doc = nlohmann::json::parse(bytes, nullptr, false);
  if (doc.is_discarded()) return 0;
  (void)synthesis::kernelTiming(bytes, all);  // a cupti_activity document
  if (auto imported = trace::importProtonTrace(doc, "")) {
    summarise(imported->trace, imported->map);
    (void)synthesis::occurrenceTiming(imported->trace, imported->map, "", all);
  }
  return 0;
}
