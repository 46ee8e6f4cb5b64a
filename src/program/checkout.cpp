#include "argus/program/checkout.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "argus/support/process.h"

namespace argus::program {
namespace {

namespace fs = std::filesystem;

bool isTritonIr(const fs::path& name) {
  return name.extension() == ".ttgir" || name.extension() == ".ttir";
}

}  // namespace

Result<fs::path> checkoutVersion(const workspace::Workspace& ws, workspace::VersionId id,
                                 const fs::path& dir) {
  auto version = ws.version(id);
  if (!version) return std::unexpected(version.error());
  if (version->kind != workspace::VersionKind::program)
    return fail("checkout", fmt::format("{} is a measurement variant, not a program version; "
                                        "`argus ws list` shows the program versions",
                                        id.text()));
  auto files = ws.versionFiles(id);
  if (!files) return std::unexpected(files.error());
  const auto spec = std::find_if(files->begin(), files->end(),
                                 [](const auto& f) { return f.artifact.kind == "program_spec"; });
  if (spec == files->end())
    return fail("checkout", fmt::format("{} holds no program spec (versions made by `argus query "
                                        "--program SPEC` and their forks do)",
                                        id.text()));
  auto specText = ws.readArtifact(spec->artifact.id);
  if (!specText) return std::unexpected(specText.error());
  YAML::Node root;
  try {
    root = YAML::Load(*specText);
  } catch (const YAML::Exception& e) {
    return fail("checkout",
                fmt::format("{}: its spec {} does not parse: {}", id.text(), spec->name, e.what()));
  }
  if (!root.IsMap())
    return fail("checkout",
                fmt::format("{}: its spec {} is not a YAML map", id.text(), spec->name));
  if (root["include_dirs"]) {
    // Include directories are not part of a version: they are resolved against the directory of
    // the spec the root version was made from, which its options record.
    std::optional<fs::path> origin;
    for (auto v = version; v;) {
      if (!v->base) {
        const auto options = nlohmann::json::parse(v->optionsJson, nullptr, false);
        if (options.is_object() && options.contains("directory"))
          origin = options["directory"].get<std::string>();
        break;
      }
      v = ws.version(*v->base);
      if (!v) return std::unexpected(v.error());
    }
    std::error_code ec;
    if (!origin || !fs::is_directory(*origin, ec))
      return fail("checkout",
                  fmt::format("{}: its spec {} names include_dirs, which a version does not keep, "
                              "and {}; query the spec's own directory instead",
                              id.text(), spec->name,
                              origin ? "the spec's directory " + origin->string() + " is gone"
                                     : "the version does not record the spec's directory"));
    YAML::Node dirs(YAML::NodeType::Sequence);
    for (const auto& entry : root["include_dirs"]) {
      const fs::path include = entry.as<std::string>();
      dirs.push_back(
          (include.is_absolute() ? include : (*origin / include).lexically_normal()).string());
    }
    root["include_dirs"] = dirs;
  }

  std::map<std::string, const workspace::VersionFile*> byName;
  for (const auto& f : *files) byName[f.name] = &f;
  // Every path the spec names becomes the file name the version keeps it under.
  auto rename = [&](const std::string& key) -> Result<void> {
    YAML::Node node = root[key];
    if (!node) return {};
    auto flat = [&](const YAML::Node& entry) -> Result<std::string> {
      const std::string name = fs::path(entry.as<std::string>()).filename().string();
      if (!byName.contains(name))
        return fail("checkout", fmt::format("{}: its spec's `{}` names {}, which the version does "
                                            "not hold",
                                            id.text(), key, entry.as<std::string>()));
      return name;
    };
    if (node.IsScalar()) {
      auto name = flat(node);
      if (!name) return std::unexpected(name.error());
      root[key] = *name;
    } else if (node.IsSequence()) {
      YAML::Node list(YAML::NodeType::Sequence);
      for (const auto& entry : node) {
        auto name = flat(entry);
        if (!name) return std::unexpected(name.error());
        list.push_back(*name);
      }
      root[key] = list;
    }
    return {};
  };
  for (const char* key : {"script", "sources", "host_sources"})
    if (auto ok = rename(key); !ok) return std::unexpected(ok.error());
  // A fork's edited Triton IR joins `sources` (in place of any IR the spec listed).
  if (root["language"] && root["language"].as<std::string>() == "triton") {
    std::vector<std::string> added;
    for (const auto& f : *files)
      if (isTritonIr(f.name) && f.name != spec->name) added.push_back(f.name);
    YAML::Node sources(YAML::NodeType::Sequence);
    if (root["sources"] && root["sources"].IsSequence())
      for (const auto& entry : root["sources"])
        if (!isTritonIr(entry.as<std::string>())) sources.push_back(entry);
    if (added.size() > 1)
      return fail("checkout", fmt::format("{} holds {} Triton IR files ({}); the kernel is "
                                          "compiled from one: fork with one edited .ttgir",
                                          id.text(), added.size(), fmt::join(added, ", ")));
    for (const auto& name : added) sources.push_back(name);
    root["sources"] = sources;
  }

  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) return fail("checkout", fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  for (const auto& f : *files) {
    if (&f == &*spec) continue;
    auto bytes = ws.readArtifact(f.artifact.id);
    if (!bytes) return std::unexpected(bytes.error());
    if (auto ok = writeFile(dir / f.name, *bytes); !ok) return std::unexpected(ok.error());
  }
  YAML::Emitter out;
  out << root;
  const fs::path specPath = dir / spec->name;
  if (auto ok = writeFile(specPath, fmt::format("# {} of workspace {}, written by Argus (the "
                                                "version's own spec with its file names)\n{}\n",
                                                id.text(), ws.directory().string(), out.c_str()));
      !ok)
    return std::unexpected(ok.error());
  return specPath;
}

}  // namespace argus::program
