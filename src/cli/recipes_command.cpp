// `argus recipes`: the recipe catalog (recipes/*.yaml) as text, JSON or Markdown.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/planner/recipe.h"
#include "commands.h"

namespace argus::cli {
namespace {

using json = nlohmann::ordered_json;

struct RecipesOptions {
  std::string dir;
  bool json = false;
  bool markdown = false;
};

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

int runRecipes(const RecipesOptions& o) {
  auto catalog = planner::RecipeCatalog::load(
      o.dir.empty() ? planner::RecipeCatalog::defaultDirectory() : std::filesystem::path(o.dir));
  if (!catalog) return reportError(catalog.error());
  if (o.markdown) {
    std::cout << planner::recipesMarkdown(*catalog);
    return 0;
  }
  if (o.json) {
    json all = json::array();
    for (const auto& r : catalog->recipes()) all.push_back(recipeJson(r));
    std::cout << json{{"schema", "argus.recipes/1"}, {"recipes", all}}.dump(2) << "\n";
    return 0;
  }
  fmt::print("{:<24} {:<10} {:<11} {:<13} {}\n", "recipe", "kind", "qualifies", "variant",
             "signals");
  for (const auto& r : catalog->recipes()) {
    std::string signals;
    for (const auto& s : r.signals) signals += (signals.empty() ? "" : ", ") + s.name;
    fmt::print("{:<24} {:<10} {:<11} {:<13} {}\n", r.name, planner::recipeKindName(r.kind),
               planner::qualificationName(r.qualification), r.variant, signals);
  }
  fmt::print("\n`argus recipes --json` gives every field; docs/recipes.md explains each recipe.\n");
  return 0;
}

}  // namespace

std::vector<Command> addRecipesCommands(CLI::App& app) {
  auto o = std::make_shared<RecipesOptions>();
  auto* verb = app.add_subcommand("recipes", "List the measurement recipes and their signals");
  verb->add_option("--dir", o->dir,
                   "Recipe directory (default: $ARGUS_RECIPES or the source tree's recipes/)");
  verb->add_flag("--json", o->json, "Machine-readable output (schema argus.recipes/1)");
  verb->add_flag("--markdown", o->markdown,
                 "The catalog as Markdown (how docs/recipes.md is made)");
  return {Command{verb, [o] { return runRecipes(*o); }}};
}

}  // namespace argus::cli
