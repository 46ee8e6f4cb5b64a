// `argus trace`'s engine (argus/session/trace.h).
#include "argus/session/trace.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/backends/trace_dir.h"
#include "argus/evidence/trace_bundle.h"
#include "argus/query/scope.h"
#include "argus/report/timeline.h"
#include "argus/support/process.h"
#include "argus/synthesis/region_timing.h"
#include "argus/trace/proton.h"
#include "argus/workspace/workspace.h"

namespace argus::session {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// `--proton FILE`: Proton's Chrome trace as observed occurrences in SM cycles; with a workspace
/// the file and the timings are kept there as artifacts.
Result<report::TraceTimings> protonTimings(const TraceRequest& o) {
  auto text = readFile(o.proton);
  if (!text) return std::unexpected(text.error());
  const json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded()) return fail("proton", fmt::format("{} is not JSON", o.proton));
  auto imported = trace::importProtonTrace(doc, o.kernel);
  if (!imported) return fail("proton", fmt::format("{}: {}", o.proton, imported.error().message));
  auto scope = query::parseScope(o.scope);
  if (!scope) return std::unexpected(scope.error());
  auto timing = synthesis::occurrenceTiming(imported->trace, imported->map, o.region, *scope);
  if (!timing) return std::unexpected(timing.error());
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
    if (!ws) return std::unexpected(ws.error());
    auto raw = ws->publishArtifact(workspace::NewArtifact{
        "proton_trace", fs::path(o.proton).filename().string(), imported->map.kernel, {}, *text});
    if (!raw) return std::unexpected(raw.error());
    auto kept = ws->publishArtifact(workspace::NewArtifact{"region_timing",
                                                           "proton:" + imported->map.kernel,
                                                           scope->canonical(),
                                                           {},
                                                           (*timing)["duration"].dump()});
    if (!kept) return std::unexpected(kept.error());
    (*timing)["provenance"] = {{"workspace", fs::absolute(o.workspace).string()},
                               {"proton_trace", raw->hash.hex()},
                               {"region_timing", kept->hash.hex()}};
  }
  if (!o.chromeTrace.empty()) {
    if (auto ok =
            writeFile(o.chromeTrace, trace::chromeTrace(imported->trace, imported->map).dump());
        !ok)
      return std::unexpected(ok.error());
  }
  return report::TraceTimings{
      .timing = std::move(*timing),
      .proton = report::TraceTimings::Proton{.file = o.proton,
                                             .kernel = imported->map.kernel,
                                             .occurrences = imported->trace.occurrences.size(),
                                             .frequencyMhz = imported->frequencyMhz}};
}

}  // namespace

Result<report::TraceTimings> traceTimings(const TraceRequest& o) {
  if (!o.proton.empty()) {
    if (!o.dir.empty())
      return fail("trace", "give either a trace directory or --proton FILE, not both");
    if (!o.traceMap.empty())
      return fail("trace",
                  "--trace-map is for trace directories; a Proton trace names its scopes itself");
    return protonTimings(o);
  }
  if (o.dir.empty())
    return fail("trace",
                "no trace directory: give the ARGUS_TRACE_DIR of a run, or --proton FILE for a "
                "Proton trace");
  if (!o.kernel.empty() || !o.workspace.empty())
    return fail("trace", "--kernel and --workspace go with --proton");
  const fs::path dir = o.dir;
  const fs::path mapFile = o.traceMap.empty() ? dir / "trace_map.json" : fs::path(o.traceMap);
  auto mapText = readFile(mapFile);
  if (!mapText)
    return fail("trace", fmt::format("no trace map at {}: pass --trace-map with the "
                                     "trace_map.json `argus build` wrote beside the variant",
                                     mapFile.string()));
  evidence::TraceBundle bundle;
  bundle.traceMap = json::parse(*mapText, nullptr, false);
  if (bundle.traceMap.is_discarded())
    return fail("trace", fmt::format("{} is not JSON", mapFile.string()));
  auto launches = backends::readTraceDir(dir);
  if (!launches) return std::unexpected(launches.error());
  bundle.launches = std::move(*launches);
  bundle.run = {{"trace_dir", dir.string()}};
  auto scope = query::parseScope(o.scope);
  if (!scope) return std::unexpected(scope.error());
  const std::string bytes = evidence::encodeBundle(bundle);
  auto timing = synthesis::regionTiming(bytes, o.region, *scope);
  if (!timing) return std::unexpected(timing.error());
  if (!o.chromeTrace.empty()) {
    auto timeline = report::bundleTimeline(bytes);
    if (!timeline) return std::unexpected(timeline.error());
    if (auto ok = writeFile(o.chromeTrace, timeline->dump()); !ok)
      return std::unexpected(ok.error());
  }
  return report::TraceTimings{.timing = std::move(*timing), .proton = std::nullopt};
}

}  // namespace argus::session
