// The argus.report/1 document and its text form (argus/report/report.h).
#include "argus/report/report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "argus/program/program.h"
#include "argus/report/text.h"

namespace argus::report {
namespace {

Json signalJson(const SignalEntry& s) {
  Json entry{{"task", s.task}};
  if (s.qualification) entry["qualification"] = *s.qualification;
  if (s.unit) entry["unit"] = *s.unit;
  entry["scope"] = s.scope;
  entry["status"] = s.status;
  if (s.reason) entry["reason"] = *s.reason;
  if (s.value) entry["value"] = *s.value;
  if (s.provenance) entry["provenance"] = *s.provenance;
  if (s.error) entry["error"] = *s.error;
  return entry;
}

Json traceCostJson(const std::optional<TraceCost>& cost) {
  if (!cost) return nullptr;
  const double t = cost->tracedMedian;
  const double u = cost->untracedMedian;
  return Json{{"unit", "ns"},
              {"qualification", "derived"},
              {"traced_median", t},
              {"untraced_median", u},
              {"added", t - u},
              {"relative", (t - u) / u},
              {"from",
               "the traced launches' CUPTI median (duration's traced_kernel) less "
               "the untraced reference build's (kernel_duration), two runs"}};
}

std::string kernelDurationText(const Json& value) {
  std::string out = fmt::format(
      "  {} of {} launches: median {}, mean {}, p95 {}, min {}, max {}\n", value.value("count", 0),
      value.value("launches", 0), formatNs(value.value("median", 0.0)),
      formatNs(value.value("mean", 0.0)), formatNs(value.value("p95", 0.0)),
      formatNs(value.value("min", 0.0)), formatNs(value.value("max", 0.0)));
  if (value.contains("note")) out += fmt::format("  note: {}\n", value["note"].get<std::string>());
  return out;
}

std::string valueText(const std::string& signal, const Json& value) {
  if (signal == "duration" && value.contains("regions")) return durationText(value);
  if (signal == "kernel_duration" && value.contains("median")) return kernelDurationText(value);
  if (signal == "op_latency" && value.contains("ops"))
    return opLatencyText(nlohmann::json::parse(value.dump()));
  if (auto pc = pcSignalText(value)) return *pc;
  return fmt::format("  {}\n", value.dump());
}

}  // namespace

std::string formatNs(double ns) {
  if (ns >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.2f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string durationText(const Json& value) {
  std::string out = fmt::format("  {:<32} {:>8} {:>12} {:>12} {:>12} {:>12}\n", "region", "count",
                                "mean", "median", "p95", "total");
  for (const auto& r : value["regions"]) {
    const Json& d = r["duration"];
    std::string path = r.value("path", "");
    const auto depth = static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
    out += fmt::format("  {:<32} {:>8} {:>12} {:>12} {:>12} {:>12}\n",
                       std::string(2 * depth, ' ') + path.substr(path.rfind('/') + 1),
                       d.value("count", 0), formatNs(d.value("mean", 0.0)),
                       formatNs(d.value("median", 0.0)), formatNs(d.value("p95", 0.0)),
                       formatNs(d.value("total", 0.0)));
  }
  out += fmt::format("  launches {}, dropped records {}\n", value.value("launches", 0),
                     value.value("dropped", 0));
  if (value.contains("traced_kernel"))
    out += fmt::format("  traced kernel (CUPTI, this run): median {} per launch\n",
                       formatNs(value["traced_kernel"].value("median", 0.0)));
  for (const auto& note : value.value("launch_notes", Json::array()))
    out += fmt::format("  note: {}\n", note.get<std::string>());
  return out;
}

Json toJson(const QueryReport& r) {
  Json variants = Json::array();
  for (const auto& [variant, version] : r.newVariantVersions)
    variants.push_back({{"variant", variant}, {"version", version}});
  Json signals = Json::object();
  for (const auto& s : r.signals) signals[s.signal] = signalJson(s);
  Json notCollected = Json::array();
  for (const auto& n : r.notCollected)
    notCollected.push_back({{"task", n.task}, {"reason", n.reason}});
  Json failures = Json::array();
  for (const auto& f : r.failures)
    failures.push_back({{"task", f.task}, {"error", f.error}, {"log_tail", f.logTail}});
  Json result{{"schema", "argus.report/1"},
              {"query", r.query},
              {"program_version", r.programVersion},
              {"workspace_version", r.workspaceVersion},
              {"new_variant_versions", variants},
              {"kernel", r.kernel},
              {"region", r.region},
              {"region_id", r.regionId},
              {"signals", signals},
              {"trace_cost", traceCostJson(r.traceCost)},
              {"not_collected", notCollected},
              {"failures", failures},
              {"run",
               {{"tasks", r.run.ran},
                {"executed", r.run.executed},
                {"planned", r.run.planned},
                {"not_run", r.notCollected.size()},
                {"devices", r.run.devices}}}};
  for (const auto& [task, sites] : r.discovery) result["discovery"][task] = sites;
  return result;
}

std::string toText(const QueryReport& r) {
  std::string out =
      fmt::format("\nargus query: kernel {}  region {}{}  scope {}\n", program::demangle(r.kernel),
                  r.region.empty() ? "(whole kernel)" : r.region,
                  r.regionId.empty() ? "" : " [" + r.regionId + "]", r.scope);
  for (const auto& s : r.signals) {
    out += fmt::format("\n{} ({}, {}): {}\n", s.signal, s.unit.value_or("?"),
                       s.qualification.value_or("?"), s.status);
    if (s.error) out += fmt::format("  error: {}\n", *s.error);
    if (s.reason) out += fmt::format("  why: {}\n", *s.reason);
    if (!s.value) continue;
    out += valueText(s.signal, *s.value);
    if (s.provenance) out += fmt::format("  provenance: {}\n", s.provenance->dump());
  }
  if (r.traceCost) {
    const Json cost = traceCostJson(r.traceCost);
    out += fmt::format(
        "\ntrace cost (ns, derived): the traced kernel's median {} against the untraced "
        "one's {}: {}{} ({:+.2f} %)\n",
        formatNs(cost["traced_median"].get<double>()),
        formatNs(cost["untraced_median"].get<double>()),
        cost["added"].get<double>() >= 0 ? "+" : "-",
        formatNs(std::abs(cost["added"].get<double>())), 100.0 * cost["relative"].get<double>());
  }
  for (const auto& [task, sites] : r.discovery)
    out += fmt::format("\n{}:\n{}", task, opSitesText(nlohmann::json::parse(sites.dump())));
  if (!r.notCollected.empty()) {
    out += "\nnot run:\n";
    for (const auto& n : r.notCollected) out += fmt::format("  {}: {}\n", n.task, n.reason);
  }
  // Every task is accounted for: executed now, reused from the workspace, or not run (listed
  // above). Discovery's branches join the plan while it runs, so they count too.
  out +=
      fmt::format("\n{} of {} tasks executed, {} reused from {}{}\n", r.run.executed,
                  r.run.ran + r.notCollected.size(), r.run.ran - r.run.executed, r.workspace,
                  r.notCollected.empty() ? "" : fmt::format(", {} not run", r.notCollected.size()));
  if (!r.failures.empty()) out += fmt::format("\n{}", r.runText);
  return out;
}

}  // namespace argus::report
