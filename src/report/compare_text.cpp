// `argus compare`'s text (argus/report/compare.h).
#include "argus/report/compare.h"

#include <fmt/format.h>

namespace argus::report {
namespace {

using json = nlohmann::json;

std::string number(const json& v) {
  if (!v.is_number()) return "-";
  return fmt::format("{:.0f}", v.get<double>());
}

std::string row(const std::string& name, const json& a, const json& b, const json& change) {
  auto median = [](const json& side) {
    return side.is_object() ? number(side["median"]) : std::string("-");
  };
  std::string verdict, delta, interval, relative;
  if (change.is_object()) {
    delta = fmt::format("{:+.0f}", change.value("delta", 0.0));
    interval =
        fmt::format("[{:+.0f}, {:+.0f}]", change.value("low", 0.0), change.value("high", 0.0));
    relative = change["relative"].is_number()
                   ? fmt::format("{:+.1f} %", 100 * change["relative"].get<double>())
                   : "";
    verdict = change.value("within_noise", true) ? "within noise" : "changed";
  }
  return fmt::format("  {:<34} {:>10} {:>10} {:>9} {:>9} {:>18}  {}\n", name, median(a), median(b),
                     delta, relative, interval, verdict);
}

}  // namespace

std::string compareText(const json& doc) {
  const json& d = doc["duration"];
  const std::string unit = d.value("unit", "ns");
  std::string out = fmt::format(
      "argus compare: kernel {}  region {}  scope {}\n  A = {}   B = {}\n\n",
      doc.value("kernel", ""),
      doc.value("region", "").empty() ? "(whole kernel)" : doc["region"].get<std::string>(),
      doc.value("scope", "all"), doc["a"].value("version", ""), doc["b"].value("version", ""));
  out += fmt::format("duration (median, {}, derived): change B - A, {}% interval\n", unit,
                     100 * d["method"].value("confidence", 0.95));
  out += fmt::format("  {:<34} {:>10} {:>10} {:>9} {:>9} {:>18}\n", "region", "A", "B", "change",
                     "", "interval");
  for (const auto& r : d["regions"]) {
    std::string name = r.value("path", "");
    if (r.contains("only_in"))
      name += fmt::format(" (only in {})", r["only_in"].get<std::string>());
    out += row(name, r["a"], r["b"], r.value("change", json()));
  }
  if (d.contains("traced_kernel"))
    out += row("traced kernel (CUPTI, per launch)", d["traced_kernel"]["a"],
               d["traced_kernel"]["b"], d["traced_kernel"]["change"]);
  out += fmt::format("\n  {}: {} resamples, seed {}\n", d["method"].value("interval", ""),
                     d["method"].value("resamples", 0), d["method"].value("seed", 0));
  return out;
}

}  // namespace argus::report
