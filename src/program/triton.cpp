#include "argus/program/triton.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "argus/program/region_file.h"
#include "argus/ptx/parser.h"
#include "argus/support/process.h"
#include "argus/ttgir/regions.h"
#include "argus/workspace/hash.h"

namespace argus::program {
namespace {

namespace fs = std::filesystem;

/// Single-quoted for /bin/sh.
std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// PYTHONPATH for the script's runs: Argus's own package first, so a kernel can import the
/// marker helper (`argus.triton`) wherever its files are (a version checked out of a workspace).
std::string pythonPath(const ProgramSpec& spec) {
  std::string path = ARGUS_PYTHON_DIR;
  if (auto it = spec.run.environment.find("PYTHONPATH"); it != spec.run.environment.end()) {
    if (!it->second.empty()) path += ":" + it->second;
  } else if (const char* inherited = std::getenv("PYTHONPATH"); inherited && *inherited) {
    path += std::string(":") + inherited;
  }
  return path;
}

/// The environment a Python run of the spec gets: its run.env, then PYTHONPATH (pythonPath).
std::vector<std::pair<std::string, std::string>> pythonEnvironment(const ProgramSpec& spec) {
  std::vector<std::pair<std::string, std::string>> env(spec.run.environment.begin(),
                                                       spec.run.environment.end());
  env.emplace_back("PYTHONPATH", pythonPath(spec));
  return env;
}

/// One run of the script with Triton's dump knobs (and `extraEnv`) into `dumpDir`: the one
/// compiled `kernel`'s PTX file, and what the script printed.
struct DumpRun {
  fs::path kernelPtx;
  std::string output;
};

std::string outputTail(const std::string& text) {
  return text.size() > 2000 ? "..." + text.substr(text.size() - 2000) : text;
}

Result<DumpRun> runDump(const ProgramSpec& spec, const std::string& kernel, const fs::path& dumpDir,
                        const std::vector<std::pair<std::string, std::string>>& extraEnv,
                        std::string_view what) {
  std::error_code ec;
  fs::remove_all(dumpDir, ec);
  fs::create_directories(dumpDir, ec);
  if (ec)
    return fail("triton", fmt::format("cannot create {}: {}", dumpDir.string(), ec.message()));
  auto env = pythonEnvironment(spec);
  env.emplace_back("TRITON_KERNEL_DUMP", "1");
  env.emplace_back("TRITON_DUMP_DIR", dumpDir.string());
  env.emplace_back("TRITON_ALWAYS_COMPILE", "1");
  env.insert(env.end(), extraEnv.begin(), extraEnv.end());
  auto run =
      runProcess({spec.python, spec.script.string()},
                 {.workingDirectory = spec.file.parent_path(),
                  .timeout = std::chrono::seconds(static_cast<long>(spec.run.timeoutSeconds)),
                  .environment = env});
  if (!run) return std::unexpected(run.error());
  if (spec.run.skipExitCode >= 0 && run->exitCode == spec.run.skipExitCode)
    return fail("triton", fmt::format("`{} {}` says it cannot run here (exit {}): Triton compiles "
                                      "at launch, so getting the kernel's PTX needs a GPU\n{}",
                                      spec.python, spec.script.filename().string(), run->exitCode,
                                      outputTail(run->out + run->err)));
  if (run->exitCode != spec.run.successExitCode)
    return fail("triton",
                fmt::format("the {} `{} {}` failed (exit {}):\n{}", what, spec.python,
                            spec.script.string(), run->exitCode, outputTail(run->out + run->err)));
  std::vector<fs::path> hits;
  std::vector<std::string> compiled;
  for (const auto& dir : fs::directory_iterator(dumpDir, ec)) {
    if (!dir.is_directory()) continue;
    for (const auto& file : fs::directory_iterator(dir.path(), ec)) {
      if (file.path().extension() != ".ptx") continue;
      const std::string stem = file.path().stem().string();
      if (stem == kernel) hits.push_back(file.path());
      if (std::find(compiled.begin(), compiled.end(), stem) == compiled.end())
        compiled.push_back(stem);
    }
  }
  if (hits.empty())
    return fail(
        "triton",
        fmt::format("the script did not compile a Triton kernel named `{}`; it "
                    "compiled: {}",
                    kernel,
                    compiled.empty() ? "none" : fmt::format("{}", fmt::join(compiled, ", "))));
  if (hits.size() > 1) {
    std::vector<std::string> hashes;
    for (const auto& h : hits) hashes.push_back(h.parent_path().filename().string());
    return fail("triton", fmt::format("kernel `{}` was compiled {} times (sources/configurations "
                                      "{}); Argus substitutes one compiled kernel: make the script "
                                      "launch one configuration (e.g. no autotuning)",
                                      kernel, hits.size(), fmt::join(hashes, ", ")));
  }
  return DumpRun{hits.front(), run->out + run->err};
}

}  // namespace

bool isTritonIrFile(const fs::path& file) {
  return file.extension() == ".ttgir" || file.extension() == ".ttir";
}

std::optional<fs::path> tritonKernelIr(const ProgramSpec& spec) {
  if (spec.language != "triton") return std::nullopt;
  for (const auto& source : spec.sources)
    if (isTritonIrFile(source)) return source;
  return std::nullopt;
}

Result<TritonKernelDump> dumpTritonKernel(const ProgramSpec& spec, const std::string& kernel,
                                          const fs::path& workDir) {
  auto first = runDump(spec, kernel, workDir / "dump", {}, "dump run");
  if (!first) return std::unexpected(first.error());
  TritonKernelDump dump;
  dump.kernel = kernel;
  dump.sourceHash = first->kernelPtx.parent_path().filename().string();
  fs::path ptxFile = first->kernelPtx;
  if (const auto ir = tritonKernelIr(spec)) {
    // The kernel's IR comes from the spec (an optimizer's edit): Triton compiles the later
    // stages from it when it sits in the override folder under the source hash of the first run.
    auto text = readFile(*ir);
    if (!text) return std::unexpected(text.error());
    dump.irStage = ir->extension().string().substr(1);
    dump.ir = std::move(*text);
    const fs::path overrideDir = workDir / "override";
    std::error_code ec;
    fs::remove_all(overrideDir, ec);
    fs::create_directories(overrideDir / dump.sourceHash, ec);
    const fs::path placed = overrideDir / dump.sourceHash / (kernel + "." + dump.irStage);
    if (auto ok = writeFile(placed, dump.ir); !ok) return std::unexpected(ok.error());
    auto second =
        runDump(spec, kernel, workDir / "dump-from-ir",
                {{"TRITON_KERNEL_OVERRIDE", "1"}, {"TRITON_OVERRIDE_DIR", overrideDir.string()}},
                fmt::format("run that compiles from {}", ir->filename().string()));
    if (!second) return std::unexpected(second.error());
    // Triton says so when it takes a stage from the override folder; without that line the
    // PTX would be the script's own kernel, not the edited one.
    const std::string said = "Overriding kernel with file ";
    const size_t at = second->output.find(said);
    const std::string line = at == std::string::npos
                                 ? ""
                                 : second->output.substr(at, second->output.find('\n', at) - at);
    if (line.find(dump.sourceHash + "/" + kernel + "." + dump.irStage) == std::string::npos)
      return fail("triton",
                  fmt::format("{}: Triton did not compile kernel `{}` from it (no \"Overriding "
                              "kernel with file {}\" in the script's output); is it the {} of "
                              "this kernel, dumped by this Triton?\n{}",
                              ir->string(), kernel, placed.string(), dump.irStage,
                              outputTail(second->output)));
    if (second->kernelPtx.parent_path().filename() != dump.sourceHash)
      return fail("triton", fmt::format("internal: the run from {} compiled kernel `{}` under "
                                        "source hash {}, the dump run under {}",
                                        ir->string(), kernel,
                                        second->kernelPtx.parent_path().filename().string(),
                                        dump.sourceHash));
    ptxFile = second->kernelPtx;
  }
  auto ptx = readFile(ptxFile);
  if (!ptx) return std::unexpected(ptx.error());
  dump.ptx = std::move(*ptx);
  fs::path ttgir = ptxFile;
  ttgir.replace_extension(".ttgir");
  std::error_code ec;
  if (fs::exists(ttgir, ec))
    if (auto text = readFile(ttgir)) dump.ttgir = std::move(*text);
  return dump;
}

Result<fs::path> writeTritonVariant(const ProgramSpec& spec, const TritonKernelDump& dump,
                                    const std::string& ptx, const fs::path& outDir,
                                    const std::string& cubinBase64) {
  std::error_code ec;
  fs::create_directories(outDir, ec);
  if (ec) return fail("triton", fmt::format("cannot create {}: {}", outDir.string(), ec.message()));
  if (ptx.find("\nARGUS_PTX_END\n") != std::string::npos)
    return fail("triton", "internal: the PTX contains the wrapper's here-document delimiter");
  // A kernel compiled from an edited IR: the IR is overridden too, so that the metadata Triton
  // derives from the stages before PTX (shared memory size, ...) is the edited kernel's.
  std::string overrideFiles;
  if (!dump.ir.empty()) {
    if (dump.ir.find("\nARGUS_IR_END\n") != std::string::npos)
      return fail("triton", "internal: the IR contains the wrapper's here-document delimiter");
    overrideFiles =
        fmt::format("cat > \"$dir/{}/{}.{}\" <<'ARGUS_IR_END'\n{}{}ARGUS_IR_END\n", dump.sourceHash,
                    dump.kernel, dump.irStage, dump.ir, dump.ir.ends_with("\n") ? "" : "\n");
  }
  if (!cubinBase64.empty()) {
    if (cubinBase64.find("ARGUS_CUBIN_END") != std::string::npos)
      return fail("triton", "internal: the cubin's base64 holds the wrapper's delimiter");
    overrideFiles += fmt::format(
        "base64 -d > \"$dir/{}/{}.cubin\" <<'ARGUS_CUBIN_END'\n{}{}"
        "ARGUS_CUBIN_END\n",
        dump.sourceHash, dump.kernel, cubinBase64, cubinBase64.ends_with("\n") ? "" : "\n");
  }
  const fs::path wrapper = outDir / spec.name;
  const std::string text = fmt::format(
      "#!/bin/sh\n"
      "# Argus variant of Triton program `{0}` (kernel {1}): runs {2} with this PTX in place of\n"
      "# the kernel's own, through Triton's override knobs. Arguments are passed to the script.\n"
      "set -e\n"
      "dir=$(mktemp -d \"${{TMPDIR:-/tmp}}/argus-triton.XXXXXX\")\n"
      "trap 'rm -rf \"$dir\"' EXIT\n"
      "mkdir -p \"$dir/{3}\"\n"
      "cat > \"$dir/{3}/{1}.ptx\" <<'ARGUS_PTX_END'\n"
      "{4}{5}ARGUS_PTX_END\n"
      "{9}"
      "cd {6}\n"
      "set +e\n"
      "# Triton's notice of each substituted stage (an empty line, then `Overriding kernel with\n"
      "# file` and this run's temporary folder) is dropped, so that the output is the program's\n"
      "# own and equal between runs of equal results.\n"
      "{{ PYTHONPATH={10}${{PYTHONPATH:+:$PYTHONPATH}} TRITON_KERNEL_OVERRIDE=1 "
      "TRITON_OVERRIDE_DIR=\"$dir\" TRITON_ALWAYS_COMPILE=1 {7} {8} \"$@\"; "
      "echo $? > \"$dir/status\"; }} | awk '"
      "held {{ held = 0; if ($0 ~ /^Overriding kernel with file /) next; print \"\" }} "
      "$0 == \"\" {{ held = 1; next }} /^Overriding kernel with file / {{ next }} {{ print }} "
      "END {{ if (held) print \"\" }}'\n"
      "exit \"$(cat \"$dir/status\")\"\n",
      spec.name, dump.kernel, spec.script.filename().string(), dump.sourceHash, ptx,
      ptx.ends_with("\n") ? "" : "\n", shellQuote(spec.file.parent_path().string()),
      shellQuote(spec.python), shellQuote(spec.script.string()), overrideFiles,
      shellQuote(ARGUS_PYTHON_DIR));
  if (auto ok = writeFile(wrapper, text); !ok) return std::unexpected(ok.error());
  fs::permissions(wrapper, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add, ec);
  if (ec)
    return fail("triton",
                fmt::format("cannot make {} executable: {}", wrapper.string(), ec.message()));
  return wrapper;
}

Result<std::vector<ptx::FunctionRegions>> tritonPlanningRegions(const ProgramSpec& spec) {
  if (const auto ir = tritonKernelIr(spec)) {
    auto text = readFile(*ir);
    if (!text) return std::unexpected(text.error());
    return ttgir::analyzeRegions(*text, ir->filename().string());
  }
  std::vector<ptx::FunctionRegions> functions;
  for (const auto& kernel : spec.kernels) {
    if (kernel.regions.empty()) continue;
    ptx::FunctionRegions f;
    f.function = kernel.name;
    f.isEntry = true;
    std::map<std::string, uint32_t> index;
    // Adds `path` (and, first, its parents) in pre-order; returns its index.
    auto add = [&](auto& self, const std::string& path) -> uint32_t {
      if (auto it = index.find(path); it != index.end()) return it->second;
      std::optional<uint32_t> parent;
      const size_t slash = path.rfind('/');
      if (slash != std::string::npos) parent = self(self, path.substr(0, slash));
      ptx::Region r;
      r.path = path;
      r.name = slash == std::string::npos ? path : path.substr(slash + 1);
      r.id = ptx::regionId(kernel.name, path);
      r.parent = parent;
      const auto at = static_cast<uint32_t>(f.regions.size());
      f.regions.push_back(std::move(r));
      if (parent) f.regions[*parent].children.push_back(at);
      index[path] = at;
      return at;
    };
    for (const auto& path : kernel.regions) (void)add(add, path);
    functions.push_back(std::move(f));
  }
  if (functions.empty())
    return fail(
        "program",
        fmt::format("{}: a Triton program is planned before Triton compiles its kernel (that "
                    "needs a GPU run), so the region tree must come from the spec: list "
                    "`kernels: [{{name: KERNEL, regions: [{{path: mainloop}}, ...]}}]`, or "
                    "add the kernel's .ttgir to `sources` (TRITON_KERNEL_DUMP=1 writes it)",
                    spec.file.string()));
  return functions;
}

std::string tritonPackageVersion(const ProgramSpec& spec) {
  auto run = runProcess({spec.python, "-c",
                         "import importlib.metadata as m\n"
                         "try:\n    print(m.version('triton'))\n"
                         "except m.PackageNotFoundError:\n    print('none')"},
                        {.workingDirectory = spec.file.parent_path(),
                         .timeout = std::chrono::seconds(30),
                         .environment = pythonEnvironment(spec)});
  if (!run || run->exitCode != 0) return "unknown";
  std::string version = run->out;
  while (!version.empty() && std::isspace(static_cast<unsigned char>(version.back())))
    version.pop_back();
  return version.empty() ? "unknown" : version;
}

Result<std::string> tritonProgramVersion(const ProgramSpec& spec) {
  std::string material;
  std::vector<fs::path> files{spec.file};
  files.insert(files.end(), spec.sources.begin(), spec.sources.end());
  for (const auto& f : files) {
    auto bytes = readFile(f);
    if (!bytes) return std::unexpected(bytes.error());
    material += f.filename().string() + '\0' + *bytes + '\0';
  }
  // The Triton that compiles the kernel at launch is part of the program: another one dumps
  // other PTX, so its variants and runs are not reused.
  material += "triton\0" + tritonPackageVersion(spec) + '\0';
  return workspace::hashBytes(material).hex();
}

Result<void> checkDumpedRegions(const ProgramSpec& spec, const std::string& kernel,
                                const std::string& ptx) {
  const bool declares =
      tritonKernelIr(spec) ||
      std::ranges::any_of(spec.kernels, [](const KernelSpec& k) { return !k.regions.empty(); });
  if (!declares) return {};
  auto declared = tritonPlanningRegions(spec);
  if (!declared) return std::unexpected(declared.error());
  auto module = ptx::parseModule(ptx, kernel + ".ptx");
  if (!module) return std::unexpected(module.error());
  auto dumped = ptx::analyzeRegions(*module);
  if (!dumped) return std::unexpected(dumped.error());
  auto paths = [](const std::vector<ptx::FunctionRegions>& fs, const std::string& name) {
    std::vector<std::string> out;
    for (const auto& f : fs)
      if (f.function == name)
        for (const auto& r : f.regions) out.push_back(r.path);
    return out;
  };
  const auto want = paths(*declared, kernel);
  const auto have = paths(*dumped, kernel);
  for (const auto& p : want)
    if (std::find(have.begin(), have.end(), p) == have.end())
      return fail("triton",
                  fmt::format("{}: the spec plans with region `{}` of kernel `{}`, but the PTX "
                              "Triton compiled has regions [{}]; fix the spec's `kernels` (or the "
                              "markers in the kernel) so they agree",
                              spec.file.string(), p, kernel, fmt::join(have, ", ")));
  return {};
}

bool derivesRegions(const ProgramSpec& spec, const DeriveRequest& derive) {
  return !spec.derive.empty() || !derive.empty();
}

Result<std::string> deriveIntoDump(const ProgramSpec& spec, const std::string& kernel,
                                   std::string ptx, const DeriveRequest& derive) {
  return derivePtx(std::move(ptx), kernel + ".ptx", {spec.derive, derive});
}

Result<ProgramPtx> tritonDerivedPtx(const ProgramSpec& spec, std::string kernel,
                                    const DeriveRequest& derive) {
  if (kernel.empty()) {
    if (spec.kernels.size() != 1)
      return fail("triton", fmt::format("{}: deriving regions of a Triton program needs the "
                                        "kernel: name it with --kernel (the spec lists {} "
                                        "kernels)",
                                        spec.file.string(), spec.kernels.size()));
    kernel = spec.kernels.front().name;
  }
  std::error_code ec;
  static std::atomic<unsigned> counter{0};
  const fs::path workDir =
      fs::temp_directory_path(ec) / fmt::format("argus-triton-derive-{}-{}", ::getpid(), counter++);
  struct Remove {
    fs::path dir;
    ~Remove() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } remove{workDir};
  auto dump = dumpTritonKernel(spec, kernel, workDir);
  if (!dump)
    return fail("triton",
                fmt::format("deriving regions of Triton kernel `{}` needs its PTX, which "
                            "Triton makes when {} launches it on a GPU; without one, "
                            "derive on a dumped PTX (TRITON_KERNEL_DUMP=1 writes it): "
                            "`argus regions KERNEL.ptx --derive ...`\n{}",
                            kernel, spec.script.filename().string(), dump.error().message));
  auto text = deriveIntoDump(spec, kernel, std::move(dump->ptx), derive);
  if (!text) return std::unexpected(text.error());
  auto version = tritonProgramVersion(spec);
  if (!version) return std::unexpected(version.error());
  auto own = deriveMaterial(spec.derive);
  if (!own) return std::unexpected(own.error());
  auto extra = deriveMaterial(derive);
  if (!extra) return std::unexpected(extra.error());
  return ProgramPtx{std::move(*text), kernel + ".ptx",
                    workspace::hashBytes(*version + '\0' + *own + *extra).hex()};
}

}  // namespace argus::program
