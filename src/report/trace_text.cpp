// Region timings of a trace as text (argus/report/trace.h).
#include "argus/report/trace.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "argus/report/text.h"

namespace argus::report {
namespace {

using json = nlohmann::json;

void timingText(std::string& text, const json& timing, const std::string& heading) {
  auto out = std::back_inserter(text);
  const json& d = timing["duration"];
  const std::string unit = d.value("unit", "ns");
  fmt::format_to(out, "{}\n", heading);
  fmt::format_to(out, "{:<32} {:>9} {:>12} {:>12} {:>12}  iterations\n", "region (observed)",
                 "count", "median", "p95", "total");
  for (const auto& r : d["regions"]) {
    const json& s = r["duration"];
    const std::string path = r.value("path", "");
    const auto depth = static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
    std::string iterations;
    if (r.contains("per_iteration") && r["per_iteration"].is_array() && !r["per_iteration"].empty())
      iterations = fmt::format("{}", r["per_iteration"].size());
    fmt::format_to(out, "{:<32} {:>9} {:>12} {:>12} {:>12}  {}\n",
                   std::string(2 * depth, ' ') + path.substr(path.rfind('/') + 1),
                   s.value("count", 0), formatQuantity(s.value("median", 0.0), unit),
                   formatQuantity(s.value("p95", 0.0), unit),
                   formatQuantity(s.value("total", 0.0), unit), iterations);
  }
  for (const auto& note : d.value("launch_notes", json::array()))
    fmt::format_to(out, "note: {}\n", note.get<std::string>());
}

}  // namespace

std::string traceText(const TraceTimings& timings) {
  std::string text;
  const json& timing = timings.timing;
  if (!timings.proton) {
    const json& d = timing["duration"];
    timingText(text, timing,
               fmt::format("{} launches traced, {} dropped records", d.value("launches", 0),
                           d.value("dropped", 0)));
    return text;
  }
  const auto& p = *timings.proton;
  timingText(text, timing,
             fmt::format("{}: kernel {}, {} occurrences imported from Proton (SM "
                         "cycles; Proton's nominal {} MHz undone)",
                         p.file, p.kernel, p.occurrences, p.frequencyMhz));
  if (timing.contains("provenance"))
    fmt::format_to(std::back_inserter(text), "kept in {}: proton_trace {}, region_timing {}\n",
                   timing["provenance"]["workspace"].get<std::string>(),
                   timing["provenance"]["proton_trace"].get<std::string>(),
                   timing["provenance"]["region_timing"].get<std::string>());
  return text;
}

}  // namespace argus::report
