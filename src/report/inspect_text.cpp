// Region trees and async op sites as JSON and text (argus/report/inspect.h).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <vector>

#include <fmt/format.h>

#include "argus/program/program.h"
#include "argus/report/inspect.h"

namespace argus::report {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

json positionJson(const ptx::MarkerSite& site) {
  json j{{"ptx_line", site.ptx.line}};
  if (!site.source.file.empty())
    j["source"] = {{"file", site.source.file}, {"line", site.source.line}};
  if (!site.iteration.empty()) j["iteration"] = site.iteration;
  if (!site.role.empty()) j["role"] = site.role;
  return j;
}

}  // namespace

constexpr size_t kMaxTreeIndent = 32;

namespace {

/// Region indices in tree order, each followed by its subtree: a kernel's tree lists the regions
/// of the functions it calls after its own (ptx::composeCalleeRegions), under their calling
/// regions. Iterative, so a deep tree needs no deep stack.
std::vector<size_t> treeOrder(const std::vector<ptx::Region>& regions) {
  std::vector<size_t> order;
  order.reserve(regions.size());
  std::vector<size_t> stack;
  for (size_t i = regions.size(); i-- > 0;)
    if (!regions[i].parent) stack.push_back(i);
  while (!stack.empty()) {
    const size_t r = stack.back();
    stack.pop_back();
    order.push_back(r);
    const auto& children = regions[r].children;
    for (auto c = children.rbegin(); c != children.rend(); ++c) stack.push_back(*c);
  }
  return order;
}

}  // namespace

json regionsJson(const RegionTree& tree) {
  json kernels = json::array();
  for (const auto& fn : tree.functions) {
    if (!fn.isEntry && fn.regions.empty()) continue;
    json regions = json::array();
    for (const auto& r : fn.regions) {
      json begins = json::array(), ends = json::array(), children = json::array();
      for (const auto& s : r.begins) begins.push_back(positionJson(s));
      for (const auto& s : r.ends) ends.push_back(positionJson(s));
      for (uint32_t c : r.children) children.push_back(fn.regions[c].id);
      regions.push_back({{"id", r.id},
                         {"name", r.name},
                         {"path", r.path},
                         {"parent", r.parent ? json(fn.regions[*r.parent].id) : json(nullptr)},
                         {"children", children},
                         {"ptx_instructions", r.instructions},
                         {"begins", begins},
                         {"ends", ends}});
      // A derived region (docs/regions-file.md): the selector it comes from.
      if (!r.selector.empty()) regions.back()["derived"] = r.selector;
    }
    json warnings = json::array();
    for (const auto& w : fn.warnings)
      warnings.push_back({{"ptx_line", w.ptx.line}, {"message", w.message}});
    kernels.push_back({{"name", fn.function},
                       {"demangled", program::demangle(fn.function)},
                       {"entry", fn.isEntry},
                       {"regions", regions},
                       {"warnings", warnings}});
  }
  // For TTGIR, `ptx_line` and `ptx_instructions` hold TTGIR lines and operations.
  return json{{"schema", "argus.regions/1"},
              {"source", tree.source},
              {"representation", tree.representation},
              {"kernels", kernels}};
}

RegionsText regionsText(const RegionTree& tree) {
  RegionsText text;
  auto out = std::back_inserter(text.out);
  const std::string& representation = tree.representation;
  bool any = false;
  for (const auto& fn : tree.functions) {
    if (!fn.isEntry && fn.regions.empty()) continue;
    any = true;
    fmt::format_to(out, "{} {}\n", fn.isEntry ? "kernel" : "function",
                   program::demangle(fn.function));
    if (fn.regions.empty()) fmt::format_to(out, "  (no regions)\n");
    for (const size_t index : treeOrder(fn.regions)) {
      const auto& r = fn.regions[index];
      size_t depth = static_cast<size_t>(std::count(r.path.begin(), r.path.end(), '/'));
      std::string where;
      if (!r.begins.empty()) {
        const auto& b = r.begins.front();
        where =
            b.source.file.empty()
                ? fmt::format("{}:{}", representation, b.ptx.line)
                : fmt::format("{}:{}", fs::path(b.source.file).filename().string(), b.source.line);
      }
      std::string coords;
      for (const auto& b : r.begins) {
        if (!b.iteration.empty() && coords.find("iter") == std::string::npos) coords += " iter";
        if (!b.role.empty() && coords.find("role=" + b.role) == std::string::npos)
          coords += " role=" + b.role;
      }
      // Deeper levels keep the indentation of kMaxTreeIndent and say their depth, so that a
      // deep tree prints in space linear in its regions.
      std::string label =
          depth <= kMaxTreeIndent
              ? std::string(2 + 2 * depth, ' ') + r.name
              : fmt::format("{}({}) {}", std::string(2 + 2 * kMaxTreeIndent, ' '), depth, r.name);
      fmt::format_to(out, "{:<36} {}  {:>6} {} {}  begin {}{}\n", label, r.id, r.instructions,
                     representation, representation == "ptx" ? "instr" : "ops  ", where, coords);
    }
    for (const auto& w : fn.warnings)
      text.warnings.push_back(
          fmt::format("argus: warning: {} ptx line {}: {}\n", fn.function, w.ptx.line, w.message));
  }
  if (!any) fmt::format_to(out, "no kernels found\n");
  return text;
}

nlohmann::json opSitesJson(const std::vector<analysis::OpSite>& sites) {
  return analysis::toJson(sites);
}

std::string opSitesTable(const std::vector<analysis::OpSite>& sites) {
  std::string text;
  auto out = std::back_inserter(text);
  fmt::format_to(out, "{:<40} {:<10} {:>6}  {:<28} {}\n", "op id", "kind", "line", "region",
                 "completion");
  for (const auto& site : sites) {
    const auto j = analysis::toJson(site);
    std::string regions;
    for (const auto& r : site.regions) regions += (regions.empty() ? "" : "|") + r;
    std::string completion;
    if (j.contains("completion")) {
      const auto& c = j["completion"];
      completion = c.value("kind", std::string());
      if (c.contains("barrier")) {
        const auto& b = c["barrier"];
        completion += " " + b.value("text", std::string());
        if (b.value("resolved", false)) completion += " = " + b.value("base", std::string());
      }
      if (c.contains("waits")) completion += fmt::format(", {} wait site(s)", c["waits"].size());
      // Parity phases of the barrier waits, as discovery proved them (or why it could not).
      std::vector<std::string> phases;
      for (const auto& w : c.value("waits", nlohmann::json::array())) {
        if (!w.contains("parity") || !w["parity"].contains("phase")) continue;
        const auto& ph = w["parity"]["phase"];
        std::string phase = ph.value("form", std::string()) + ": " +
                            ph.value("expression", ph.value("reason", std::string()));
        if (std::ranges::find(phases, phase) == phases.end()) phases.push_back(std::move(phase));
      }
      for (const auto& phase : phases) completion += "; phase " + phase;
      if (!c.value("resolved", true))
        completion += " (unresolved: " + c.value("reason", std::string()) + ")";
    }
    fmt::format_to(out, "{:<40} {:<10} {:>6}  {:<28} {}\n", site.opId,
                   analysis::toString(site.kind), site.where.line, regions.empty() ? "-" : regions,
                   completion);
  }
  fmt::format_to(out, "{} async op sites; --json gives the completion conditions in full\n",
                 sites.size());
  return text;
}

}  // namespace argus::report
