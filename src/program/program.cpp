#include "argus/program/program.h"

#include "argus/program/build.h"
#include "argus/program/triton.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "argus/support/process.h"
#include "argus/workspace/hash.h"

namespace argus::program {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSpecFieldNames[] = {
    "name",    "language",   "sources",        "host_sources", "include_dirs",
    "arch",    "nvcc_flags", "link_libraries", "run",          "check",
    "kernels", "script",     "python",         "regions",      "derive"};
constexpr std::string_view kSpecFields =
    "name, language, sources, host_sources, include_dirs, arch, nvcc_flags, link_libraries, run, "
    "check, kernels, script (triton), python (triton), regions, derive";

Error specError(const fs::path& file, std::string_view field, std::string_view problem) {
  return Error{"program", fmt::format("{}: field `{}`: {}", file.string(), field, problem)};
}

/// The scalar at `node` as T, or an error naming the file, line and column, the field and what
/// to give: a wrong YAML type (`timeout_s: 5m`, `language: [cuda]`) is an error, never an abort.
template <class T>
Result<T> scalar(const YAML::Node& node, const fs::path& file, std::string_view field,
                 std::string_view expected) {
  T value{};
  if (node.IsScalar() && YAML::convert<T>::decode(node, value)) return value;
  const auto mark = node.Mark();
  const std::string given = node.IsSequence() ? "a list"
                            : node.IsMap()    ? "a mapping"
                            : node.IsNull()   ? "empty"
                                              : fmt::format("`{}`", node.Scalar());
  return std::unexpected(
      Error{"program", fmt::format("{}:{}:{}: field `{}`: is {}; give {}", file.string(),
                                   mark.line + 1, mark.column + 1, field, given, expected)});
}

/// Assigns the scalar at `node` to `out` (see scalar), or returns its error.
template <class T>
Result<void> assign(T& out, const YAML::Node& node, const fs::path& file, std::string_view field,
                    std::string_view expected) {
  auto value = scalar<T>(node, file, field, expected);
  if (!value) return std::unexpected(value.error());
  out = std::move(*value);
  return {};
}

Result<std::vector<std::string>> stringList(const YAML::Node& node, const fs::path& file,
                                            std::string_view field) {
  std::vector<std::string> out;
  if (!node || node.IsNull()) return out;
  if (!node.IsSequence()) return std::unexpected(specError(file, field, "must be a list"));
  for (const auto& item : node) {
    if (!item.IsScalar()) return std::unexpected(specError(file, field, "entries must be strings"));
    out.push_back(item.as<std::string>());
  }
  return out;
}

/// Whether files a spec lists may lie outside its folder: only when the person running Argus
/// says so (ARGUS_ALLOW_OUTSIDE_SOURCES=1, docs/environment.md), never the spec itself, since
/// specs come from others and Argus reads, compiles and stores what they list.
bool outsideSourcesAllowed() {
  const char* env = std::getenv("ARGUS_ALLOW_OUTSIDE_SOURCES");
  return env != nullptr && std::string_view(env) == "1";
}

/// `path` (canonical: symlinks and `..` resolved) if it lies under the spec's folder, or an
/// error naming the field and both ways out.
Result<fs::path> confined(fs::path path, const fs::path& file, std::string_view field,
                          std::string_view name) {
  if (outsideSourcesAllowed()) return path;
  const fs::path folder = fs::weakly_canonical(file.parent_path());
  const auto [f, p] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  if (f == folder.end()) return path;
  return std::unexpected(specError(
      file, field,
      fmt::format("`{}` ({}) is outside the spec's folder {}; a spec lists files under its own "
                  "folder (Argus reads, compiles and stores them): copy the file there, or, if "
                  "you trust this spec, run Argus with ARGUS_ALLOW_OUTSIDE_SOURCES=1",
                  name, path.string(), folder.string())));
}

/// The files (or directories) a list field names, relative to the spec; `confine` keeps them
/// under the spec's folder (confined).
Result<std::vector<fs::path>> existingPaths(const YAML::Node& node, const fs::path& file,
                                            std::string_view field, bool directories,
                                            bool confine) {
  auto names = stringList(node, file, field);
  if (!names) return std::unexpected(names.error());
  std::vector<fs::path> out;
  for (const auto& name : *names) {
    std::error_code ec;
    fs::path path = fs::weakly_canonical(file.parent_path() / name, ec);
    if (ec)
      return std::unexpected(
          specError(file, field,
                    fmt::format("`{}` is not a path Argus can resolve: {}", name, ec.message())));
    bool ok = directories ? fs::is_directory(path, ec) : fs::is_regular_file(path, ec);
    if (!ok)
      return std::unexpected(
          specError(file, field,
                    fmt::format("`{}` ({}) is not an existing {}; paths are relative to the spec",
                                name, path.string(), directories ? "directory" : "file")));
    if (confine) {
      auto inside = confined(std::move(path), file, field, name);
      if (!inside) return std::unexpected(inside.error());
      path = std::move(*inside);
    }
    out.push_back(path);
  }
  return out;
}

Result<std::string> runNvccPtx(const std::vector<fs::path>& includeDirs,
                               const std::vector<std::string>& flags, const std::string& arch,
                               const fs::path& source) {
  auto nvcc = findTool("nvcc");
  if (!nvcc) return std::unexpected(nvcc.error());
  auto dir = makeTempDir("argus-nvcc");
  if (!dir) return std::unexpected(dir.error());
  fs::path out = *dir / (source.stem().string() + ".ptx");
  std::vector<std::string> argv{nvcc->string(), "-ptx", "-lineinfo", "-arch=" + arch,
                                "-I" ARGUS_INCLUDE_DIR};
  for (const auto& inc : includeDirs) argv.push_back("-I" + inc.string());
  // -gencode/-arch choose what a full build embeds; PTX generation uses --arch only.
  for (const auto& f : flags)
    if (!f.starts_with("-gencode") && !f.starts_with("--generate-code") && !f.starts_with("-arch"))
      argv.push_back(f);
  argv.insert(argv.end(), {"-o", out.string(), source.string()});
  // nvcc's temporary files in the folder too (see Builder::execute in build.cpp).
  auto run = runProcess(argv, {.workingDirectory = std::nullopt,
                               .timeout = std::chrono::seconds(600),
                               .environment = {{"TMPDIR", dir->string()}}});
  std::string text;
  if (run && run->exitCode == 0) {
    auto read = readFile(out);
    if (!read) return std::unexpected(read.error());
    text = std::move(*read);
  }
  std::error_code ec;
  fs::remove_all(*dir, ec);
  if (!run) return std::unexpected(run.error());
  if (run->exitCode != 0)
    return fail("nvcc", fmt::format("compiling `{}` to PTX failed (exit {}):\n{}", source.string(),
                                    run->exitCode, run->err));
  return text;
}

}  // namespace

std::map<std::string, std::array<std::uint32_t, 3>> blockShapes(const ProgramSpec& spec) {
  std::map<std::string, std::array<std::uint32_t, 3>> out;
  for (const auto& k : spec.kernels)
    if (k.block) out[k.name] = *k.block;
  return out;
}

namespace {

/// loadProgramSpec, throwing YAML::Exception where a node is not of the shape read.
Result<ProgramSpec> loadProgramSpecFields(const fs::path& specFile) {
  fs::path file = fs::absolute(specFile);
  if (std::error_code ec; fs::is_directory(file, ec)) {
    std::error_code none;
    const fs::path inside = file / "argus.yaml";
    return fail("program",
                fmt::format("{} is a directory; give a program spec file (a YAML file such as "
                            "argus.yaml, docs/program-spec.md){}",
                            file.string(),
                            fs::is_regular_file(inside, none)
                                ? fmt::format(": this directory has one: {}", inside.string())
                                : std::string()));
  }
  auto text = readFile(file);
  if (!text) return std::unexpected(text.error());
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return fail("program", fmt::format("{}:{}:{}: not valid YAML: {}", file.string(),
                                       e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap())
    return fail("program", fmt::format("{}: a program spec must be a YAML mapping", file.string()));
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>();
    if (std::find(std::begin(kSpecFieldNames), std::end(kSpecFieldNames), key) ==
        std::end(kSpecFieldNames))
      return std::unexpected(
          specError(file, key, fmt::format("is not a spec field; fields are {}", kSpecFields)));
  }
  ProgramSpec spec;
  spec.file = file;
  if (!root["name"] || !root["name"].IsScalar())
    return std::unexpected(specError(file, "name", "is required (a string)"));
  spec.name = root["name"].as<std::string>();
  // The name names the executable Argus builds and reaches the Triton wrapper script: a plain
  // file name only, so it can neither write outside the build folder nor reach a shell.
  const bool plain =
      !spec.name.empty() && spec.name.size() <= 128 && spec.name.front() != '.' &&
      spec.name.front() != '-' && std::all_of(spec.name.begin(), spec.name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
      });
  if (!plain)
    return std::unexpected(specError(
        file, "name",
        fmt::format("is `{}`; a program name is a plain file name of letters, digits, `_`, `-` "
                    "and `.` (not first), at most 128 characters, like tma_gemm: it names the "
                    "executable Argus builds",
                    spec.name)));
  if (root["language"])
    if (auto ok = assign(spec.language, root["language"], file, "language", "`cuda` or `triton`");
        !ok)
      return std::unexpected(ok.error());
  if (spec.language != "cuda" && spec.language != "triton")
    return std::unexpected(
        specError(file, "language", fmt::format("is `{}`; use `cuda` or `triton`", spec.language)));
  if (root["arch"])
    if (auto ok = assign(spec.arch, root["arch"], file, "arch", "an architecture like sm_90a"); !ok)
      return std::unexpected(ok.error());
  const bool triton = spec.language == "triton";
  if (!triton && (root["script"] || root["python"]))
    return std::unexpected(
        specError(file, root["script"] ? "script" : "python", "is for `language: triton` specs"));
  if (triton) {
    if (!root["script"] || !root["script"].IsScalar())
      return std::unexpected(specError(file, "script",
                                       "is required for a Triton program: the Python script that "
                                       "launches the kernel, e.g. `script: run.py`"));
    spec.script = fs::weakly_canonical(file.parent_path() / root["script"].as<std::string>());
    std::error_code ec;
    if (!fs::is_regular_file(spec.script, ec))
      return std::unexpected(
          specError(file, "script",
                    fmt::format("`{}` is not an existing file; paths are relative to the spec",
                                spec.script.string())));
    auto script = confined(spec.script, file, "script", root["script"].as<std::string>());
    if (!script) return std::unexpected(script.error());
    if (root["python"])
      if (auto ok = assign(spec.python, root["python"], file, "python", "the interpreter's path");
          !ok)
        return std::unexpected(ok.error());
    if (root["host_sources"] || root["nvcc_flags"] || root["link_libraries"])
      return std::unexpected(specError(file, "host_sources/nvcc_flags/link_libraries",
                                       "do not apply to a Triton program (Triton compiles it)"));
  }

  auto sources = existingPaths(root["sources"], file, "sources", false, true);
  if (!sources) return std::unexpected(sources.error());
  if (sources->empty() && !triton)
    return std::unexpected(specError(file, "sources", "must list at least one .cu file"));
  if (sources->size() > 1 && !triton)
    return std::unexpected(specError(
        file, "sources",
        fmt::format("lists {} files; Argus transforms one device source per program (the one "
                    "with the kernels to measure). List the other .cu files under "
                    "`host_sources`: they are compiled unchanged, their device code included",
                    sources->size())));
  if (triton) {
    const auto irs = std::ranges::count_if(*sources, isTritonIrFile);
    if (irs > 1)
      return std::unexpected(specError(
          file, "sources",
          fmt::format("lists {} Triton IR files (.ttgir/.ttir); a listed IR is the one the kernel "
                      "is compiled from, so list one",
                      irs)));
  }
  spec.sources = std::move(*sources);
  // A Triton program's content is its script (plus any listed sources).
  if (triton) spec.sources.insert(spec.sources.begin(), spec.script);
  auto hostSources = existingPaths(root["host_sources"], file, "host_sources", false, true);
  if (!hostSources) return std::unexpected(hostSources.error());
  spec.hostSources = std::move(*hostSources);
  // Include folders are not confined: they only tell nvcc where to look (a library's headers
  // live elsewhere), and a source's own #include can name any path anyway.
  auto includeDirs = existingPaths(root["include_dirs"], file, "include_dirs", true, false);
  if (!includeDirs) return std::unexpected(includeDirs.error());
  spec.includeDirs = std::move(*includeDirs);
  auto flags = stringList(root["nvcc_flags"], file, "nvcc_flags");
  if (!flags) return std::unexpected(flags.error());
  spec.nvccFlags = std::move(*flags);
  auto libs = stringList(root["link_libraries"], file, "link_libraries");
  if (!libs) return std::unexpected(libs.error());
  spec.linkLibraries = std::move(*libs);

  const YAML::Node run = root["run"];
  if (triton && (!run || !run["command"])) {
    // The variant's `{exe}` is a wrapper that runs the script with the variant's kernel.
    spec.run.command = {"{exe}"};
  } else if (!run || !run.IsMap() || !run["command"]) {
    return std::unexpected(specError(file, "run.command", "is required, e.g. [\"{exe}\"]"));
  }
  if (run && run.IsMap())
    for (const auto& entry : run) {
      const auto key = entry.first.as<std::string>();
      static constexpr std::string_view kRunFields[] = {"command",   "success", "skip_exit_code",
                                                        "timeout_s", "env",     "gpus"};
      if (std::ranges::find(kRunFields, key) == std::end(kRunFields))
        return std::unexpected(specError(
            file, "run." + key,
            "is not a run field (run has command, success, skip_exit_code, timeout_s, env, gpus)"));
    }
  auto command = run && run["command"] ? stringList(run["command"], file, "run.command")
                                       : Result<std::vector<std::string>>(spec.run.command);
  if (!command) return std::unexpected(command.error());
  if (command->empty()) return std::unexpected(specError(file, "run.command", "must not be empty"));
  spec.run.command = std::move(*command);
  if (const YAML::Node success = run ? run["success"] : YAML::Node()) {
    if (success.IsScalar() || success.IsSequence())
      return std::unexpected(specError(
          file, "run.success", "must be a mapping, e.g. {exit_code: 0, stdout_contains: PASS}"));
    if (success["exit_code"])
      if (auto ok = assign(spec.run.successExitCode, success["exit_code"], file,
                           "run.success.exit_code", "an integer exit code");
          !ok)
        return std::unexpected(ok.error());
    if (success["stdout_contains"])
      if (auto ok = assign(spec.run.stdoutContains, success["stdout_contains"], file,
                           "run.success.stdout_contains", "a string");
          !ok)
        return std::unexpected(ok.error());
  }
  if (run && run["skip_exit_code"])
    if (auto ok = assign(spec.run.skipExitCode, run["skip_exit_code"], file, "run.skip_exit_code",
                         "an integer exit code");
        !ok)
      return std::unexpected(ok.error());
  if (run && run["timeout_s"]) {
    constexpr std::string_view kTimeoutRange =
        "a number of seconds greater than 0 and at most 604800 (a week)";
    if (auto ok = assign(spec.run.timeoutSeconds, run["timeout_s"], file, "run.timeout_s",
                         fmt::format("{}, e.g. 300", kTimeoutRange));
        !ok)
      return std::unexpected(ok.error());
    // Negative, NaN and huge values would time out at once or overflow the deadline.
    if (!(spec.run.timeoutSeconds > 0 && spec.run.timeoutSeconds <= kMaxTimeoutSeconds)) {
      const auto mark = run["timeout_s"].Mark();
      return fail("program", fmt::format("{}:{}:{}: field `run.timeout_s`: is `{}`; give {}",
                                         file.string(), mark.line + 1, mark.column + 1,
                                         run["timeout_s"].Scalar(), kTimeoutRange));
    }
  }
  if (run && run["gpus"]) {
    auto given = scalar<std::string>(run["gpus"], file, "run.gpus", "a count (1, 2, ...) or `all`");
    if (!given) return std::unexpected(given.error());
    const std::string gpus = *given;
    int n = 0;
    const auto [end, ec] = std::from_chars(gpus.data(), gpus.data() + gpus.size(), n);
    if (gpus == "all") {
      spec.run.gpus = 0;
    } else if (ec != std::errc() || end != gpus.data() + gpus.size() || n < 1) {
      return std::unexpected(specError(
          file, "run.gpus", fmt::format("is `{}`; give a count (1, 2, ...) or `all`", gpus)));
    } else {
      spec.run.gpus = static_cast<unsigned>(n);
    }
  }
  // A Triton spec may omit `run` (a default YAML::Node is a null node, and null nodes are true).
  if (run && run["env"]) {
    const YAML::Node env = run["env"];
    if (!env.IsMap()) return std::unexpected(specError(file, "run.env", "must be a mapping"));
    for (const auto& e : env) {
      auto key = scalar<std::string>(e.first, file, "run.env", "NAME: VALUE entries");
      if (!key) return std::unexpected(key.error());
      auto value = scalar<std::string>(e.second, file, "run.env." + *key, "a string value");
      if (!value) return std::unexpected(value.error());
      spec.run.environment[*key] = *value;
    }
  }

  if (const YAML::Node check = root["check"]) {
    if (!check.IsMap() || !check["command"])
      return std::unexpected(specError(file, "check", "must be a mapping with `command`"));
    auto checkCommand = stringList(check["command"], file, "check.command");
    if (!checkCommand) return std::unexpected(checkCommand.error());
    if (checkCommand->empty())
      return std::unexpected(specError(file, "check.command", "must not be empty"));
    spec.check = std::move(*checkCommand);
  }

  // Derived regions (docs/regions-file.md): a region file beside the spec, and selectors.
  if (const YAML::Node regions = root["regions"]) {
    auto name = scalar<std::string>(regions, file, "regions", "a region file's path");
    if (!name) return std::unexpected(name.error());
    YAML::Node one(YAML::NodeType::Sequence);
    one.push_back(*name);
    auto paths = existingPaths(one, file, "regions", false, true);
    if (!paths) return std::unexpected(paths.error());
    spec.derive.file = paths->front();
  }
  if (const YAML::Node derive = root["derive"]) {
    std::string list;
    if (derive.IsScalar()) {
      list = derive.Scalar();
    } else {
      auto items = stringList(derive, file, "derive");
      if (!items) return std::unexpected(items.error());
      for (const auto& item : *items) list += (list.empty() ? "" : ",") + item;
    }
    if (auto defs = ptx::definitionsFromList(list); !defs)
      return std::unexpected(specError(file, "derive", defs.error().message));
    spec.derive.list = std::move(list);
  }

  if (const YAML::Node kernels = root["kernels"]) {
    if (!kernels.IsSequence())
      return std::unexpected(specError(file, "kernels", "must be a list of {name, regions}"));
    for (size_t i = 0; i < kernels.size(); ++i) {
      const YAML::Node k = kernels[i];
      if (!k.IsMap() || !k["name"])
        return std::unexpected(specError(file, fmt::format("kernels[{}].name", i), "is required"));
      auto name = scalar<std::string>(k["name"], file, fmt::format("kernels[{}].name", i),
                                      "the kernel's name");
      if (!name) return std::unexpected(name.error());
      KernelSpec kernel{*name, {}, std::nullopt};
      if (const YAML::Node block = k["block"]) {
        const std::string field = fmt::format("kernels[{}].block", i);
        const auto bad = [&] {
          return std::unexpected(
              specError(file, field,
                        "must be a list of 1 to 3 positive integers, the launch's block shape "
                        "(x, y, z; missing ones are 1), e.g. [256, 1, 1]"));
        };
        if (!block.IsSequence() || block.size() == 0 || block.size() > 3) return bad();
        std::array<std::uint32_t, 3> shape{1, 1, 1};
        for (size_t d = 0; d < block.size(); ++d) {
          std::uint32_t v = 0;
          if (!block[d].IsScalar() || !YAML::convert<std::uint32_t>::decode(block[d], v) || v == 0)
            return bad();
          shape[d] = v;
        }
        kernel.block = shape;
      }
      if (const YAML::Node regions = k["regions"]) {
        if (!regions.IsSequence())
          return std::unexpected(specError(file, fmt::format("kernels[{}].regions", i),
                                           "must be a list of {path: ...} entries"));
        for (const auto& r : regions) {
          if (r.IsMap() && r["path"] && !r["function"]) {
            auto path =
                scalar<std::string>(r["path"], file, fmt::format("kernels[{}].regions[].path", i),
                                    "a region path like mainloop/tma_load");
            if (!path) return std::unexpected(path.error());
            kernel.regions.push_back(*path);
          }
        }
      }
      spec.kernels.push_back(std::move(kernel));
    }
  }
  return spec;
}

}  // namespace

Result<ProgramSpec> loadProgramSpec(const fs::path& specFile) {
  try {
    return loadProgramSpecFields(specFile);
  } catch (const fs::filesystem_error& e) {
    return fail("program", fmt::format("{}: a path the spec names: {}",
                                       fs::absolute(specFile).string(), e.what()));
  } catch (const YAML::Exception& e) {
    // What the field checks did not foresee (a key that is not a scalar, ...): still a place.
    return fail("program", fmt::format("{}:{}:{}: {}", fs::absolute(specFile).string(),
                                       e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

Result<ProgramPtx> loadTargetPtx(const fs::path& target, const std::string& arch,
                                 const std::vector<std::string>& extraFlags,
                                 const DeriveRequest& derive, const std::string& kernel) {
  std::error_code ec;
  if (!fs::exists(target, ec))
    return fail("program", fmt::format("`{}` does not exist", target.string()));
  const std::string ext = target.extension().string();
  // The program version: the target's own material, and the regions derived into it.
  auto version = [&](std::string material) -> Result<std::string> {
    auto extra = deriveMaterial(derive);
    if (!extra) return std::unexpected(extra.error());
    return workspace::hashBytes(material + *extra).hex();
  };
  if (ext == ".ptx" || ext == ".cu") {
    auto source = readFile(target);
    if (!source) return std::unexpected(source.error());
    auto key = version(*source);
    if (!key) return std::unexpected(key.error());
    auto text = ext == ".ptx" ? std::move(source) : runNvccPtx({}, extraFlags, arch, target);
    if (!text) return std::unexpected(text.error());
    const std::string name = ext == ".ptx" ? target.string() : target.stem().string() + ".ptx";
    auto derived = derivePtx(std::move(*text), name, {derive});
    if (!derived) return std::unexpected(derived.error());
    return ProgramPtx{std::move(*derived), name, std::move(*key)};
  }
  if (ext == ".yaml" || ext == ".yml") {
    auto spec = loadProgramSpec(target);
    if (!spec) return std::unexpected(spec.error());
    if (spec->language == "triton" && derivesRegions(*spec, derive))
      return tritonDerivedPtx(*spec, kernel, derive);
    auto text = frontEndPtx(*spec, extraFlags, derive);
    if (!text) return std::unexpected(text.error());
    // The program version covers the spec and every file it names.
    std::string material;
    for (const auto& f : std::vector<fs::path>{spec->file, spec->sources.front()}) {
      auto bytes = readFile(f);
      if (!bytes) return std::unexpected(bytes.error());
      material += f.filename().string() + '\0' + *bytes + '\0';
    }
    for (const auto& f : spec->hostSources) {
      auto bytes = readFile(f);
      if (!bytes) return std::unexpected(bytes.error());
      material += f.filename().string() + '\0' + *bytes + '\0';
    }
    auto own = deriveMaterial(spec->derive);
    if (!own) return std::unexpected(own.error());
    auto key = version(material + *own);
    if (!key) return std::unexpected(key.error());
    return ProgramPtx{std::move(*text), spec->sources.front().stem().string() + ".ptx",
                      std::move(*key)};
  }
  return fail("program", fmt::format("`{}`: a target is a program spec (.yaml), a CUDA source "
                                     "(.cu) or PTX (.ptx)",
                                     target.string()));
}

Result<std::string> frontEndPtx(const ProgramSpec& spec, const std::vector<std::string>& extraFlags,
                                const DeriveRequest& derive) {
  if (spec.language == "triton")
    return fail("program",
                fmt::format("{}: a Triton program's PTX comes from running its script on a GPU "
                            "(Triton compiles at launch): `argus build --program {}` dumps and "
                            "transforms it there; without a GPU, give `argus regions` the "
                            "kernel's .ttgir or .ptx (TRITON_KERNEL_DUMP=1 writes them)",
                            spec.file.string(), spec.file.filename().string()));
  if (spec.sources.size() != 1)
    return fail("program", fmt::format("{}: field `sources`: Argus handles one device source "
                                       "per program so far; found {}",
                                       spec.file.string(), spec.sources.size()));
  std::vector<std::string> flags = spec.nvccFlags;
  flags.insert(flags.end(), extraFlags.begin(), extraFlags.end());
  auto text = runNvccPtx(spec.includeDirs, flags, spec.arch, spec.sources.front());
  if (!text) return std::unexpected(text.error());
  return derivePtx(std::move(*text), spec.sources.front().stem().string() + ".ptx",
                   {spec.derive, derive});
}

bool sameKernelName(const std::string& a, const std::string& b) {
  return a == b || demangle(a) == demangle(b);
}

Result<const ptx::FunctionRegions*> findKernel(const std::vector<ptx::FunctionRegions>& functions,
                                               const std::string& name) {
  std::vector<const ptx::FunctionRegions*> kernels;
  for (const auto& f : functions)
    if (f.isEntry) kernels.push_back(&f);
  if (name.empty() && kernels.size() == 1) return kernels.front();
  for (const auto* k : kernels)
    if (k->function == name || demangle(k->function) == name ||
        demangle(k->function).starts_with(name + "("))
      return k;
  std::string list;
  for (const auto* k : kernels) list += (list.empty() ? "" : ", ") + demangle(k->function);
  if (name.empty())
    return fail("program", fmt::format("the program has {} kernels ({}); name one with --kernel",
                                       kernels.size(), list));
  return fail("program",
              fmt::format("no kernel `{}`; kernels: {}", name, list.empty() ? "none" : list));
}

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && text ? std::string(text.get()) : name;
}

}  // namespace argus::program
