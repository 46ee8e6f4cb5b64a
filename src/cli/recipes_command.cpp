// `argus recipes`: the recipe catalog (recipes/*.yaml) as text, JSON or Markdown; with
// --adapters, the backend adapters of this build.
#include <iostream>
#include <memory>
#include <string>

#include "argus/report/recipes.h"
#include "argus/session/recipes.h"
#include "commands.h"

namespace argus::cli {
namespace {

struct RecipesOptions {
  std::string dir;
  bool json = false;
  bool markdown = false;
  bool adapters = false;
};

int runRecipes(const RecipesOptions& o) {
  if (o.adapters) {
    const auto adapters = session::adapters();
    if (o.json)
      std::cout << report::adaptersJson(adapters).dump(2) << "\n";
    else
      std::cout << report::adaptersText(adapters);
    return 0;
  }
  auto catalog = session::loadRecipes(o.dir);
  if (!catalog) return reportError(catalog.error());
  if (o.markdown) {
    std::cout << report::recipesMarkdown(*catalog);
    return 0;
  }
  if (o.json) {
    std::cout << report::recipesJson(*catalog).dump(2) << "\n";
    return 0;
  }
  std::cout << report::recipesText(*catalog);
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
  auto* adapters = verb->add_flag(
      "--adapters", o->adapters,
      "List the backend adapters of this build instead: name, description, executors and what "
      "each needs on the machine (with --json: schema argus.adapters/1)");
  adapters->excludes("--markdown");
  adapters->excludes("--dir");
  return {Command{verb, [o] { return runRecipes(*o); }}};
}

}  // namespace argus::cli
