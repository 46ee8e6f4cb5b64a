#include "argus/program/build.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "argus/support/process.h"
#include "argus/workspace/hash.h"
#include "argus/workspace/workspace.h"

namespace argus::program {
namespace {

namespace fs = std::filesystem;

bool isNameChar(char c, bool first) {
  return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (!first && c >= '0' && c <= '9');
}

/// `NAME=` at the start of the line, before any space or quote.
std::optional<size_t> assignmentEnd(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && isNameChar(line[i], i == 0)) ++i;
  if (i == 0 || i >= line.size() || line[i] != '=') return std::nullopt;
  return i;
}

std::string shellQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string lastLines(std::string_view text, size_t maxLines) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  size_t pos = text.size();
  for (size_t n = 0; n < maxLines && pos != std::string_view::npos && pos > 0; ++n)
    pos = text.rfind('\n', pos - 1);
  if (pos == std::string_view::npos || pos == 0) return std::string(text);
  return "...\n" + std::string(text.substr(pos + 1));
}

void replaceAll(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
}

bool startsWithAny(std::string_view flag, std::initializer_list<std::string_view> prefixes) {
  return std::ranges::any_of(prefixes, [&](std::string_view p) { return flag.starts_with(p); });
}

/// The value after `-o` in a command's words, or empty.
std::string outputOf(const std::vector<std::string>& words) {
  for (size_t i = 0; i + 1 < words.size(); ++i)
    if (words[i] == "-o") return words[i + 1];
  return {};
}

/// The symbol the fatbin data of a split device object is defined under (see splitFatbinData).
constexpr std::string_view kFatbinSymbol = "__argus_fatbin_data";

}  // namespace

std::optional<std::string> splitFatbinData(std::string_view embedded) {
  // nvcc writes the fatbin as `asm(".section .nv_fatbin ..." "fatbinData:\n" ".quad ..."
  // ".text\n");` then declares `extern const unsigned long long fatbinData[N];` and points the
  // registration wrapper at it. Without the asm and the size, nothing in the file depends on
  // the fatbin's contents.
  const size_t open = embedded.find("asm(\n");
  if (open == std::string_view::npos) return std::nullopt;
  const size_t text = embedded.find("\".text\\n\");", open);
  if (text == std::string_view::npos) return std::nullopt;
  const size_t close = text + std::string_view("\".text\\n\");").size();
  const std::string_view block = embedded.substr(open, close - open);
  if (block.find(".section .nv_fatbin") == std::string_view::npos ||
      block.find("\"fatbinData:\\n\"") == std::string_view::npos)
    return std::nullopt;
  std::string rest = std::string(embedded.substr(0, open)) + std::string(embedded.substr(close));
  static const std::regex declaration(R"(extern const unsigned long long fatbinData\[[0-9]+\];)");
  if (!std::regex_search(rest, declaration)) return std::nullopt;
  rest = std::regex_replace(rest, declaration,
                            fmt::format("extern const unsigned long long {}[];", kFatbinSymbol));
  static const std::regex uses(R"(\bfatbinData\b)");
  rest = std::regex_replace(rest, uses, std::string(kFatbinSymbol));
  if (rest.find(".quad") != std::string::npos) return std::nullopt;
  return rest;
}

std::string fatbinDataAssembly(const std::filesystem::path& fatbin) {
  return fmt::format(
      "\t.section .nv_fatbin, \"a\"\n\t.align 8\n\t.globl {0}\n\t.hidden {0}\n{0}:\n"
      "\t.incbin \"{1}\"\n\t.balign 8\n\t.section .note.GNU-stack,\"\",@progbits\n",
      kFatbinSymbol, fatbin.string());
}

namespace {

/// Products of build steps that are the same for every variant of a program (only the device
/// PTX changes) are made once and reused, like ccache's direct mode. Two kinds of entry:
/// - a host source's object (nvcc -c);
/// - the device source's front end: the files nvcc's steps before ptxas leave in the keep
///   directory (preprocessed source, cudafe++'s host stub and its module id). A variant then
///   runs only ptxas, fatbinary and the stub's host compile;
/// - the stub's host compile itself, with the fatbin taken out (splitFatbinData): its object is
///   the same for every variant, and each variant assembles only its fatbin's bytes into an
///   object of their own (measured on examples/tma_gemm: the stub compile was 0.35 s of a
///   0.5 s variant build).
/// An entry for (nvcc, flags, source path and bytes) holds its product and the headers the
/// compile read (nvcc -MD / -M) with their content hashes; it is reused only when every one of
/// them still hashes the same. Location: $ARGUS_BUILD_CACHE, else
/// $XDG_CACHE_HOME/argus/host-objects, else ~/.cache/argus/host-objects;
/// ARGUS_BUILD_CACHE=off disables it; it is kept under $ARGUS_BUILD_CACHE_MAX_MB (default 4096)
/// by dropping the least recently used entries. Measured on examples/tma_gemm (2 cores): the host
/// compile was 1.37 s of a 2.7 s variant build; the device front end (gcc -E twice, cudafe++, cicc)
/// 0.73 s of the device source's 1.0 s.
class BuildCache {
 public:
  BuildCache() {
    const char* env = std::getenv("ARGUS_BUILD_CACHE");
    if (env != nullptr && std::string_view(env) == "off") return;
    if (env != nullptr && *env != '\0') {
      dir_ = env;
    } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
      dir_ = fs::path(xdg) / "argus" / "host-objects";
    } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
      dir_ = fs::path(home) / ".cache" / "argus" / "host-objects";
    }
  }

  [[nodiscard]] bool enabled() const { return !dir_.empty(); }

  static std::string key(std::string_view kind, const fs::path& nvcc,
                         const std::vector<std::string>& flags, const fs::path& source,
                         const std::string& sourceBytes) {
    std::string material = std::string(kind) + '\0' + nvcc.string() + '\0' + source.string() +
                           '\0' + sourceBytes + '\0';
    std::error_code ec;
    material += std::to_string(fs::file_size(nvcc, ec)) + '\0';
    for (const auto& f : flags) material += f + '\0';
    return workspace::hashBytes(material).hex();
  }

  /// Copies a valid cached object to `object`; false when there is none or it is stale.
  bool fetch(const std::string& k, const fs::path& object) const {
    if (!fresh(k)) return false;
    std::error_code ec;
    fs::copy_file(dir_ / (k + ".o"), object, fs::copy_options::overwrite_existing, ec);
    if (!ec) touch(k);
    return !ec;
  }

  /// Copies every file of a valid cached directory entry into `into`.
  bool fetchFiles(const std::string& k, const fs::path& into) const {
    auto dir = fresh(k);
    if (!dir || dir->empty()) return false;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_ / *dir, ec)) {
      fs::copy_file(e.path(), into / e.path().filename(), fs::copy_options::overwrite_existing, ec);
      if (ec) return false;
    }
    return !ec;
  }

  /// Stores `object` with the dependencies nvcc listed in `depFile` (make syntax).
  void store(const std::string& k, const fs::path& object, const fs::path& depFile) const {
    auto manifest = manifestOf(depFile);
    if (!manifest || !makeDir()) return;
    // Object first, manifest last (renamed into place): a reader never sees a manifest whose
    // object is missing or partial.
    const std::string unique = uniqueSuffix();
    std::error_code ec;
    fs::copy_file(object, dir_ / (k + ".o" + unique), fs::copy_options::overwrite_existing, ec);
    if (ec) return;
    fs::rename(dir_ / (k + ".o" + unique), dir_ / (k + ".o"), ec);
    if (!ec) commit(k, *manifest);
  }

  /// Stores the regular files of `from` as one entry. The files go to a directory of their own
  /// that the manifest names, so a reader never copies a directory being written.
  void storeFiles(const std::string& k, const fs::path& from, const fs::path& depFile) const {
    auto manifest = manifestOf(depFile);
    if (!manifest || !makeDir()) return;
    const std::string name = k + ".files" + uniqueSuffix();
    std::error_code ec;
    fs::create_directories(dir_ / name, ec);
    for (const auto& e : fs::directory_iterator(from, ec)) {
      if (!e.is_regular_file()) continue;
      fs::copy_file(e.path(), dir_ / name / e.path().filename(),
                    fs::copy_options::overwrite_existing, ec);
      if (ec) return;
    }
    if (!ec) commit(k, "dir\t" + name + "\n" + *manifest);
  }

 private:
  /// When every dependency in k's manifest still hashes the same: the entry's directory name
  /// (empty for an object entry). Nothing when missing or stale.
  [[nodiscard]] std::optional<std::string> fresh(const std::string& k) const {
    auto manifest = readFile(dir_ / (k + ".deps"));
    if (!manifest) return std::nullopt;
    std::string dir;
    std::istringstream lines(*manifest);
    for (std::string line; std::getline(lines, line);) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos) return std::nullopt;
      if (line.starts_with("dir\t")) {
        dir = line.substr(tab + 1);
        continue;
      }
      auto bytes = readFile(line.substr(tab + 1));
      if (!bytes || workspace::hashBytes(*bytes).hex() != line.substr(0, tab)) return std::nullopt;
    }
    return dir;
  }

  /// "hash\tpath" lines for every file a make-syntax dependency file lists.
  static std::optional<std::string> manifestOf(const fs::path& depFile) {
    auto deps = readFile(depFile);
    if (!deps) return std::nullopt;
    std::string text = *deps;
    replaceAll(text, "\\\n", " ");
    const size_t colon = text.find(": ");
    if (colon == std::string::npos) return std::nullopt;
    std::string manifest;
    std::istringstream words(text.substr(colon + 2));
    for (std::string word; words >> word;) {
      auto bytes = readFile(word);
      if (!bytes) return std::nullopt;  // cannot vouch for this entry: do not cache it
      manifest += workspace::hashBytes(*bytes).hex() + '\t' + word + '\n';
    }
    return manifest;
  }

  [[nodiscard]] bool makeDir() const {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    return !ec;
  }

  static std::string uniqueSuffix() {
    static std::atomic<unsigned> counter{0};
    return fmt::format(".{}.{}.tmp", ::getpid(), counter++);
  }

  void commit(const std::string& k, const std::string& manifest) const {
    const std::string unique = uniqueSuffix();
    std::error_code ec;
    if (writeFile(dir_ / (k + ".deps" + unique), manifest))
      fs::rename(dir_ / (k + ".deps" + unique), dir_ / (k + ".deps"), ec);
    trim(k);
  }

  /// Marks an entry as used now (eviction removes the least recently used first).
  void touch(const std::string& k) const {
    std::error_code ec;
    fs::last_write_time(dir_ / (k + ".deps"), fs::file_time_type::clock::now(), ec);
  }

  /// Keeps the cache under $ARGUS_BUILD_CACHE_MAX_MB (default 4096): removes the least recently
  /// used entries but `keep`, and leftovers of other stores (directories no manifest names,
  /// temporary files) older than ten minutes. A reader that loses an entry it was copying
  /// falls back to running the step.
  void trim(const std::string& keep) const {
    double maxMb = 4096;
    if (const char* env = std::getenv("ARGUS_BUILD_CACHE_MAX_MB"); env != nullptr && *env != '\0')
      maxMb = std::strtod(env, nullptr);
    const auto byteLimit = static_cast<uintmax_t>(std::max(0.0, maxMb) * 1024 * 1024);
    std::error_code ec;
    struct Entry {
      fs::file_time_type used;
      std::string key;
      std::vector<fs::path> paths;
      uintmax_t bytes = 0;
    };
    std::map<std::string, Entry> entries;
    std::set<std::string> named;
    uintmax_t total = 0;
    const auto sizeOf = [&](const fs::path& p) {
      uintmax_t n = 0;
      if (fs::is_directory(p, ec)) {
        for (const auto& f : fs::recursive_directory_iterator(p, ec))
          if (f.is_regular_file(ec)) n += f.file_size(ec);
      } else {
        n = fs::file_size(p, ec);
      }
      return ec ? uintmax_t{0} : n;
    };
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
      const std::string name = e.path().filename().string();
      if (!name.ends_with(".deps")) continue;
      Entry entry{fs::last_write_time(e.path(), ec), name.substr(0, name.size() - 5), {}, 0};
      entry.paths = {e.path(), dir_ / (entry.key + ".o")};
      if (auto text = readFile(e.path()); text && text->starts_with("dir\t")) {
        const std::string dir = text->substr(4, text->find('\n') - 4);
        named.insert(dir);
        entry.paths.push_back(dir_ / dir);
      }
      for (const auto& p : entry.paths) entry.bytes += fs::exists(p, ec) ? sizeOf(p) : 0;
      total += entry.bytes;
      entries.emplace(entry.key, std::move(entry));
    }
    const auto stale = fs::file_time_type::clock::now() - std::chrono::minutes(10);
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
      const std::string name = e.path().filename().string();
      const bool orphan = name.find(".files.") != std::string::npos && !named.contains(name);
      if ((orphan || name.ends_with(".tmp")) && fs::last_write_time(e.path(), ec) < stale)
        fs::remove_all(e.path(), ec);
    }
    std::vector<const Entry*> oldest;
    for (const auto& [key, entry] : entries)
      if (key != keep) oldest.push_back(&entry);
    std::sort(oldest.begin(), oldest.end(),
              [](const Entry* a, const Entry* b) { return a->used < b->used; });
    for (const Entry* entry : oldest) {
      if (total <= byteLimit) break;
      for (const auto& p : entry->paths) fs::remove_all(p, ec);  // manifest first
      total -= std::min(total, entry->bytes);
    }
  }

  fs::path dir_;
};

class Builder {
 public:
  Builder(const BuildOptions& options, fs::path workDir)
      : options_(options), workDir_(std::move(workDir)) {}

  std::vector<BuildStep>& steps() { return steps_; }

  /// Runs argv directly.
  Result<const BuildStep*> run(std::string name, const std::vector<std::string>& argv) {
    std::string text;
    for (const auto& a : argv) text += (text.empty() ? "" : " ") + shellQuote(a);
    return execute(std::move(name), argv, std::move(text));
  }

  /// Runs a command from `nvcc -dryrun` through /bin/sh (it quotes and uses $VARs) with nvcc's
  /// environment assignments set, as nvcc itself would run it.
  Result<const BuildStep*> runShell(std::string name, const std::string& command,
                                    const std::vector<std::pair<std::string, std::string>>& env) {
    return execute(std::move(name), {"/bin/sh", "-c", command}, command, env);
  }

 private:
  Result<const BuildStep*> execute(
      std::string name, const std::vector<std::string>& argv, std::string text,
      const std::vector<std::pair<std::string, std::string>>& env = {}) {
    if (options_.cancelled && options_.cancelled())
      return fail("build", fmt::format("cancelled before step `{}`", name));
    const auto start = std::chrono::steady_clock::now();
    // nvcc's own temporary files (tmpxft_*) go into the build's folder too: a build killed with
    // Argus (its nvcc then dies of a broken pipe) leaves them where Argus's sweep of dead
    // processes' folders removes them (makeTempDir), not loose in /tmp.
    std::vector<std::pair<std::string, std::string>> environment{{"TMPDIR", workDir_.string()}};
    environment.insert(environment.end(), env.begin(), env.end());
    auto result = runProcess(argv, {.workingDirectory = workDir_,
                                    .timeout = options_.stepTimeout,
                                    .environment = environment});
    BuildStep step;
    step.name = std::move(name);
    step.command = std::move(text);
    step.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result) {
      step.exitCode = -1;
      step.err = result.error().text();
      steps_.push_back(std::move(step));
      return fail("build", fmt::format("step `{}` could not run: {}", steps_.back().name,
                                       result.error().text()));
    }
    step.exitCode = result->exitCode;
    step.out = std::move(result->out);
    step.err = std::move(result->err);
    steps_.push_back(std::move(step));
    return &steps_.back();
  }

  const BuildOptions& options_;
  fs::path workDir_;
  std::vector<BuildStep> steps_;
};

/// `rewrite` (from, to) renames a temporary file in the tool's output to the one that stays.
Error stepError(const BuildStep& step, std::string_view hint = {},
                std::pair<std::string_view, std::string_view> rewrite = {}) {
  std::string output = step.err.empty() ? step.out : step.err;
  replaceAll(output, rewrite.first, rewrite.second);
  return Error{"build", fmt::format("step `{}` failed (exit {}){}: {}\ncommand: {}", step.name,
                                    step.exitCode, hint, lastLines(output, 30), step.command)};
}

/// `sm_90a` -> `90a`; the error says what an arch looks like.
Result<std::string> archNumber(const ProgramSpec& spec) {
  std::string_view arch = spec.arch;
  for (std::string_view prefix : {"sm_", "compute_"})
    if (arch.starts_with(prefix)) arch.remove_prefix(prefix.size());
  if (arch.empty() || arch.front() < '0' || arch.front() > '9')
    return fail("build", fmt::format("{}: field `arch`: `{}` is not a GPU architecture like sm_90a",
                                     spec.file.string(), spec.arch));
  return std::string(arch);
}

/// The spec's nvcc flags with the target selection replaced by the single device target.
std::vector<std::string> compileFlags(const ProgramSpec& spec, const BuildOptions& options,
                                      const std::string& arch) {
  std::vector<std::string> flags;
  std::vector<std::string> given = spec.nvccFlags;
  given.insert(given.end(), options.extraFlags.begin(), options.extraFlags.end());
  for (size_t i = 0; i < given.size(); ++i) {
    const std::string& f = given[i];
    // Flags that take their value as the next word.
    if (f == "-gencode" || f == "--generate-code" || f == "-arch" || f == "--gpu-architecture" ||
        f == "-code" || f == "--gpu-code" || f == "-o" || f == "--output-file") {
      ++i;
      continue;
    }
    if (startsWithAny(f, {"-gencode=", "--generate-code=", "-arch=", "--gpu-architecture=",
                          "-code=", "--gpu-code="}) ||
        f == "-lineinfo" || f == "--generate-line-info" || f == "-c" || f == "--compile")
      continue;
    flags.push_back(f);
  }
  flags.push_back(fmt::format("-gencode=arch=compute_{0},code=sm_{0}", arch));
  if (options.lineInfo) flags.push_back("-lineinfo");
  flags.push_back("-I" ARGUS_INCLUDE_DIR);
  for (const auto& dir : spec.includeDirs) flags.push_back("-I" + dir.string());
  return flags;
}

Result<void> copyFile(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec)
    return fail("build", fmt::format("cannot copy `{}` to `{}`: {}", from.string(), to.string(),
                                     ec.message()));
  return {};
}

/// Caches the device front end's files in keepDir under `key`, with the headers both the host
/// pass (nvcc -M) and the device pass (the line markers of its preprocessed source) read.
/// Best effort: a failure only means the next build runs the front end again.
void storeFrontEnd(const BuildCache& cache, const std::string& key, const fs::path& nvcc,
                   const std::vector<std::string>& flags, const fs::path& source,
                   const fs::path& keepDir, const fs::path& tmp, Builder& builder) {
  const fs::path depFile = tmp / "device.d";
  std::vector<std::string> argv{nvcc.string()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-M", source.string(), "-MF", depFile.string()});
  auto step = builder.run("nvcc -M " + source.filename().string(), argv);
  if (!step || (*step)->exitCode != 0) return;
  auto deps = readFile(depFile);
  if (!deps) return;
  std::set<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(keepDir, ec)) {
    if (e.path().extension() != ".ii") continue;
    auto text = readFile(e.path());
    if (!text) return;
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      // `# 12 "/path/header.h" 1`: a line marker of the preprocessor.
      if (!line.starts_with("# ")) continue;
      const size_t open = line.find('"'), close = line.find('"', open + 1);
      if (open == std::string::npos || close == std::string::npos) continue;
      std::string file = line.substr(open + 1, close - open - 1);
      // Files in the build's own temporary directory die with it: never dependencies.
      if (!file.empty() && file.front() == '/' && !file.starts_with(tmp.string()) &&
          fs::is_regular_file(file, ec))
        files.insert(std::move(file));
    }
  }
  std::string all = *deps;
  replaceAll(all, "\\\n", " ");
  for (const auto& f : files) all += " " + f;
  if (!writeFile(depFile, all + "\n")) return;
  cache.storeFiles(key, keepDir, depFile);
}

/// The stub's host compile with the fatbin split out: rewrites nvcc's embedded fatbin file,
/// takes the stub object from the cache or compiles it (and caches it), assembles this
/// variant's fatbin bytes and joins both into the step's output object. False (and the files
/// untouched) when the embedded fatbin file is not in the form splitFatbinData knows.
Result<bool> compileSplitStub(const BuildCache& cache, const fs::path& nvcc,
                              const std::vector<std::string>& flags, const fs::path& source,
                              const std::string& frontKey, const DryrunLine& step,
                              const std::vector<std::pair<std::string, std::string>>& env,
                              const fs::path& embedded, const fs::path& fatbin, const fs::path& tmp,
                              Builder& builder) {
  auto text = readFile(embedded);
  if (!text) return std::unexpected(text.error());
  const auto rest = splitFatbinData(*text);
  if (!rest) return false;
  if (auto w = writeFile(embedded, *rest); !w) return std::unexpected(w.error());
  // The stub's inputs: cudafe++'s files beside the embedded fatbin (fixed per front end), the
  // fatbin file without its data, and the command.
  std::string material = step.value + '\0' + *rest + '\0';
  std::error_code ec;
  std::vector<fs::path> stubFiles;  // in name order: directory order is unspecified
  for (const auto& e : fs::directory_iterator(embedded.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".cudafe1.cpp") || name.ends_with(".cudafe1.stub.c"))
      stubFiles.push_back(e.path());
  }
  std::ranges::sort(stubFiles);
  for (const auto& file : stubFiles) {
    auto bytes = readFile(file);
    if (!bytes) return std::unexpected(bytes.error());
    material += file.filename().string() + '\0' + *bytes + '\0';
  }
  // Each build runs in a temporary directory of its own (makeTempDir("argus-build"):
  // argus-build-<owner>-XXXXXX), whose name the command and cudafe++'s line markers carry (a
  // cached front end's, the build's that made it): it is not an input.
  static const std::regex buildDir(R"(argus-build-(p[0-9]+\.[0-9a-f]+-|unowned-)?[A-Za-z0-9]{6})");
  material = std::regex_replace(material, buildDir, "argus-build-DIR");
  // The front end's key already stands for the source's bytes.
  const std::string key =
      BuildCache::key("device-stub", nvcc, flags, source, frontKey + '\0' + material);
  const fs::path object = outputOf(step.words);
  if (cache.fetch(key, object)) {
    BuildStep reused;
    reused.name = step.name + " (stub, cached)";
    reused.command = fmt::format("# reused the host stub object {} for {}", key, source.string());
    builder.steps().push_back(std::move(reused));
  } else {
    auto compiled = builder.runShell(step.name + " (stub)", step.value, env);
    if (!compiled) return std::unexpected(compiled.error());
    if ((*compiled)->exitCode != 0) return std::unexpected(stepError(**compiled));
    // Its dependencies are in the key; the manifest only needs a file that exists.
    const fs::path depFile = tmp / "stub.d";
    if (writeFile(depFile, fmt::format("{}: {}\n", object.string(), source.string())))
      cache.store(key, object, depFile);
  }
  // The fatbin's bytes, assembled, and joined to the stub into the one device object nvcc's
  // own step would have made (nvlink looks for the fatbin in the object that registers it).
  const fs::path assembly = tmp / "fatbin_data.s";
  const fs::path data = tmp / "fatbin_data.o";
  const fs::path stubObject = tmp / "stub.o";
  if (auto w = writeFile(assembly, fatbinDataAssembly(fatbin)); !w)
    return std::unexpected(w.error());
  fs::rename(object, stubObject, ec);
  if (ec) return fail("build", fmt::format("cannot move `{}`: {}", object.string(), ec.message()));
  for (const auto& [name, argv] :
       {std::pair<std::string, std::vector<std::string>>{
            "as (fatbin data)", {step.words.front(), "-c", assembly.string(), "-o", data.string()}},
        {"ld -r (stub + fatbin data)",
         {"ld", "-r", stubObject.string(), data.string(), "-o", object.string()}}}) {
    auto ran = builder.run(name, argv);
    if (!ran) return std::unexpected(ran.error());
    if ((*ran)->exitCode != 0) return std::unexpected(stepError(**ran));
  }
  return true;
}

/// The build proper; the caller owns tmp and writes the log.
Result<void> buildIn(const ProgramSpec& spec, std::string_view ptx, const fs::path& outDir,
                     const fs::path& tmp, const BuildOptions& options, Builder& builder,
                     BuildResult& result) {
  if (spec.sources.size() != 1)
    return fail("build", fmt::format("{}: field `sources`: Argus transforms one device source "
                                     "per program; found {}",
                                     spec.file.string(), spec.sources.size()));
  auto arch = archNumber(spec);
  if (!arch) return std::unexpected(arch.error());
  auto nvcc = findTool("nvcc");
  if (!nvcc) return std::unexpected(nvcc.error());
  const std::vector<std::string> flags = compileFlags(spec, options, *arch);
  const fs::path& source = spec.sources.front();
  const std::string stem = source.stem().string();
  const fs::path keepDir = tmp / "nvcc";
  std::error_code ec;
  fs::create_directories(keepDir, ec);
  if (ec)
    return fail("build", fmt::format("cannot create `{}`: {}", keepDir.string(), ec.message()));

  // 1. nvcc's own pipeline for the device source. --keep-dir gives the intermediate files
  // stable names in our private directory instead of /tmp/tmpxft_*.
  const fs::path deviceObject = tmp / (stem + ".device.o");
  std::vector<std::string> argv{nvcc->string(), "-dryrun", "--keep", "--keep-dir",
                                keepDir.string()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-c", source.string(), "-o", deviceObject.string()});
  auto dry = builder.run("nvcc -dryrun", argv);
  if (!dry) return std::unexpected(dry.error());
  if ((*dry)->exitCode != 0) return std::unexpected(stepError(**dry));
  auto lines = parseDryrun((*dry)->err);
  if (!lines) return std::unexpected(lines.error());

  // Find the one front-end step and the ptxas step that reads its PTX.
  std::optional<size_t> cicc;
  std::optional<size_t> ptxas;
  for (size_t i = 0; i < lines->size(); ++i) {
    const DryrunLine& l = (*lines)[i];
    if (l.assignment) continue;
    if (l.name == "cicc" && outputOf(l.words).ends_with(".ptx")) {
      if (cicc)
        return fail("build", fmt::format("nvcc -dryrun lists two front-end (cicc) steps for "
                                         "`{}`; Argus builds one device target",
                                         source.string()));
      cicc = i;
    }
    if (l.name == "ptxas") ptxas = i;
  }
  if (!cicc || !ptxas || *ptxas < *cicc)
    return fail("build", fmt::format("nvcc -dryrun for `{}` has no cicc step followed by ptxas; "
                                     "cannot substitute PTX (listing:\n{})",
                                     source.string(), lastLines((*dry)->err, 40)));
  const std::string ciccPtx = outputOf((*lines)[*cicc].words);
  const auto& ptxasWords = (*lines)[*ptxas].words;
  if (std::ranges::find(ptxasWords, ciccPtx) == ptxasWords.end())
    return fail("build", fmt::format("ptxas in the nvcc -dryrun listing does not read cicc's "
                                     "output `{}`; cannot substitute PTX",
                                     ciccPtx));
  const std::string ptxasCubin = outputOf(ptxasWords);

  result.ptx = outDir / (stem + ".ptx");
  result.cubin = outDir / (stem + ".cubin");
  if (auto w = writeFile(result.ptx, ptx); !w) return std::unexpected(w.error());

  // 2. Replay, substituting the PTX after cicc wrote its own. The steps before ptxas do not
  // depend on the PTX: when cached they are skipped and their files restored.
  const BuildCache cache;
  std::string frontKey;
  bool frontCached = false;
  if (cache.enabled()) {
    auto bytes = readFile(source);
    if (!bytes) return std::unexpected(bytes.error());
    frontKey = BuildCache::key("device-front", *nvcc, flags, source, *bytes);
    frontCached = cache.fetchFiles(frontKey, keepDir);
    if (frontCached) {
      BuildStep reused;
      reused.name = "device front end (cached)";
      reused.command = fmt::format("# reused the files of gcc -E, cudafe++ and cicc for {} ({})",
                                   source.string(), frontKey);
      builder.steps().push_back(std::move(reused));
    }
  }
  // The fatbinary step and the stub's host compile that embeds its output in the device object.
  std::optional<size_t> fatbinary, stub;
  std::string embeddedFatbin, fatbinFile;
  for (size_t i = *ptxas + 1; i < lines->size(); ++i) {
    const DryrunLine& l = (*lines)[i];
    if (l.assignment) continue;
    if (l.name == "fatbinary" && !fatbinary) {
      fatbinary = i;
      for (const auto& w : l.words) {
        if (w.starts_with("--embedded-fatbin=")) embeddedFatbin = w.substr(18);
        if (w.starts_with("--create=")) fatbinFile = w.substr(9);
      }
    } else if (fatbinary && !stub && outputOf(l.words) == deviceObject.string()) {
      stub = i;
    }
  }
  const bool splitStub =
      cache.enabled() && fatbinary && stub && !embeddedFatbin.empty() && !fatbinFile.empty();

  std::vector<std::pair<std::string, std::string>> env;
  for (size_t i = 0; i < lines->size(); ++i) {
    const DryrunLine& l = (*lines)[i];
    if (l.assignment) {
      std::erase_if(env, [&](const auto& e) { return e.first == l.name; });
      env.emplace_back(l.name, l.value);
      continue;
    }
    if (frontCached && i < *ptxas) continue;
    if (splitStub && i == *stub) {
      auto split = compileSplitStub(cache, *nvcc, flags, source, frontKey, l, env, embeddedFatbin,
                                    fatbinFile, tmp, builder);
      if (!split) return std::unexpected(split.error());
      if (*split) continue;
      // nvcc's file was not in the form splitFatbinData knows: the stub compiles as is.
    }
    if (i == *ptxas && frontCached)
      if (auto w = writeFile(ciccPtx, ptx); !w) return std::unexpected(w.error());
    if (i == *ptxas && !frontCached && cache.enabled())
      storeFrontEnd(cache, frontKey, *nvcc, flags, source, keepDir, tmp, builder);
    auto step = builder.runShell(l.name, l.value, env);
    if (!step) return std::unexpected(step.error());
    if ((*step)->exitCode != 0) {
      const std::string kept = result.ptx.string();
      if (i == *ptxas)
        return std::unexpected(stepError(**step, " on the substituted PTX", {ciccPtx, kept}));
      return std::unexpected(stepError(**step));
    }
    if (i == *cicc)
      if (auto w = writeFile(ciccPtx, ptx); !w) return std::unexpected(w.error());
    if (i == *ptxas && options.editCubin) {
      if (ptxasCubin.empty())
        return fail("build", "ptxas in the nvcc -dryrun listing names no cubin to edit");
      if (auto edited = options.editCubin(ptxasCubin); !edited)
        return std::unexpected(edited.error());
    }
    if (i == *ptxas && !ptxasCubin.empty())
      if (auto c = copyFile(ptxasCubin, result.cubin); !c) return std::unexpected(c.error());
  }

  // 3. Host sources, compiled as nvcc normally would.
  std::vector<std::string> objects{deviceObject.string()};
  for (size_t i = 0; i < spec.hostSources.size(); ++i) {
    const fs::path& host = spec.hostSources[i];
    const fs::path object = tmp / fmt::format("host{}_{}.o", i, host.stem().string());
    objects.push_back(object.string());
    std::string key;
    if (cache.enabled()) {
      auto bytes = readFile(host);
      if (!bytes) return std::unexpected(bytes.error());
      key = BuildCache::key("host", *nvcc, flags, host, *bytes);
      if (cache.fetch(key, object)) {
        BuildStep reused;
        reused.name = "nvcc -c " + host.filename().string() + " (cached)";
        reused.command = fmt::format("# reused host object {} for {}", key, host.string());
        builder.steps().push_back(std::move(reused));
        continue;
      }
    }
    const fs::path depFile = tmp / fmt::format("host{}.d", i);
    std::vector<std::string> hostArgv{nvcc->string()};
    hostArgv.insert(hostArgv.end(), flags.begin(), flags.end());
    if (cache.enabled()) hostArgv.insert(hostArgv.end(), {"-MD", "-MF", depFile.string()});
    hostArgv.insert(hostArgv.end(), {"-c", host.string(), "-o", object.string()});
    auto step = builder.run("nvcc -c " + host.filename().string(), hostArgv);
    if (!step) return std::unexpected(step.error());
    if ((*step)->exitCode != 0) return std::unexpected(stepError(**step));
    if (cache.enabled()) cache.store(key, object, depFile);
  }

  // 4. Link with nvcc: cudart (static, nvcc's default) and the spec's libraries. With gold where
  // the host has it: it links the static cudart in about 30 ms against ld.bfd's 75 (dev machine),
  // which every probe variant's build pays on the way to its GPU run. It changes only how the
  // host code is laid out, and every variant of a program links the same way; a link gold
  // refuses is run again with the default linker.
  result.executable = outDir / spec.name;
  std::vector<std::string> linkArgv{nvcc->string(),
                                    fmt::format("-gencode=arch=compute_{0},code=sm_{0}", *arch)};
  linkArgv.insert(linkArgv.end(), objects.begin(), objects.end());
  linkArgv.insert(linkArgv.end(), {"-o", result.executable.string()});
  for (const auto& lib : spec.linkLibraries)
    linkArgv.push_back(lib.starts_with('-') || lib.find('/') != std::string::npos ? lib
                                                                                  : "-l" + lib);
  // Looked up once per process: a query links every probe variant.
  static const bool gold = findTool("ld.gold").has_value();
  std::vector<std::string> goldArgv = linkArgv;
  goldArgv.insert(goldArgv.begin() + 1, {"-Xcompiler", "-fuse-ld=gold"});
  auto link = gold ? builder.run("nvcc link (gold)", goldArgv) : builder.run("nvcc link", linkArgv);
  if (link && gold && (*link)->exitCode != 0)
    link = builder.run("nvcc link (gold failed: default linker)", linkArgv);
  if (!link) return std::unexpected(link.error());
  if ((*link)->exitCode != 0) return std::unexpected(stepError(**link));
  if (!fs::is_regular_file(result.executable, ec))
    return fail("build", fmt::format("nvcc link succeeded but `{}` does not exist",
                                     result.executable.string()));
  return {};
}

}  // namespace

std::string BuildResult::log() const {
  std::string text;
  for (const auto& s : steps) {
    text += fmt::format("$ {}\n# step `{}`: exit {}, {:.2f} s\n", s.command, s.name, s.exitCode,
                        s.seconds);
    text += s.out;
    if (!s.out.empty() && !s.out.ends_with('\n')) text += '\n';
    text += s.err;
    if (!s.err.empty() && !s.err.ends_with('\n')) text += '\n';
  }
  return text;
}

Result<std::vector<std::string>> splitShellWords(std::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (inWord) words.push_back(std::exchange(word, {}));
      inWord = false;
      continue;
    }
    inWord = true;
    if (c == '\\' && i + 1 < line.size()) {
      word += line[++i];
    } else if (c == '\'') {
      const size_t end = line.find('\'', i + 1);
      if (end == std::string_view::npos)
        return fail("build", fmt::format("unbalanced ' in command: {}", line));
      word.append(line.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size() &&
            std::string_view("\"\\$`").find(line[j + 1]) != std::string_view::npos)
          ++j;
        word += line[j];
      }
      if (j >= line.size()) return fail("build", fmt::format("unbalanced \" in command: {}", line));
      i = j;
    } else {
      word += c;
    }
  }
  if (inWord) words.push_back(std::move(word));
  return words;
}

Result<std::vector<DryrunLine>> parseDryrun(std::string_view text) {
  std::vector<DryrunLine> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.starts_with("#$ ")) continue;
    line.remove_prefix(3);
    DryrunLine out;
    if (auto eq = assignmentEnd(line)) {
      out.assignment = true;
      out.name = std::string(line.substr(0, *eq));
      out.value = std::string(line.substr(*eq + 1));
    } else {
      auto words = splitShellWords(line);
      if (!words) return std::unexpected(words.error());
      if (words->empty()) continue;
      out.words = std::move(*words);
      out.name = fs::path(out.words.front()).filename().string();
      out.value = std::string(line);
    }
    lines.push_back(std::move(out));
  }
  return lines;
}

Result<BuildResult> buildWithPtx(const ProgramSpec& spec, std::string_view ptx,
                                 const fs::path& outDirGiven, const BuildOptions& options) {
  std::error_code ec;
  // The steps run in a temporary directory, so a relative output directory (`argus build -o
  // out`) is taken relative to where Argus was started.
  const fs::path outDir = fs::absolute(outDirGiven, ec);
  if (ec)
    return fail("build",
                fmt::format("cannot resolve `{}`: {}", outDirGiven.string(), ec.message()));
  fs::create_directories(outDir, ec);
  if (ec)
    return fail("build", fmt::format("cannot create `{}`: {}", outDir.string(), ec.message()));
  auto tmp = makeTempDir("argus-build");
  if (!tmp) return std::unexpected(tmp.error());
  Builder builder(options, *tmp);
  BuildResult result;
  auto built = buildIn(spec, ptx, outDir, *tmp, options, builder, result);
  result.steps = std::move(builder.steps());
  result.logFile = outDir / "build.log";
  auto logged = writeFile(result.logFile, result.log());
  if (options.keepIntermediates) {
    fs::remove_all(outDir / "tmp", ec);
    fs::copy(*tmp, outDir / "tmp", fs::copy_options::recursive, ec);
  }
  fs::remove_all(*tmp, ec);
  if (!built) {
    Error e = built.error();
    e.message += fmt::format("\n(full log: {})", result.logFile.string());
    return std::unexpected(std::move(e));
  }
  if (!logged) return std::unexpected(logged.error());
  return result;
}

Result<workspace::VersionId> recordVariant(workspace::Workspace& ws, workspace::VersionId base,
                                           const std::string& variantKey,
                                           const VariantFiles& files) {
  if (variantKey.empty()) return fail("build", "recordVariant: the variant key is empty");
  if (files.ptx.empty())
    return fail("build", fmt::format("recordVariant: variant `{}` has no PTX", variantKey));
  workspace::NewVersion version;
  version.kind = workspace::VersionKind::variant;
  version.base = base;
  version.transform = variantKey;
  version.optionsJson = files.optionsJson;
  version.label = "variant/" + variantKey;
  version.task = files.task;
  const std::string stem = fs::path(files.ptxName).stem().string();
  version.files.push_back({files.ptxName, "ptx", files.ptx});
  if (!files.cubin.empty()) version.files.push_back({stem + ".cubin", "cubin", files.cubin});
  if (!files.executable.empty())
    version.files.push_back({"executable", "executable", files.executable});
  if (!files.traceMap.empty())
    version.files.push_back({"trace_map.json", "trace_map", files.traceMap});
  // The same variant built twice (two identical queries at once) is one version.
  std::string identity = fmt::format("{}\n{}\n{}\n", base.text(), variantKey, version.optionsJson);
  for (const auto& f : version.files)
    identity += fmt::format("{} {}\n", f.name, workspace::hashBytes(f.bytes).hex());
  version.contentKey = "variant " + workspace::hashBytes(identity).hex();
  return ws.addVersion(version);
}

}  // namespace argus::program
