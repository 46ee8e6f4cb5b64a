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
  return genericText(value);
}

/// A scalar (or a short array of scalars) as one table cell or value.
std::string scalarText(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == std::floor(d) && std::abs(d) < 1e15) return fmt::format("{:.0f}", d);
    return std::abs(d) >= 100 ? fmt::format("{:.1f}", d) : fmt::format("{:.4g}", d);
  }
  if (v.is_array()) {
    std::string out;
    for (const auto& e : v) out += (out.empty() ? "" : ",") + scalarText(e);
    return out;
  }
  return v.dump();
}

bool isScalar(const Json& v) {
  if (v.is_array())
    return v.size() <= 8 &&
           std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_primitive(); });
  return v.is_primitive();
}

void genericLines(const Json& value, const std::string& indent, int depth, std::string& out) {
  constexpr std::size_t kLongText = 160;
  for (const auto& [key, v] : value.items()) {
    if (v.is_string() && v.get<std::string>().size() > kLongText) {
      const auto& text = v.get<std::string>();
      out += fmt::format("{}{}: ({} characters, {} lines; in --json)\n", indent, key, text.size(),
                         std::count(text.begin(), text.end(), '\n') + 1);
    } else if (isScalar(v)) {
      out += fmt::format("{}{}: {}\n", indent, key, scalarText(v));
    } else if (v.is_array() && !v.empty() &&
               std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_object(); })) {
      // A table: one column per field that is scalar in some row, in first-seen order.
      std::vector<std::string> columns;
      for (const auto& row : v)
        for (const auto& [k, cell] : row.items())
          if (isScalar(cell) && std::find(columns.begin(), columns.end(), k) == columns.end())
            columns.push_back(k);
      std::vector<std::vector<std::string>> cells;
      std::vector<std::size_t> width(columns.size());
      for (std::size_t c = 0; c < columns.size(); ++c) width[c] = columns[c].size();
      for (const auto& row : v) {
        auto& line = cells.emplace_back();
        for (std::size_t c = 0; c < columns.size(); ++c) {
          line.push_back(row.contains(columns[c]) && isScalar(row[columns[c]])
                             ? scalarText(row[columns[c]])
                             : "-");
          width[c] = std::max(width[c], line.back().size());
        }
      }
      out += fmt::format("{}{} ({}):\n", indent, key, v.size());
      auto printRow = [&](const std::vector<std::string>& row) {
        std::string text = indent + "  ";
        for (std::size_t c = 0; c < row.size(); ++c)
          text += fmt::format("{:<{}}{}", row[c], width[c], c + 1 < row.size() ? "  " : "");
        while (!text.empty() && text.back() == ' ') text.pop_back();
        out += text + "\n";
      };
      printRow(columns);
      for (const auto& row : cells) printRow(row);
    } else if ((v.is_object() || v.is_array()) && depth < 3) {
      out += fmt::format("{}{}:{}\n", indent, key, v.empty() ? " (none)" : "");
      if (v.is_object()) {
        genericLines(v, indent + "  ", depth + 1, out);
      } else {
        for (std::size_t i = 0; i < v.size(); ++i)
          out += fmt::format("{}  - {}\n", indent,
                             v[i].is_primitive() ? scalarText(v[i]) : v[i].dump());
      }
    } else {
      out += fmt::format("{}{}: {}\n", indent, key, v.dump());
    }
  }
}

}  // namespace

std::string formatNs(double ns) {
  if (ns >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.2f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string formatQuantity(double value, std::string_view unit) {
  if (unit == "ns") return formatNs(value);
  if (unit == "cycles") {
    if (value >= 1e6) return fmt::format("{:.3f} Mcyc", value / 1e6);
    if (value >= 1e4) return fmt::format("{:.1f} kcyc", value / 1e3);
    return fmt::format("{:.0f} cyc", value);
  }
  return fmt::format("{:.0f} {}", value, unit);
}

std::string genericText(const Json& value) {
  std::string out;
  if (value.is_object())
    genericLines(value, "  ", 0, out);
  else
    out = fmt::format("  {}\n", value.dump());
  return out;
}

std::string durationText(const Json& value) {
  // Region traces are in ns; an imported trace may be in the SM's cycles (Proton).
  const std::string unit = value.value("unit", "ns");
  const auto q = [&](double v) { return formatQuantity(v, unit); };
  std::string out = fmt::format("  {:<32} {:>8} {:>12} {:>12} {:>12} {:>12}\n", "region", "count",
                                "mean", "median", "p95", "total");
  for (const auto& r : value["regions"]) {
    const Json& d = r["duration"];
    std::string path = r.value("path", "");
    const auto depth = static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
    out += fmt::format("  {:<32} {:>8} {:>12} {:>12} {:>12} {:>12}\n",
                       std::string(2 * depth, ' ') + path.substr(path.rfind('/') + 1),
                       d.value("count", 0), q(d.value("mean", 0.0)), q(d.value("median", 0.0)),
                       q(d.value("p95", 0.0)), q(d.value("total", 0.0)));
  }
  out += fmt::format("  launches {}, dropped records {}\n", value.value("launches", 0),
                     value.value("dropped", 0));
  if (value.contains("traced_kernel"))
    out += fmt::format("  traced kernel (CUPTI, this run): median {} per launch\n",
                       formatNs(value["traced_kernel"].value("median", 0.0)));  // CUPTI: ns
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
