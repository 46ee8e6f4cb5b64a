#include "argus/program/checkout.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "argus/program/triton.h"
#include "argus/support/process.h"

namespace argus::program {
namespace {

namespace fs = std::filesystem;

/// Written last into a complete checkout (before it is renamed into place).
constexpr const char* kCompleteMarker = ".argus-checkout";

/// The directory of the spec the root version of `version` was made from (its options record
/// it as `directory`), if known.
Result<std::optional<fs::path>> originDirectory(const workspace::Workspace& ws,
                                                workspace::VersionRecord version) {
  while (version.base) {
    auto base = ws.version(*version.base);
    if (!base) return std::unexpected(base.error());
    version = std::move(*base);
  }
  const auto options = nlohmann::json::parse(version.optionsJson, nullptr, false);
  if (options.is_object() && options.contains("directory") && options["directory"].is_string())
    return std::optional<fs::path>(options["directory"].get<std::string>());
  return std::optional<fs::path>{};
}

/// A unique name in `parent` for a directory being written.
fs::path temporarySibling(const fs::path& dir) {
  static std::atomic<unsigned> counter{0};
  return dir.parent_path() /
         fmt::format(".{}.tmp.{}.{}", dir.filename().string(), ::getpid(), counter++);
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
  const fs::path specPath = dir / spec->name;
  // A version never changes, so a complete checkout of it is reused as it is (rewriting it would
  // pull the files from under a query that is running on them).
  std::error_code ec;
  if (fs::exists(dir / kCompleteMarker, ec)) return specPath;

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
  bool changed = false;  // when nothing changes, the spec is written byte for byte

  // Paths that lead out of the version (include directories, an interpreter, -I flags, library
  // files) are resolved against the directory of the spec the root version was made from.
  auto origin = originDirectory(ws, *version);
  if (!origin) return std::unexpected(origin.error());
  auto rebase = [&](const std::string& what, const std::string& path) -> Result<std::string> {
    const fs::path p = path;
    if (p.is_absolute()) return path;
    if (!*origin || !fs::is_directory(**origin, ec))
      return fail("checkout",
                  fmt::format("{}: its spec {} names `{}` ({}) relative to its own directory, "
                              "which a version does not keep, and {}; query the spec's own "
                              "directory instead",
                              id.text(), spec->name, path, what,
                              *origin ? "that directory " + (*origin)->string() + " is gone"
                                      : "the version does not record the spec's directory"));
    changed = true;
    return (**origin / p).lexically_normal().string();
  };
  if (root["include_dirs"] && root["include_dirs"].IsSequence()) {
    YAML::Node dirs(YAML::NodeType::Sequence);
    for (const auto& entry : root["include_dirs"]) {
      auto path = rebase("include_dirs", entry.as<std::string>());
      if (!path) return std::unexpected(path.error());
      dirs.push_back(*path);
    }
    root["include_dirs"] = dirs;
  }
  if (root["python"] && root["python"].IsScalar() &&
      root["python"].as<std::string>().find('/') != std::string::npos) {
    auto path = rebase("python", root["python"].as<std::string>());
    if (!path) return std::unexpected(path.error());
    root["python"] = *path;
  }
  if (root["nvcc_flags"] && root["nvcc_flags"].IsSequence()) {
    YAML::Node flags(YAML::NodeType::Sequence);
    bool includeNext = false;
    for (const auto& entry : root["nvcc_flags"]) {
      std::string flag = entry.as<std::string>();
      if (includeNext || (flag.starts_with("-I") && flag.size() > 2)) {
        const size_t at = includeNext ? 0 : 2;
        auto path = rebase("an -I of nvcc_flags", flag.substr(at));
        if (!path) return std::unexpected(path.error());
        flag = flag.substr(0, at) + *path;
      }
      includeNext = flag == "-I";
      flags.push_back(flag);
    }
    root["nvcc_flags"] = flags;
  }
  if (root["link_libraries"] && root["link_libraries"].IsSequence()) {
    YAML::Node libs(YAML::NodeType::Sequence);
    for (const auto& entry : root["link_libraries"]) {
      std::string lib = entry.as<std::string>();
      if (!lib.starts_with('-') && lib.find('/') != std::string::npos) {
        auto path = rebase("link_libraries", lib);
        if (!path) return std::unexpected(path.error());
        lib = *path;
      }
      libs.push_back(lib);
    }
    root["link_libraries"] = libs;
  }

  std::map<std::string, const workspace::VersionFile*> byName;
  for (const auto& f : *files) byName[f.name] = &f;
  // Every path the spec names becomes the file name the version keeps it under.
  auto flat = [&](const std::string& key, const YAML::Node& entry) -> Result<std::string> {
    const std::string given = entry.as<std::string>();
    const std::string name = fs::path(given).filename().string();
    if (!byName.contains(name))
      return fail("checkout", fmt::format("{}: its spec's `{}` names {}, which the version does "
                                          "not hold",
                                          id.text(), key, given));
    changed = changed || name != given;
    return name;
  };
  for (const char* key : {"script", "sources", "host_sources"}) {
    YAML::Node node = root[key];
    if (!node) continue;
    if (node.IsScalar()) {
      auto name = flat(key, node);
      if (!name) return std::unexpected(name.error());
      root[key] = *name;
    } else if (node.IsSequence()) {
      YAML::Node list(YAML::NodeType::Sequence);
      for (const auto& entry : node) {
        auto name = flat(key, entry);
        if (!name) return std::unexpected(name.error());
        list.push_back(*name);
      }
      root[key] = list;
    }
  }
  // A fork's edited Triton IR joins `sources` (in place of any IR the spec listed).
  if (root["language"] && root["language"].as<std::string>() == "triton") {
    std::vector<std::string> irs, listed;
    for (const auto& f : *files)
      if (isTritonIrFile(f.name)) irs.push_back(f.name);
    if (irs.size() > 1)
      return fail("checkout",
                  fmt::format("{} holds {} Triton IR files ({}); the kernel is compiled from one: "
                              "give the edit the name of the IR it replaces (`argus ws fork "
                              "BASE --file {}=EDITED`)",
                              id.text(), irs.size(), fmt::join(irs, ", "), irs.front()));
    YAML::Node sources(YAML::NodeType::Sequence);
    if (root["sources"] && root["sources"].IsSequence())
      for (const auto& entry : root["sources"]) {
        if (isTritonIrFile(entry.as<std::string>())) {
          listed.push_back(entry.as<std::string>());
          continue;
        }
        sources.push_back(entry);
      }
    for (const auto& name : irs) sources.push_back(name);
    if (listed != irs) {
      changed = true;
      root["sources"] = sources;
    }
  }

  // Written beside the final directory and renamed into place: a checkout is complete or absent.
  const fs::path temporary = temporarySibling(dir);
  fs::create_directories(temporary, ec);
  if (ec)
    return fail("checkout", fmt::format("cannot create {}: {}", temporary.string(), ec.message()));
  auto cleanup = [&] { fs::remove_all(temporary, ec); };
  for (const auto& f : *files) {
    // A workspace made elsewhere may hold any name: never write outside the checkout.
    if (auto ok = workspace::checkVersionFileName(f.name); !ok)
      return cleanup(), fail("checkout", fmt::format("{}: {}", id.text(), ok.error().message));
    if (&f == &*spec) continue;
    auto bytes = ws.readArtifact(f.artifact.id);
    if (!bytes) return cleanup(), std::unexpected(bytes.error());
    if (auto ok = writeFile(temporary / f.name, *bytes); !ok)
      return cleanup(), std::unexpected(ok.error());
  }
  std::string text = *specText;
  if (changed) {
    YAML::Emitter out;
    out << root;
    text = std::string(out.c_str()) + "\n";
  }
  if (auto ok = writeFile(temporary / spec->name, text); !ok)
    return cleanup(), std::unexpected(ok.error());
  if (auto ok = writeFile(temporary / kCompleteMarker, id.text() + "\n"); !ok)
    return cleanup(), std::unexpected(ok.error());
  // An older, unmarked checkout (left by an interrupted writer) is moved aside first.
  if (fs::exists(dir, ec) && !fs::exists(dir / kCompleteMarker, ec)) {
    const fs::path stale = temporarySibling(dir);
    fs::rename(dir, stale, ec);
    fs::remove_all(stale, ec);
  }
  fs::rename(temporary, dir, ec);
  if (ec) {
    cleanup();
    // Another process put the same version in place first.
    if (fs::exists(dir / kCompleteMarker, ec)) return specPath;
    return fail("checkout",
                fmt::format("cannot put the checkout of {} at {}", id.text(), dir.string()));
  }
  return specPath;
}

}  // namespace argus::program
