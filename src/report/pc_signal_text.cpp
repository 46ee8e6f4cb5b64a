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

std::string percent(const json& share) {
  return share.is_number() ? fmt::format("{:.1f} %", 100.0 * share.get<double>()) : "-";
}

}  // namespace

std::optional<std::string> pcSignalText(const nlohmann::ordered_json& value) {
  if (!value.is_object() || value.value("schema", "") != "argus.pc_signal/1") return std::nullopt;
  std::string out;
  const bool wide = value["total"]["value"].is_object();
  const size_t parts = wide ? 4 : 0;
  const bool percents = value.value("signal", "") != "ncu_source_counters";
  // The region column fits the longest name in full (a path is never cut: two regions may share
  // its first 30 characters), and is at least 30 wide so that short names keep one layout.
  size_t width = 30;
  for (const auto& [name, r] : value["regions"].items()) width = std::max(width, name.size());
  for (const auto& [name, r] : value["source_files"].items())
    width = std::max(width, name.size() + 2);
  out += fmt::format("  {:<{}} {:>14} {:>8} {:>10} {:>7}{}\n", "region", width, wide ? "" : "value",
                     "share", "ambiguous", "H bits", wide ? "  value" : "");
  auto row = [&](const std::string& name, const json& r, bool ambiguity) {
    std::string amb = "-", bits = "-";
    if (ambiguity && r.contains("ambiguity")) {
      amb = percent(r["ambiguity"]["ambiguous_share"]);
      bits = fmt::format("{:.2f}", r["ambiguity"].value("mean_entropy_bits", 0.0));
    }
    if (wide)
      out += fmt::format("  {:<{}} {:>14} {:>8} {:>10} {:>7}  {}\n", name, width, "",
                         percent(r["share"]), amb, bits, cell(r["value"], parts, percents));
    else
      out += fmt::format(
          "  {:<{}} {:>14} {:>8} {:>10} {:>7}{}\n", name, width, cell(r["value"], 0, false),
          percent(r["share"]), amb, bits,
          r.contains("threads_per_inst") && r["threads_per_inst"]["value"].is_number()
              ? fmt::format("  {:.1f} threads/inst", r["threads_per_inst"]["value"].get<double>())
              : "");
  };
  for (const auto& [name, r] : value["regions"].items()) row(name, r, true);
  json total = {{"value", value["total"]["value"]}, {"share", 1.0}};
  row("total", total, false);
  out += fmt::format("  (a region's row counts its own PCs; its subregions have their own rows)\n");
  out += fmt::format("  per source file (where the instructions' source lines are):\n");
  for (const auto& [name, r] : value["source_files"].items()) row("  " + name, r, false);

  const json& ev = value["evidence"];
  if (value.value("exact", false)) {
    out += fmt::format(
        "  exact: every PC has one owner or its owners' shares come from the mapping run");
  } else {
    out += fmt::format("  ESTIMATE:");
    for (const auto& reason : value["estimate_reasons"])
      out += fmt::format(" [{} PCs: {}]", reason.value("pcs", 0), reason.value("reason", ""));
  }
  if (value["mapping"].is_object())
    out += fmt::format(" (mapping run: {} PCs joined, {} join mismatches reported)",
                       value["mapping"].value("joined_pcs", 0),
                       value["mapping"].value("mismatches", 0));
  out += fmt::format("; {} PCs with several owners\n", value.value("ambiguous_pcs", 0));
  std::string check = ev["cubin_check"].value("method", "?");
  std::string hash = ev["cubin"].value("hash", "");
  out += fmt::format("  evidence: {} on the {} build, cubin {} ({})", ev.value("collector", "?"),
                     ev.value("variant", "?"), hash.substr(0, 12), check);
  if (ev["sass_check"].is_object())
    out += fmt::format(
        ", painted SASS {} unpainted",
        ev["sass_check"].value("painted_equals_unpainted", false) ? "==" : "DIFFERS FROM");
  if (ev.contains("kernel_total_inst_executed"))
    out += fmt::format(", CUPTI kernel total {} warp inst",
                       number(ev["kernel_total_inst_executed"].get<double>()));
  if (ev.contains("kernel_totals") && ev["kernel_totals"].contains("launches"))
    for (const auto& l : ev["kernel_totals"]["launches"])
      for (const auto& [k, v] : l.items())
        if (v.is_number()) out += fmt::format(", ncu {} {}", k, number(v.get<double>()));
  out += "\n";
  return out;
}

}  // namespace argus::report
