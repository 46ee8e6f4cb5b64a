// The recipe catalog and the adapters of this build (argus/session/recipes.h).
#include "argus/session/recipes.h"

#include <filesystem>

#include "argus/session/catalog.h"

namespace argus::session {

Result<planner::RecipeCatalog> loadRecipes(const std::string& dir) {
  return planner::RecipeCatalog::load(dir.empty() ? planner::RecipeCatalog::defaultDirectory()
                                                  : std::filesystem::path(dir));
}

std::vector<report::AdapterEntry> adapters() {
  std::vector<report::AdapterEntry> entries;
  for (const auto* record : adapterRecords()) {
    report::AdapterEntry entry{.name = std::string(record->name),
                               .description = std::string(record->description),
                               .executors = {},
                               .machineNeeds = {}};
    for (const auto name : record->executors) entry.executors.emplace_back(name);
    for (const auto need : record->machineNeeds) entry.machineNeeds.emplace_back(need);
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace argus::session
