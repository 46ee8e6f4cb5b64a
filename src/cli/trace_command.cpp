// `argus trace DIR`: decode what libargus_inject.so wrote for a variant run by hand (`argus
// build`, then the program under CUDA_INJECTION64_PATH with ARGUS_TRACE_DIR=DIR) into the same
// region timings `argus query` reports.
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/backends/run.h"
#include "argus/backends/trace_dir.h"
#include "argus/query/scope.h"
#include "argus/support/process.h"
#include "argus/synthesis/region_timing.h"
#include "commands.h"

namespace argus::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct TraceOptions {
  std::string dir;
  std::string traceMap;
  std::string region;
  std::string scope;
  std::string chromeTrace;
  bool json = false;
};

std::string ns(double v) {
  if (v >= 1e6) return fmt::format("{:.3f} ms", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.2f} us", v / 1e3);
  return fmt::format("{:.0f} ns", v);
}

int runTrace(const TraceOptions& o) {
  const fs::path dir = o.dir;
  const fs::path mapFile = o.traceMap.empty() ? dir / "trace_map.json" : fs::path(o.traceMap);
  auto mapText = readFile(mapFile);
  if (!mapText)
    return reportError(Error{"trace", fmt::format("no trace map at {}: pass --trace-map with the "
                                                  "trace_map.json `argus build` wrote beside the "
                                                  "variant",
                                                  mapFile.string())});
  backends::TraceBundle bundle;
  bundle.traceMap = json::parse(*mapText, nullptr, false);
  if (bundle.traceMap.is_discarded())
    return reportError(Error{"trace", fmt::format("{} is not JSON", mapFile.string())});
  auto launches = backends::readTraceDir(dir);
  if (!launches) return reportError(launches.error());
  bundle.launches = std::move(*launches);
  bundle.run = {{"trace_dir", dir.string()}};
  auto scope = query::parseScope(o.scope);
  if (!scope) return reportError(scope.error());
  const std::string bytes = backends::encodeBundle(bundle);
  auto timing = synthesis::regionTiming(bytes, o.region, *scope);
  if (!timing) return reportError(timing.error());
  if (!o.chromeTrace.empty()) {
    auto timeline = synthesis::bundleTimeline(bytes);
    if (!timeline) return reportError(timeline.error());
    if (auto ok = writeFile(o.chromeTrace, timeline->dump()); !ok) return reportError(ok.error());
  }
  if (o.json) {
    std::cout << timing->dump(2) << "\n";
    return 0;
  }
  const json& d = (*timing)["duration"];
  fmt::print("{} launches traced, {} dropped records\n", d.value("launches", 0),
             d.value("dropped", 0));
  fmt::print("{:<32} {:>9} {:>12} {:>12} {:>12}  iterations\n", "region (observed)", "count",
             "median", "p95", "total");
  for (const auto& r : d["regions"]) {
    const json& s = r["duration"];
    const std::string path = r.value("path", "");
    const auto depth = static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
    std::string iterations;
    if (r.contains("per_iteration") && r["per_iteration"].is_array() && !r["per_iteration"].empty())
      iterations = fmt::format("{}", r["per_iteration"].size());
    fmt::print("{:<32} {:>9} {:>12} {:>12} {:>12}  {}\n",
               std::string(2 * depth, ' ') + path.substr(path.rfind('/') + 1), s.value("count", 0),
               ns(s.value("median", 0.0)), ns(s.value("p95", 0.0)), ns(s.value("total", 0.0)),
               iterations);
  }
  return 0;
}

}  // namespace

std::vector<Command> addTraceCommands(CLI::App& app) {
  auto o = std::make_shared<TraceOptions>();
  auto* verb = app.add_subcommand(
      "trace",
      "Decode a trace directory written by libargus_inject.so (ARGUS_TRACE_DIR) into region\n"
      "timings, as argus query reports them. Example:\n"
      "  argus build --program examples/tma_gemm/argus.yaml -o /tmp/v\n"
      "  CUDA_INJECTION64_PATH=.../libargus_inject.so ARGUS_TRACE_DIR=/tmp/t /tmp/v/tma_gemm\n"
      "  argus trace /tmp/t --trace-map /tmp/v/trace_map.json");
  verb->add_option("DIR", o->dir, "The ARGUS_TRACE_DIR of the run")->required();
  verb->add_option("--trace-map", o->traceMap,
                   "trace_map.json of the variant (default: DIR/trace_map.json)");
  verb->add_option("--region", o->region, "Only this region's subtree (path)");
  verb->add_option("--scope", o->scope, "Occurrences to keep, e.g. iter=2..5,role=consumer");
  verb->add_option("--chrome-trace", o->chromeTrace, "Also write a Chrome/Perfetto timeline");
  verb->add_flag("--json", o->json, "The timings as JSON (duration and occurrences documents)");
  return {Command{verb, [o] { return runTrace(*o); }}};
}

}  // namespace argus::cli
