// `argus trace DIR`: decode what libargus_inject.so wrote for a variant run by hand (`argus
// build`, then the program under CUDA_INJECTION64_PATH with ARGUS_TRACE_DIR=DIR) into the same
// region timings `argus query` reports; `argus trace --proton FILE`: the same for a trace Proton
// wrote (triton.profiler, instrumentation backend, data="trace"), in SM cycles.
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/backends/trace_dir.h"
#include "argus/evidence/trace_bundle.h"
#include "argus/query/scope.h"
#include "argus/support/process.h"
#include "argus/synthesis/region_timing.h"
#include "argus/trace/proton.h"
#include "argus/workspace/workspace.h"
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
  std::string proton;
  std::string kernel;
  std::string workspace;
  bool json = false;
};

std::string ns(double v) {
  if (v >= 1e6) return fmt::format("{:.3f} ms", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.2f} us", v / 1e3);
  return fmt::format("{:.0f} ns", v);
}

std::string formatUnits(double v, const std::string& unit) {
  if (unit != "cycles") return ns(v);
  if (v >= 1e6) return fmt::format("{:.3f} Mcyc", v / 1e6);
  if (v >= 1e4) return fmt::format("{:.1f} kcyc", v / 1e3);
  return fmt::format("{:.0f} cyc", v);
}

void printTiming(const json& timing, const std::string& heading) {
  const json& d = timing["duration"];
  const std::string unit = d.value("unit", "ns");
  fmt::print("{}\n", heading);
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
               formatUnits(s.value("median", 0.0), unit), formatUnits(s.value("p95", 0.0), unit),
               formatUnits(s.value("total", 0.0), unit), iterations);
  }
  for (const auto& note : d.value("launch_notes", json::array()))
    fmt::print("note: {}\n", note.get<std::string>());
}

/// `--proton FILE`: Proton's Chrome trace as observed occurrences in SM cycles; with
/// --workspace the file and the timings are kept there as artifacts.
int runProtonImport(const TraceOptions& o) {
  auto text = readFile(o.proton);
  if (!text) return reportError(text.error());
  const json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded())
    return reportError(Error{"proton", fmt::format("{} is not JSON", o.proton)});
  auto imported = trace::importProtonTrace(doc, o.kernel);
  if (!imported)
    return reportError(Error{"proton", fmt::format("{}: {}", o.proton, imported.error().message)});
  auto scope = query::parseScope(o.scope);
  if (!scope) return reportError(scope.error());
  auto timing = synthesis::occurrenceTiming(imported->trace, imported->map, o.region, *scope);
  if (!timing) return reportError(timing.error());
  (*timing)["source"] = {
      {"tool", "proton"},
      {"file", fs::absolute(o.proton).string()},
      {"kernel", imported->map.kernel},
      {"frequency_mhz", imported->frequencyMhz},
      {"note", fmt::format("Proton's ts/dur x its nominal {} MHz = SM cycles (its cycle metric); "
                           "region IDs as Argus reads the kernel's TTGIR",
                           imported->frequencyMhz)}};
  if (!o.workspace.empty()) {
    auto ws = workspace::Workspace::open(o.workspace);
    if (!ws) return reportError(ws.error());
    auto raw = ws->publishArtifact(workspace::NewArtifact{
        "proton_trace", fs::path(o.proton).filename().string(), imported->map.kernel, {}, *text});
    if (!raw) return reportError(raw.error());
    auto kept = ws->publishArtifact(workspace::NewArtifact{"region_timing",
                                                           "proton:" + imported->map.kernel,
                                                           scope->canonical(),
                                                           {},
                                                           (*timing)["duration"].dump()});
    if (!kept) return reportError(kept.error());
    (*timing)["provenance"] = {{"workspace", fs::absolute(o.workspace).string()},
                               {"proton_trace", raw->hash.hex()},
                               {"region_timing", kept->hash.hex()}};
  }
  if (!o.chromeTrace.empty()) {
    if (auto ok =
            writeFile(o.chromeTrace, trace::chromeTrace(imported->trace, imported->map).dump());
        !ok)
      return reportError(ok.error());
  }
  if (o.json) {
    std::cout << timing->dump(2) << "\n";
    return 0;
  }
  printTiming(*timing, fmt::format("{}: kernel {}, {} occurrences imported from Proton (SM "
                                   "cycles; Proton's nominal {} MHz undone)",
                                   o.proton, imported->map.kernel,
                                   imported->trace.occurrences.size(), imported->frequencyMhz));
  if (timing->contains("provenance"))
    fmt::print("kept in {}: proton_trace {}, region_timing {}\n",
               (*timing)["provenance"]["workspace"].get<std::string>(),
               (*timing)["provenance"]["proton_trace"].get<std::string>(),
               (*timing)["provenance"]["region_timing"].get<std::string>());
  return 0;
}

int runTrace(const TraceOptions& o) {
  if (!o.proton.empty()) {
    if (!o.dir.empty())
      return reportError(
          Error{"trace", "give either a trace directory or --proton FILE, not both"});
    if (!o.traceMap.empty())
      return reportError(Error{"trace",
                               "--trace-map is for trace directories; a Proton trace "
                               "names its scopes itself"});
    return runProtonImport(o);
  }
  if (o.dir.empty())
    return reportError(Error{"trace",
                             "no trace directory: give the ARGUS_TRACE_DIR of a run, or "
                             "--proton FILE for a Proton trace"});
  if (!o.kernel.empty() || !o.workspace.empty())
    return reportError(Error{"trace", "--kernel and --workspace go with --proton"});
  const fs::path dir = o.dir;
  const fs::path mapFile = o.traceMap.empty() ? dir / "trace_map.json" : fs::path(o.traceMap);
  auto mapText = readFile(mapFile);
  if (!mapText)
    return reportError(Error{"trace", fmt::format("no trace map at {}: pass --trace-map with the "
                                                  "trace_map.json `argus build` wrote beside the "
                                                  "variant",
                                                  mapFile.string())});
  evidence::TraceBundle bundle;
  bundle.traceMap = json::parse(*mapText, nullptr, false);
  if (bundle.traceMap.is_discarded())
    return reportError(Error{"trace", fmt::format("{} is not JSON", mapFile.string())});
  auto launches = backends::readTraceDir(dir);
  if (!launches) return reportError(launches.error());
  bundle.launches = std::move(*launches);
  bundle.run = {{"trace_dir", dir.string()}};
  auto scope = query::parseScope(o.scope);
  if (!scope) return reportError(scope.error());
  const std::string bytes = evidence::encodeBundle(bundle);
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
  printTiming(*timing, fmt::format("{} launches traced, {} dropped records", d.value("launches", 0),
                                   d.value("dropped", 0)));
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
      "  argus trace /tmp/t --trace-map /tmp/v/trace_map.json\n"
      "A trace Proton wrote (triton.profiler, backend=\"instrumentation\", data=\"trace\") is\n"
      "imported the same way, as observed occurrences in SM cycles:\n"
      "  argus trace --proton run.chrome_trace [--kernel K] [--workspace DIR]");
  verb->add_option("DIR", o->dir, "The ARGUS_TRACE_DIR of the run");
  verb->add_option("--proton", o->proton,
                   "Import this Proton Chrome trace instead (scopes become regions, with the IDs "
                   "Argus gives them in the kernel's TTGIR)");
  verb->add_option("--kernel", o->kernel, "--proton: the kernel (default: the trace's only one)");
  verb->add_option("--workspace", o->workspace,
                   "--proton: keep the trace and the timings in this workspace as artifacts");
  verb->add_option("--trace-map", o->traceMap,
                   "trace_map.json of the variant (default: DIR/trace_map.json)");
  verb->add_option("--region", o->region, "Only this region's subtree (path)");
  verb->add_option("--scope", o->scope, "Occurrences to keep, e.g. iter=2..5,role=consumer");
  verb->add_option("--chrome-trace", o->chromeTrace, "Also write a Chrome/Perfetto timeline");
  verb->add_flag("--json", o->json, "The timings as JSON (duration and occurrences documents)");
  return {Command{verb, [o] { return runTrace(*o); }}};
}

}  // namespace argus::cli
