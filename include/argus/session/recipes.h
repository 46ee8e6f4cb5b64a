// What the session can do: the recipe catalog it plans with and the adapters of this build, for
// `argus recipes` and for agents that ask before they query.
#pragma once

#include <string>
#include <vector>

#include "argus/planner/recipe.h"
#include "argus/report/recipes.h"
#include "argus/support/status.h"

namespace argus::session {

/// The recipe catalog of `dir`; empty: $ARGUS_RECIPES or the source tree's recipes/.
[[nodiscard]] Result<planner::RecipeCatalog> loadRecipes(const std::string& dir);

/// Every adapter of this build (adapterRecords(), in its order) as the report shows it.
[[nodiscard]] std::vector<report::AdapterEntry> adapters();

}  // namespace argus::session
