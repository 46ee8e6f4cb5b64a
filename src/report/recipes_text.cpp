// The recipe and adapter catalogs as JSON and text (argus/report/recipes.h).
#include "argus/report/recipes.h"

#include <iterator>

#include <fmt/format.h>

#include "argus/query/scope.h"

namespace argus::report {
namespace {

using json = nlohmann::ordered_json;

json recipeJson(const planner::Recipe& r) {
  json signals = json::array();
  for (const auto& s : r.signals)
    signals.push_back({{"name", s.name},
                       {"unit", s.unit},
                       {"aggregation", planner::aggregationName(s.aggregation)},
                       {"description", s.description}});
  json scope = json::array();
  for (auto c : r.retainedScope) scope.push_back(query::coordinateName(c));
  return {{"name", r.name},
          {"description", r.description},
          {"kind", planner::recipeKindName(r.kind)},
          {"signals", signals},
          {"qualification", planner::qualificationName(r.qualification)},
          {"backend", r.backend},
          {"evidence", r.evidence},
          {"variant", r.variant},
          {"transforms", r.transforms},
          {"prerequisites", r.prerequisites},
          {"retained_scope", scope},
          {"effects", r.effects},
          {"invalidated_by", r.invalidatedBy},
          {"exclusions", r.exclusions},
          {"requires", r.requirements},
          {"isolated", r.isolated},
          {"synthesis", r.synthesis},
          {"file", r.file.string()}};
}

}  // namespace

json recipesJson(const planner::RecipeCatalog& catalog) {
  json all = json::array();
  for (const auto& r : catalog.recipes()) all.push_back(recipeJson(r));
  return json{{"schema", "argus.recipes/1"}, {"recipes", all}};
}

std::string recipesText(const planner::RecipeCatalog& catalog) {
  std::string text;
  auto out = std::back_inserter(text);
  fmt::format_to(out, "{:<24} {:<10} {:<11} {:<13} {}\n", "recipe", "kind", "qualifies", "variant",
                 "signals");
  for (const auto& r : catalog.recipes()) {
    std::string signals;
    for (const auto& s : r.signals) signals += (signals.empty() ? "" : ", ") + s.name;
    fmt::format_to(out, "{:<24} {:<10} {:<11} {:<13} {}\n", r.name, planner::recipeKindName(r.kind),
                   planner::qualificationName(r.qualification), r.variant, signals);
  }
  fmt::format_to(
      out, "\n`argus recipes --json` gives every field; docs/recipes.md explains each recipe.\n");
  return text;
}

json adaptersJson(const std::vector<AdapterEntry>& adapters) {
  json all = json::array();
  for (const auto& a : adapters)
    all.push_back({{"name", a.name},
                   {"description", a.description},
                   {"executors", a.executors},
                   {"machine_needs", a.machineNeeds}});
  return json{{"schema", "argus.adapters/1"}, {"adapters", all}};
}

std::string adaptersText(const std::vector<AdapterEntry>& adapters) {
  std::string text;
  auto out = std::back_inserter(text);
  for (const auto& a : adapters) {
    fmt::format_to(out, "{:<14} {}\n", a.name, a.description);
    fmt::format_to(out, "  {:<12} {}\n", "executors", fmt::join(a.executors, ", "));
    fmt::format_to(out, "  {:<12} {}\n", "needs",
                   a.machineNeeds.empty() ? std::string("nothing beyond this build")
                                          : fmt::format("{}", fmt::join(a.machineNeeds, "; ")));
  }
  fmt::format_to(out,
                 "\n{} adapters; `argus recipes --adapters --json` gives the same as JSON.\n"
                 "src/backends/template/README.md shows how to add one.\n",
                 adapters.size());
  return text;
}

}  // namespace argus::report
