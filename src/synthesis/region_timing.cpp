#include "argus/synthesis/region_timing.h"

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "argus/evidence/trace_bundle.h"
#include "argus/support/json_number.h"
#include "argus/trace/decode.h"
#include "evidence_executor.h"

namespace argus::synthesis {
namespace {

using json = nlohmann::json;

bool inSubtree(const std::string& path, const std::string& root) {
  return root.empty() || path == root || path.starts_with(root + "/");
}

/// Keeps occurrences the scope selects; role and the integer coordinates are checked here,
/// launch is checked per launch by the caller.
bool selected(const trace::Occurrence& o, const trace::TraceMap& map, const query::Scope& scope) {
  using query::Coordinate;
  for (const auto& clause : scope.clauses) {
    switch (clause.coordinate) {
      case Coordinate::Role:
        if (!o.role || *o.role >= map.roles.size() || !clause.contains(map.roles[*o.role]))
          return false;
        break;
      case Coordinate::Iteration:
        if (!o.iteration || !clause.contains(static_cast<int64_t>(*o.iteration))) return false;
        break;
      case Coordinate::Sm:
        if (!clause.contains(static_cast<int64_t>(o.sm))) return false;
        break;
      case Coordinate::Cta:
        if (!clause.contains(static_cast<int64_t>(o.cta))) return false;
        break;
      case Coordinate::Warp:
        if (!clause.contains(static_cast<int64_t>(o.warp))) return false;
        break;
      case Coordinate::Warpgroup:
        if (!clause.contains(static_cast<int64_t>(o.warp / 4))) return false;
        break;
      case Coordinate::Launch:
        break;
    }
  }
  return true;
}

/// Launch notes a timing document keeps (a program may launch a traced kernel many times).
constexpr size_t kMaxNotes = 8;

/// The duration and occurrences documents of `all` (already filtered), for `regionPath`'s subtree.
/// `notes`: what the injection library said of the launches (why records were dropped).
json timingJson(const trace::DecodedTrace& all, const trace::TraceMap& map,
                const std::string& regionPath, size_t launches,
                const std::vector<std::string>& notes = {},
                const std::vector<uint64_t>& kernelNs = {}) {
  auto stats = trace::regionStatistics(all, map);
  json statistics = trace::statisticsJson(stats, all, map);
  if (!notes.empty()) statistics["launch_notes"] = notes;
  // The traced launches' own kernel times (CUPTI, the traced run): against kernel_duration's
  // untraced ones, what the trace cost the kernel.
  if (!kernelNs.empty()) {
    const trace::DurationStats k = trace::durationStats(kernelNs);
    statistics["traced_kernel"] = {
        {"count", k.count}, {"mean", k.mean}, {"median", k.median}, {"min", k.min}, {"max", k.max}};
  }
  // Only the queried subtree.
  json regions = json::array();
  for (const auto& r : statistics["regions"])
    if (inSubtree(r.value("path", ""), regionPath)) regions.push_back(r);
  statistics["regions"] = regions;
  statistics["launches"] = launches;
  json occurrences = json::array();
  for (const auto& r : regions)
    occurrences.push_back({{"path", r.value("path", "")},
                           {"id", r.value("id", "")},
                           {"count", integerOr(r["duration"], "count", 0)}});
  return json{{"duration", statistics},
              {"occurrences",
               {{"regions", occurrences}, {"launches", launches}, {"dropped", all.dropped}}}};
}

}  // namespace

Result<json> occurrenceTiming(const trace::DecodedTrace& trace, const trace::TraceMap& map,
                              const std::string& regionPath, const query::Scope& scope) {
  trace::DecodedTrace kept;
  kept.header = trace.header;
  kept.dropped = trace.dropped;
  kept.invalidRecords = trace.invalidRecords;
  for (const auto& o : trace.occurrences)
    if (inSubtree(map.regions[o.region].path, regionPath) && selected(o, map, scope))
      kept.occurrences.push_back(o);
  if (kept.occurrences.empty())
    return fail("synthesis",
                fmt::format("no occurrence of `{}` that the scope `{}` selects",
                            regionPath.empty() ? "any region" : regionPath, scope.canonical()));
  return timingJson(kept, map, regionPath, 1);
}

namespace {

/// The occurrences of a bundle's traced launches that a query keeps, with what timingJson
/// reports of the launches.
struct Collected {
  trace::DecodedTrace all;
  trace::TraceMap map;
  size_t launches = 0;
  std::vector<std::string> notes;
  std::vector<uint64_t> kernelNs;  ///< The selected launches' CUPTI kernel times.
};

/// Decodes and selects (regionTiming's first half), throwing json::exception on a launch field
/// of the wrong type.
Result<Collected> collectFields(std::string_view bundleBytes, const std::string& regionPath,
                                const query::Scope& scope) {
  auto bundle = evidence::decodeBundle(bundleBytes);
  if (!bundle) return std::unexpected(bundle.error());
  const query::Clause* launchClause = scope.clause(query::Coordinate::Launch);
  std::optional<trace::TraceMap> map;
  trace::DecodedTrace all;
  int64_t launchIndex = -1;
  size_t launches = 0;
  std::vector<std::string> notes;
  std::vector<uint64_t> kernelNs;  // the selected launches' CUPTI kernel times
  size_t noted = 0;                // launches with a note
  // Programs launch other kernels too (CUTLASS's examples fill and check with reference
  // kernels): the timing is of the first traced kernel's launches; the others are counted.
  std::string timedKernel;
  std::map<std::string, size_t> otherKernels;
  for (const auto& launch : bundle->launches) {
    if (launch.buffer.empty()) continue;
    const std::string kernel = launch.info.value("kernel", "");
    if (!bundle->traceMap.contains(kernel) || (!timedKernel.empty() && kernel != timedKernel)) {
      ++otherKernels[kernel];
      continue;
    }
    timedKernel = kernel;
    ++launchIndex;
    if (launchClause != nullptr && !launchClause->contains(launchIndex)) continue;
    auto parsed = trace::parseTraceMap(bundle->traceMap[kernel]);
    if (!parsed) return std::unexpected(parsed.error());
    if (!map) map = *parsed;
    auto decoded = trace::decodeTrace(
        std::as_bytes(std::span(launch.buffer.data(), launch.buffer.size())), *parsed);
    if (!decoded) return std::unexpected(decoded.error());
    ++launches;
    if (launch.info.contains("kernel_ns") && launch.info["kernel_ns"].is_number_unsigned())
      kernelNs.push_back(exactInteger<uint64_t>(launch.info["kernel_ns"], "`kernel_ns`"));
    std::string note = launch.info.value("note", "");
    if (parsed->block && launch.info.contains("block") &&
        launch.info["block"] != nlohmann::json(*parsed->block))
      note += fmt::format(
          "{}the trace was built for blocks of {} threads (kernels[].block in the program "
          "spec) and this launch ran {}: occurrences its warps began without lane 0 may be lost "
          "without a count; correct the spec's block and query again",
          note.empty() ? "" : "; ", nlohmann::json(*parsed->block).dump(),
          launch.info["block"].dump());
    if (!note.empty() && ++noted <= kMaxNotes)
      notes.push_back(fmt::format("launch {}: {}", integerOr(launch.info, "seq", 0), note));
    all.header = decoded->header;
    all.dropped += decoded->dropped;
    all.invalidRecords += decoded->invalidRecords;
    for (const auto& o : decoded->occurrences)
      if (inSubtree(parsed->regions[o.region].path, regionPath) && selected(o, *parsed, scope))
        all.occurrences.push_back(o);
  }
  if (!map) return fail("synthesis", "the evidence holds no traced launch that the scope selects");
  for (const auto& [kernel, n] : otherKernels)
    notes.push_back(fmt::format(
        "{} launch{} of kernel `{}` left out: {}", n, n == 1 ? "" : "es", kernel,
        bundle->traceMap.contains(kernel) ? "the timing is of `" + timedKernel + "`'s launches"
                                          : "no trace map (not instrumented)"));
  if (noted > kMaxNotes)
    notes.back() += fmt::format(" ({} further launches' notes left out)", noted - kMaxNotes);
  return Collected{std::move(all), std::move(*map), launches, std::move(notes),
                   std::move(kernelNs)};
}

Result<Collected> collect(std::string_view bundleBytes, const std::string& regionPath,
                          const query::Scope& scope) {
  try {
    return collectFields(bundleBytes, regionPath, scope);
  } catch (const json::exception& e) {
    return fail("synthesis", fmt::format("a launch of the trace bundle: {}", e.what()));
  }
}

}  // namespace

Result<json> regionTiming(std::string_view bundleBytes, const std::string& regionPath,
                          const query::Scope& scope) {
  auto c = collect(bundleBytes, regionPath, scope);
  if (!c) return std::unexpected(c.error());
  return timingJson(c->all, c->map, regionPath, c->launches, c->notes, c->kernelNs);
}

Result<RegionSamples> regionSamples(std::string_view bundleBytes, const std::string& regionPath,
                                    const query::Scope& scope) {
  auto c = collect(bundleBytes, regionPath, scope);
  if (!c) return std::unexpected(c.error());
  RegionSamples out;
  out.kernel = c->map.kernel;
  out.unit = c->map.timeBase == trace::TimeBase::SmClock ? "cycles" : "ns";
  for (const auto& o : c->all.occurrences)
    out.durations[c->map.regions[o.region].path].push_back(o.duration());
  out.kernelNs = std::move(c->kernelNs);
  out.dropped = c->all.dropped;
  out.invalidRecords = c->all.invalidRecords;
  return out;
}

void registerSynthesisExecutors(runtime::ExecutorRegistry& registry) {
  (void)registry.add(evidenceExecutor(
      "region_timing", "decodes region-trace evidence into observed per-region durations",
      [](const std::string& bytes, const runtime::TaskDescriptor& task,
         const query::Scope& scope) -> Result<runtime::TaskOutputs> {
        auto result = regionTiming(bytes, task.region, scope);
        if (!result) return std::unexpected(result.error());
        runtime::TaskOutputs out;
        out.artifacts["duration"] = runtime::Artifact::fromData((*result)["duration"].dump());
        out.artifacts["occurrences"] = runtime::Artifact::fromData((*result)["occurrences"].dump());
        return out;
      }));
}

}  // namespace argus::synthesis
