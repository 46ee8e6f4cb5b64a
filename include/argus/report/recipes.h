// The catalogs `argus recipes` shows: the measurement recipes (JSON, text, Markdown) and the
// adapters of this build (JSON, text).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/planner/recipe.h"

namespace argus::report {

/// The catalog as argus.recipes/1 JSON: every field of every recipe.
[[nodiscard]] nlohmann::ordered_json recipesJson(const planner::RecipeCatalog& catalog);

/// The catalog as a table (recipe, kind, qualification, variant, signals) and a pointer to the
/// full forms.
[[nodiscard]] std::string recipesText(const planner::RecipeCatalog& catalog);

/// The catalog as Markdown (how docs/recipes.md is made).
[[nodiscard]] inline std::string recipesMarkdown(const planner::RecipeCatalog& catalog) {
  return planner::recipesMarkdown(catalog);
}

/// One backend adapter of this build, as its registration record describes it.
struct AdapterEntry {
  std::string name;
  std::string description;
  std::vector<std::string> executors;
  std::vector<std::string> machineNeeds;
};

/// The adapters as argus.adapters/1 JSON (name, description, executors, machine_needs).
[[nodiscard]] nlohmann::ordered_json adaptersJson(const std::vector<AdapterEntry>& adapters);

/// The adapters as text: one block per adapter with its executors and machine needs.
[[nodiscard]] std::string adaptersText(const std::vector<AdapterEntry>& adapters);

}  // namespace argus::report
