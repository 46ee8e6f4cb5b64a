#include "argus/synthesis/kernel_timing.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "argus/evidence/trace_bundle.h"
#include "argus/program/program.h"
#include "argus/trace/decode.h"
#include "evidence_executor.h"

namespace argus::synthesis {
namespace {

using json = nlohmann::json;

/// Launches listed one by one in the document; the statistics cover all of them.
constexpr size_t kListedLaunches = 64;

/// kernelTiming, throwing json::exception on a field of the wrong type.
Result<json> kernelTimingFields(std::string_view evidence, const query::Scope& scope) {
  const json doc = json::parse(evidence, nullptr, false);
  if (!doc.is_object() || !doc.contains("kernels") || !doc["kernels"].is_array())
    return fail("synthesis", "kernel_duration: the evidence is not a cupti_activity document");
  const std::string kernel = doc.value("kernel", std::string());
  struct Launch {
    uint64_t start = 0;
    uint64_t ns = 0;
  };
  std::vector<Launch> launches;
  for (const json& k : doc["kernels"]) {
    if (!kernel.empty() && !program::sameKernelName(k.value("kernel", std::string()), kernel))
      continue;
    if (const auto times = evidence::kernelRecordTimes(k))
      launches.push_back({times->first, times->second});
  }
  std::stable_sort(launches.begin(), launches.end(),
                   [](const Launch& a, const Launch& b) { return a.start < b.start; });
  const query::Clause* launchClause = scope.clause(query::Coordinate::Launch);
  std::vector<uint64_t> durations;
  json perLaunch = json::array();
  for (size_t i = 0; i < launches.size(); ++i) {
    if (launchClause != nullptr && !launchClause->contains(static_cast<int64_t>(i))) continue;
    durations.push_back(launches[i].ns);
    if (perLaunch.size() < kListedLaunches)
      perLaunch.push_back({{"launch", i}, {"ns", launches[i].ns}});
  }
  if (durations.empty())
    return fail("synthesis",
                fmt::format("kernel_duration: {} launches of `{}`, none selected by scope `{}`",
                            launches.size(), program::demangle(kernel), scope.canonical()));
  const trace::DurationStats s = trace::durationStats(durations);
  json out = {
      {"kernel", kernel}, {"launches", launches.size()}, {"count", s.count}, {"total", s.total},
      {"mean", s.mean},   {"median", s.median},          {"p95", s.p95},     {"min", s.min},
      {"max", s.max},     {"per_launch", perLaunch}};
  if (s.totalSaturated) out["total_saturated"] = true;  // total is a lower bound
  if (doc.contains("sass_check")) out["sass_check"] = doc["sass_check"];
  std::string others;
  for (const auto& clause : scope.clauses)
    if (clause.coordinate != query::Coordinate::Launch)
      others +=
          (others.empty() ? "" : ", ") + std::string(query::coordinateName(clause.coordinate));
  if (!others.empty())
    out["note"] = fmt::format(
        "a kernel's duration covers all its occurrences: the scope's {} "
        "clause(s) do not apply, only launch",
        others);
  return out;
}

}  // namespace

Result<json> kernelTiming(std::string_view evidence, const query::Scope& scope) {
  try {
    return kernelTimingFields(evidence, scope);
  } catch (const json::exception& e) {
    return fail("synthesis",
                fmt::format("kernel_duration: the cupti_activity document: {}", e.what()));
  }
}

void registerKernelTimingExecutor(runtime::ExecutorRegistry& registry) {
  (void)registry.add(evidenceExecutor(
      "kernel_timing", "CUPTI kernel durations of the reference build's launches",
      [](const std::string& bytes, const runtime::TaskDescriptor&,
         const query::Scope& scope) -> Result<runtime::TaskOutputs> {
        auto timing = kernelTiming(bytes, scope);
        if (!timing) return std::unexpected(timing.error());
        runtime::TaskOutputs out;
        out.artifacts["kernel_duration"] = runtime::Artifact::fromData(timing->dump());
        return out;
      }));
}

}  // namespace argus::synthesis
