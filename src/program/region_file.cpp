// Region files and derive lists (argus/program/region_file.h).
#include "argus/program/region_file.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/ptx/regions.h"
#include "argus/support/process.h"

namespace argus::program {
namespace {

namespace fs = std::filesystem;

/// Region files nest a few levels; past this one is refused (docs/limits.md).
constexpr int kMaxRegionFileDepth = 64;

std::string place(const fs::path& file, const YAML::Node& node) {
  const auto mark = node.Mark();
  return fmt::format("{}:{}:{}", file.string(), mark.line + 1, mark.column + 1);
}

Error fileError(const fs::path& file, const YAML::Node& node, std::string_view problem) {
  return Error{"regions", fmt::format("{}: {}", place(file, node), problem)};
}

Result<std::string> text(const YAML::Node& node, const fs::path& file, std::string_view field) {
  if (!node.IsScalar())
    return std::unexpected(
        fileError(file, node, fmt::format("field `{}` must be a string", field)));
  return node.Scalar();
}

/// A `derive` field: a list of selectors or one comma-separated string.
Result<std::string> deriveList(const YAML::Node& node, const fs::path& file) {
  if (node.IsScalar()) return node.Scalar();
  if (!node.IsSequence())
    return std::unexpected(fileError(file, node,
                                     "field `derive` must be a list of selectors (or one "
                                     "string such as `loops,ops`)"));
  std::string list;
  for (const auto& item : node) {
    auto t = text(item, file, "derive");
    if (!t) return std::unexpected(t.error());
    list += (list.empty() ? "" : ",") + *t;
  }
  return list;
}

Result<std::vector<ptx::RegionDefinition>> definitions(const YAML::Node& node, const fs::path& file,
                                                       int depth) {
  std::vector<ptx::RegionDefinition> out;
  if (!node.IsSequence())
    return std::unexpected(fileError(file, node,
                                     "field `regions` must be a list of regions, each with "
                                     "`select` (and `name`) or `refine`"));
  if (depth > kMaxRegionFileDepth)
    return std::unexpected(fileError(
        file, node, fmt::format("regions nest deeper than {} levels", kMaxRegionFileDepth)));
  for (const auto& item : node) {
    if (!item.IsMap())
      return std::unexpected(fileError(file, item,
                                       "a region is a mapping with `select` (and `name`) or "
                                       "`refine`, and optionally `regions`"));
    ptx::RegionDefinition def;
    def.origin = place(file, item);
    for (const auto& field : item) {
      const std::string key = field.first.IsScalar() ? field.first.Scalar() : "";
      if (key == "name" || key == "select" || key == "refine") {
        auto value = text(field.second, file, key);
        if (!value) return std::unexpected(value.error());
        (key == "name" ? def.name : key == "select" ? def.select : def.refine) = *value;
      } else if (key == "regions") {
        auto children = definitions(field.second, file, depth + 1);
        if (!children) return std::unexpected(children.error());
        def.children = std::move(*children);
      } else {
        return std::unexpected(fileError(
            file, field.first,
            fmt::format("unknown field `{}` in a region (fields: name, select, refine, regions)",
                        key)));
      }
    }
    if (def.select.empty() == def.refine.empty())
      return std::unexpected(fileError(file, item,
                                       def.select.empty()
                                           ? "a region needs `select: SELECTOR` (a new region) "
                                             "or `refine: PATH` (a marked region to split)"
                                           : "give `select` or `refine`, not both"));
    if (!def.refine.empty() && !def.name.empty())
      return std::unexpected(fileError(file, item,
                                       "`refine` keeps the marked region's name; drop `name` "
                                       "(the new regions are its `regions`)"));
    if (!def.refine.empty() && def.children.empty())
      return std::unexpected(
          fileError(file, item, "`refine` without `regions` defines nothing; list the parts"));
    if (!def.select.empty())
      if (auto sel = ptx::parseSelector(def.select); !sel)
        return std::unexpected(Error{"regions", def.origin + ": " + sel.error().message});
    if (!def.name.empty() && !ptx::isValidRegionName(def.name))
      return std::unexpected(
          fileError(file, item,
                    fmt::format("region name `{}` must match [A-Za-z_][A-Za-z0-9_.-]*", def.name)));
    out.push_back(std::move(def));
  }
  return out;
}

Result<ptx::RegionDefinitions> parseFields(const fs::path& file, std::string_view bytes) {
  YAML::Node root = YAML::Load(std::string(bytes));
  if (!root.IsMap())
    return fail("regions", fmt::format("{}: a region file is a mapping with `regions` (and "
                                       "optionally `kernel`, `derive`); see docs/regions-file.md",
                                       file.string()));
  ptx::RegionDefinitions defs;
  std::string list;
  for (const auto& field : root) {
    const std::string key = field.first.IsScalar() ? field.first.Scalar() : "";
    if (key == "kernel") {
      auto k = text(field.second, file, "kernel");
      if (!k) return std::unexpected(k.error());
      defs.kernel = *k;
    } else if (key == "derive") {
      auto l = deriveList(field.second, file);
      if (!l) return std::unexpected(l.error());
      list = *l;
    } else if (key == "regions") {
      auto regions = definitions(field.second, file, 0);
      if (!regions) return std::unexpected(regions.error());
      defs.regions = std::move(*regions);
    } else if (key != "argus_regions") {
      return std::unexpected(fileError(
          file, field.first,
          fmt::format("unknown field `{}` (fields: argus_regions, kernel, derive, regions)", key)));
    }
  }
  if (!list.empty()) {
    auto derived = ptx::definitionsFromList(list);
    if (!derived)
      return fail("regions",
                  fmt::format("{}: field `derive`: {}", file.string(), derived.error().message));
    // The derived kinds come first: the file's own regions may nest in them.
    for (auto& def : derived->regions)
      def.origin = fmt::format("{}: derive {}", file.string(), def.select);
    defs.regions.insert(defs.regions.begin(), derived->regions.begin(), derived->regions.end());
  }
  if (defs.regions.empty())
    return fail("regions",
                fmt::format("{}: defines no region: give `regions` or `derive`", file.string()));
  return defs;
}

}  // namespace

Result<ptx::RegionDefinitions> loadRegionFile(const fs::path& file) {
  auto bytes = readFile(file);
  if (!bytes) return std::unexpected(bytes.error());
  return parseRegionFile(*bytes, file);
}

Result<ptx::RegionDefinitions> parseRegionFile(std::string_view text, const fs::path& file) {
  try {
    return parseFields(file, text);
  } catch (const YAML::Exception& e) {
    return fail("regions", fmt::format("{}:{}:{}: {}", file.string(), e.mark.line + 1,
                                       e.mark.column + 1, e.msg));
  }
}

Result<std::vector<ptx::RegionDefinitions>> definitionsOf(const DeriveRequest& request) {
  std::vector<ptx::RegionDefinitions> out;
  if (!request.file.empty()) {
    auto defs = loadRegionFile(request.file);
    if (!defs) return std::unexpected(defs.error());
    out.push_back(std::move(*defs));
  }
  if (!request.list.empty()) {
    auto defs = ptx::definitionsFromList(request.list);
    if (!defs) return std::unexpected(defs.error());
    out.push_back(std::move(*defs));
  }
  return out;
}

Result<std::string> derivePtx(std::string text, const std::string& displayName,
                              const std::vector<DeriveRequest>& requests) {
  std::vector<ptx::RegionDefinitions> all;
  for (const auto& request : requests) {
    auto defs = definitionsOf(request);
    if (!defs) return std::unexpected(defs.error());
    for (auto& d : *defs) all.push_back(std::move(d));
  }
  if (all.empty()) return text;
  auto module = ptx::parseModule(text, displayName);
  if (!module) return std::unexpected(module.error());
  for (const auto& defs : all)
    if (auto placed = ptx::deriveRegions(*module, defs); !placed)
      return std::unexpected(placed.error());
  return ptx::printModule(*module);
}

Result<std::string> deriveMaterial(const DeriveRequest& request) {
  if (request.empty()) return std::string();
  std::string material = std::string("derive") + '\0' + request.list + '\0';
  if (!request.file.empty()) {
    auto bytes = readFile(request.file);
    if (!bytes) return std::unexpected(bytes.error());
    material += request.file.filename().string() + '\0' + *bytes + '\0';
  }
  return material;
}

}  // namespace argus::program
