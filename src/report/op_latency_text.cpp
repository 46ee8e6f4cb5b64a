// Text rendering of op_latency documents and of discovery's op_sites.
#include <set>
#include <string>

#include <fmt/format.h>

#include "argus/report/text.h"

namespace argus::report {
using json = nlohmann::json;

std::string opLatencyText(const json& v) {
  const std::string unit = v.value("unit", "ns");
  std::string out =
      fmt::format("  {:<28} {:<9} {:>5} {:>12} {:>12} {:>12} {:>7}  {}\n", "op", "kind", "iter",
                  "latency(med)", "exposed", "slack", "joined", "method");
  bool shared = false;
  bool tripOnly = false;
  for (const auto& e : v.value("ops", json::array())) {
    const bool phase = e.contains("shared_phase");
    shared = shared || phase;
    // Loop-trip probes (op issued after its iteration region) have no exposed time or slack.
    const bool derived = e.contains("exposed") && e["exposed"].is_object();
    tripOnly = tripOnly || !derived;
    out += fmt::format(
        "  {:<28} {:<9} {:>5} {:>12} {:>12} {:>12} {:>7}  {}{}\n", e.value("op", ""),
        e.value("kind", ""), e.value("iteration", 0),
        formatQuantity(e["latency"].value("median", 0.0), unit),
        derived ? formatQuantity(e["exposed"].value("median", 0.0), unit) : std::string("-"),
        derived ? formatQuantity(e.value("slack", 0.0), unit) : std::string("-"),
        e.value("joined", 0), e.value("method", ""), phase ? " (whole phase*)" : "");
  }
  if (tripOnly)
    out +=
        "  - issued after its iteration region ends (software pipelining): the wait is outside "
        "the region, so only the latency is derived\n";
  if (shared)
    out +=
        "  * shared expect_tx phase: the wait follows the phase's last load, so the latency "
        "is the whole phase's\n";
  std::set<std::string> cautions;  // the same caution for every probe of the program: once
  for (const auto& e : v.value("ops", json::array()))
    if (e.contains("caution") && cautions.insert(e["caution"].get<std::string>()).second)
      out += fmt::format("  caution: {}\n", e["caution"].get<std::string>());
  for (const auto& f : v.value("failed", json::array()))
    out += fmt::format("  failed: {} @ iteration {}: {}\n", f.value("op", ""),
                       f.value("iteration", 0), f.value("error", ""));
  for (const auto& n : v.value("not_probed", json::array()))
    out += fmt::format(
        "  not probed: {} ({}, PTX line {}){}: {}\n", n.value("op", ""), n.value("kind", ""),
        n.value("line", 0),
        n.contains("iteration") ? fmt::format(" @ iteration {}", n["iteration"].dump()) : "",
        n.value("reason", ""));
  for (const auto& n : v.value("not_collected", json::array()))
    out += fmt::format("  not run: {}: {}\n", n.value("task", ""), n.value("reason", ""));
  if (const json& iso = v.value("isolation", json::object()); iso.value("processes", 0) > 1) {
    const std::size_t overlaps = iso.value("overlaps", json::array()).size();
    const std::size_t unchecked = iso.value("unchecked", json::array()).size();
    out += fmt::format(
        "  isolation: {} probe processes, {} taking turns on a shared GPU; {} kernels checked: "
        "{}{}\n",
        iso.value("processes", 0), iso.value("turns_taken", 0), iso.value("kernels_checked", 0),
        overlaps == 0 ? "no two probes' kernels overlapped"
                      : fmt::format("{} overlapping pair(s)", overlaps),
        unchecked == 0 ? "" : fmt::format(" ({} without kernel times)", unchecked));
  }
  return out;
}

std::string opSitesText(const json& sites) {
  if (!sites.is_object()) return "  (op_sites is not JSON)\n";
  const json reference = sites.value("reference", json::object());
  std::string out = fmt::format(
      "  {} async op sites in {}; reference run {}; {} probe branch(es)\n",
      sites.value("sites", json::array()).size(),
      sites.value("region", "").empty() ? "the kernel" : sites.value("region", ""),
      reference.value("available", false)
          ? fmt::format("with {} launch(es)", reference.value("launches", 0))
          : std::string("not available (iterations are taken from --scope iter= unchecked)"),
      sites.value("probes", json::array()).size());
  for (const auto& p : sites.value("probes", json::array()))
    out += fmt::format("    {} @ iteration {}{}{}\n", p.value("op", ""), p.value("iteration", 0),
                       p.contains("instances")
                           ? fmt::format(" ({} instances in the reference)", p["instances"].dump())
                           : "",
                       p.contains("shared_phase") ? " [whole expect_tx phase]" : "");
  json rest = json::object();
  rest["ops"] = json::array();
  rest["not_probed"] = sites.value("not_probed", json::array());
  rest["not_collected"] = sites.value("not_collected", json::array());
  out += opLatencyText(rest).substr(opLatencyText(json::object()).size());
  return out;
}

}  // namespace argus::report
