// Text rendering of attributed per-PC signals (argus.pc_signal/1): one table per signal (region,
// value, share, ambiguity) and the per-source-file view beside it.
#include "argus/report/text.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace argus::report {
namespace {

using json = nlohmann::ordered_json;

/// 6564864 -> "6,564,864"; fractions keep two decimals.
std::string number(double v) {
  if (std::fabs(v - std::round(v)) > 1e-9) return fmt::format("{:.2f}", v);
  std::string digits = fmt::format("{:.0f}", std::fabs(v));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

/// A value cell: a number, or the largest parts of an object ("fp32 1,024 (40 %), ..."); parts of
/// different units (ncu's columns) get no percentages.
std::string cell(const json& value, size_t parts, bool percents) {
  if (value.is_number()) return number(value.get<double>());
  if (!value.is_object()) return value.dump();
  std::vector<std::pair<std::string, double>> items;
  double sum = 0.0;
  for (const auto& [k, v] : value.items())
    if (v.is_number() && k != "all") {
      items.emplace_back(k, v.get<double>());
      sum += v.get<double>();
    }
  std::ranges::sort(items, [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out = value.contains("all") ? number(value["all"].get<double>()) : "";
  if (!out.empty() && !items.empty() && items.front().second != 0.0) out += ": ";
  for (size_t i = 0; i < items.size() && i < parts; ++i) {
    if (items[i].second == 0.0) break;
    out += fmt::format("{}{} {}", i ? ", " : "", items[i].first, number(items[i].second));
    if (percents && sum > 0.0 && !value.contains("all"))
      out += fmt::format(" ({:.1f} %)", 100.0 * items[i].second / sum);
  }
  if (items.size() > parts) out += ", ...";
  return out.empty() ? "0" : out;
}

/// `value[key]`, or null where the key is absent: nlohmann's const operator[] is undefined for a
/// missing key, and a report from an older Argus or another tool may lack any optional field.
const json& field(const json& value, const char* key) {
  static const json null;
  if (!value.is_object()) return null;
  auto it = value.find(key);
  return it == value.end() ? null : *it;
}

/// `value.value(key, fallback)` that also takes a null or non-object value.
template <typename T>
T valueOr(const json& value, const char* key, T fallback) {
  const json& v = field(value, key);
  if (v.is_null()) return fallback;
  try {
    return v.get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

std::string percent(const json& share) {
  return share.is_number() ? fmt::format("{:.1f} %", 100.0 * share.get<double>()) : "-";
}

}  // namespace

std::optional<std::string> pcSignalText(const nlohmann::ordered_json& value) {
  if (!value.is_object() || valueOr(value, "schema", std::string("")) != "argus.pc_signal/1")
    return std::nullopt;
  std::string out;
  const bool wide = field(field(value, "total"), "value").is_object();
  const size_t parts = wide ? 4 : 0;
  const bool percents = valueOr(value, "signal", std::string("")) != "ncu_source_counters";
  // The region column fits the longest name in full (a path is never cut: two regions may share
  // its first 30 characters), and is at least 30 wide so that short names keep one layout.
  size_t width = 30;
  for (const auto& [name, r] : field(value, "regions").items())
    width = std::max(width, name.size());
  for (const auto& [name, r] : field(value, "source_files").items())
    width = std::max(width, name.size() + 2);
  out += fmt::format("  {:<{}} {:>14} {:>8} {:>10} {:>7}{}\n", "region", width, wide ? "" : "value",
                     "share", "ambiguous", "H bits", wide ? "  value" : "");
  auto row = [&](const std::string& name, const json& r, bool ambiguity) {
    std::string amb = "-", bits = "-";
    if (ambiguity && r.contains("ambiguity")) {
      amb = percent(field(field(r, "ambiguity"), "ambiguous_share"));
      bits = fmt::format("{:.2f}", valueOr(field(r, "ambiguity"), "mean_entropy_bits", 0.0));
    }
    if (wide)
      out += fmt::format("  {:<{}} {:>14} {:>8} {:>10} {:>7}  {}\n", name, width, "",
                         percent(field(r, "share")), amb, bits,
                         cell(field(r, "value"), parts, percents));
    else
      out += fmt::format(
          "  {:<{}} {:>14} {:>8} {:>10} {:>7}{}\n", name, width, cell(field(r, "value"), 0, false),
          percent(field(r, "share")), amb, bits,
          r.contains("threads_per_inst") && field(field(r, "threads_per_inst"), "value").is_number()
              ? fmt::format("  {:.1f} threads/inst",
                            field(field(r, "threads_per_inst"), "value").get<double>())
              : "");
  };
  for (const auto& [name, r] : field(value, "regions").items()) row(name, r, true);
  json total = {{"value", field(field(value, "total"), "value")}, {"share", 1.0}};
  row("total", total, false);
  out += fmt::format("  (a region's row counts its own PCs; its subregions have their own rows)\n");
  if (field(value, "scope_method").is_object()) {
    // Scoped through the trace's occurrences (synthesis::scopeSignal).
    out += fmt::format(
        "  scope {}: each region's value times the share of its occurrences in "
        "the scope (unscoped trace run)\n",
        valueOr(value, "scope", std::string("?")));
    for (const auto& n : field(value, "not_scoped"))
      out += fmt::format("  not scoped: {}: {}\n", valueOr(n, "region", std::string("?")),
                         valueOr(n, "reason", std::string("")));
  } else {
    out += fmt::format("  per source file (where the instructions' source lines are):\n");
    for (const auto& [name, r] : field(value, "source_files").items()) row("  " + name, r, false);
  }

  const json& ev = field(value, "evidence");
  if (valueOr(value, "exact", false)) {
    out += fmt::format(
        "  exact: every PC has one owner or its owners' shares come from the mapping run");
  } else {
    out += fmt::format("  ESTIMATE:");
    for (const auto& reason : field(value, "estimate_reasons"))
      out += fmt::format(" [{} PCs: {}]", valueOr(reason, "pcs", 0),
                         valueOr(reason, "reason", std::string("")));
  }
  const json& mapping = field(value, "mapping");
  if (mapping.is_object() && valueOr(mapping, "method", std::string()) == "callee_copies") {
    out += fmt::format(" (mapping run: {} callee copies of the reference's code",
                       valueOr(mapping, "copies", 0));
    const json& totals = field(mapping, "kernel_total_inst_executed");
    if (field(totals, "equal").is_boolean())
      out += fmt::format(", kernel total {} the reference run's",
                         valueOr(totals, "equal", false) ? "equal to" : "NOT equal to");
    out += ")";
  } else if (mapping.is_object()) {
    out += fmt::format(" (mapping run: {} PCs joined, {} join mismatches reported)",
                       valueOr(mapping, "joined_pcs", 0), valueOr(mapping, "mismatches", 0));
  }
  out += fmt::format("; {} PCs with several owners\n", valueOr(value, "ambiguous_pcs", 0));
  std::string check = valueOr(field(ev, "cubin_check"), "method", std::string("?"));
  std::string hash = valueOr(field(ev, "cubin"), "hash", std::string(""));
  out += fmt::format("  evidence: {} on the {} build, cubin {} ({})",
                     valueOr(ev, "collector", std::string("?")),
                     valueOr(ev, "variant", std::string("?")), hash.substr(0, 12), check);
  if (field(ev, "sass_check").is_object())
    out += fmt::format(", painted SASS {} unpainted",
                       valueOr(field(ev, "sass_check"), "painted_equals_unpainted", false)
                           ? "=="
                           : "DIFFERS FROM");
  if (field(ev, "kernel_total_inst_executed").is_number())
    out += fmt::format(", CUPTI kernel total {} warp inst",
                       number(field(ev, "kernel_total_inst_executed").get<double>()));
  if (ev.contains("kernel_totals") && field(ev, "kernel_totals").contains("launches"))
    for (const auto& l : field(field(ev, "kernel_totals"), "launches"))
      for (const auto& [k, v] : l.items())
        if (v.is_number()) out += fmt::format(", ncu {} {}", k, number(v.get<double>()));
  out += "\n";
  return out;
}

}  // namespace argus::report
