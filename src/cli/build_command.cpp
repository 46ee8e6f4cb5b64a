// `argus build`: build one measurement variant of a program by hand (what build_variant tasks
// do inside a query), for benchmarks and for looking at what Argus runs.
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/passes/transforms.h"
#include "argus/program/build.h"
#include "argus/program/program.h"
#include "argus/program/triton.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/query/query.h"
#include "argus/support/process.h"
#include "commands.h"

namespace argus::cli {
namespace {

namespace fs = std::filesystem;

struct BuildOptions {
  std::string program;
  std::string variant = "full_trace";
  std::string scope;
  std::string kernel;
  std::string timeBase;
  std::vector<std::string> passOptions;
  std::string output;
  std::string ptx;  ///< Build from this PTX file instead of the front end's output.
};

int runBuild(const BuildOptions& o) {
  // A malformed --pass-option or a key the trace pass does not take (trace::kTraceOptionNames) is
  // an error before anything is compiled.
  const auto passOptions = query::parseTraceOptions(o.passOptions, "--pass-option");
  if (!passOptions) return reportError(passOptions.error());
  std::vector<std::string> transforms;
  if (o.variant == "trace_free" || o.variant == "reference") {
    transforms = {"strip_markers"};
  } else if (o.variant == "full_trace" || o.variant == "scoped_trace") {
    transforms = {"lower_markers_to_trace"};
  } else if (o.variant != "original") {
    return reportError(Error{"build", fmt::format("unknown variant `{}`; variants are original, "
                                                  "trace_free, full_trace, scoped_trace",
                                                  o.variant)});
  }
  auto spec = program::loadProgramSpec(o.program);
  if (!spec) return reportError(spec.error());
  const bool triton = spec->language == "triton";
  std::optional<program::TritonKernelDump> dump;
  std::string kernel = o.kernel;
  if (triton) {
    // Triton compiles at launch: run the script once with the dump knobs to get the PTX.
    if (kernel.empty() && spec->kernels.size() == 1) kernel = spec->kernels.front().name;
    if (kernel.empty())
      return reportError(Error{"build",
                               "a Triton program needs --kernel NAME (or exactly one "
                               "entry under `kernels` in the spec)"});
    fmt::print("running {} once to dump Triton kernel `{}`...\n", spec->script.filename().string(),
               kernel);
    auto dumped = program::dumpTritonKernel(*spec, kernel, fs::path(o.output) / "triton");
    if (!dumped) return reportError(dumped.error());
    dump = std::move(*dumped);
  }
  Result<std::string> ptxText = !o.ptx.empty() ? readFile(o.ptx)
                                : triton       ? Result<std::string>(dump->ptx)
                                               : program::frontEndPtx(*spec);
  if (!ptxText) return reportError(ptxText.error());
  auto module = ptx::parseModule(
      *ptxText, triton ? kernel + ".ptx" : spec->sources.front().stem().string() + ".ptx");
  if (!module) return reportError(module.error());
  passes::TransformOptions options;
  auto scope = query::parseScope(o.scope);
  if (!scope) return reportError(scope.error());
  if (o.variant == "scoped_trace" && scope->all())
    return reportError(Error{"build", "a scoped_trace variant needs --scope"});
  options.scope = *scope;
  options.kernel = kernel;
  if (!o.timeBase.empty()) options.config["time_base"] = o.timeBase;
  // The spec's block shapes let the trace pass's lane-0 analysis know the warps' thread numbering.
  if (const auto blocks = program::blockShapes(*spec);
      !blocks.empty() && transforms == std::vector<std::string>{"lower_markers_to_trace"})
    options.config["blocks"] = blocks;
  for (const auto& [key, value] : *passOptions) options.config[key] = value;
  auto transformed = passes::applyTransforms(*module, transforms, options);
  if (!transformed) return reportError(transformed.error());
  const fs::path out = o.output;
  fs::path executable;
  if (triton) {
    auto wrapper = program::writeTritonVariant(*spec, *dump, ptx::printModule(*module), out);
    if (!wrapper) return reportError(wrapper.error());
    executable = *wrapper;
    if (!dump->ttgir.empty())
      if (auto ok = writeFile(out / (kernel + ".ttgir"), dump->ttgir); !ok)
        return reportError(ok.error());
  } else {
    auto built = program::buildWithPtx(*spec, ptx::printModule(*module), out);
    if (!built) return reportError(built.error());
    executable = built->executable;
  }
  if (!transformed->traceMap.empty())
    if (auto ok = writeFile(out / "trace_map.json", transformed->traceMap.dump(2)); !ok)
      return reportError(ok.error());
  fmt::print("built {} variant of {}: {}\n", o.variant, spec->name, executable.string());
  if (!transformed->statistics.empty())
    fmt::print("pass statistics: {}\n", transformed->statistics.dump());
  return 0;
}

}  // namespace

std::vector<Command> addBuildCommands(CLI::App& app) {
  auto o = std::make_shared<BuildOptions>();
  auto* verb = app.add_subcommand(
      "build",
      "Build one variant of a program spec: original, trace_free (markers stripped),\n"
      "full_trace (every occurrence recorded) or scoped_trace (only --scope occurrences).\n"
      "Run the traced executable with CUDA_INJECTION64_PATH=<libargus_inject.so> and\n"
      "ARGUS_TRACE_DIR=<dir> to collect its trace buffers; `argus trace <dir>` decodes them.\n"
      "For a Triton program (language: triton) Argus runs its script once on the GPU to dump\n"
      "the kernel's PTX and writes an executable wrapper that runs the script with the\n"
      "variant's PTX substituted (Triton's TRITON_KERNEL_OVERRIDE).");
  verb->add_option("--program", o->program, "Program spec (argus.yaml)")->required();
  verb->add_option("--variant", o->variant, "original | trace_free | full_trace | scoped_trace")
      ->capture_default_str();
  verb->add_option("--scope", o->scope, "Occurrences a scoped_trace records (role=...,iter=...)");
  verb->add_option("--kernel", o->kernel,
                   "Instrument only this kernel (mangled name); for Triton, the kernel to dump");
  verb->add_option("--time-base", o->timeBase,
                   "Trace timestamps: globaltimer (default) or clock64");
  verb->add_option("--pass-option", o->passOptions,
                   "KEY=VALUE for the trace pass, repeatable (docs/tracing.md):\n"
                   "record_layout=compact|full: 16-byte records (default) or 32-byte ones;\n"
                   "record_place=begin|end: a leaf region's record place taken at its begin\n"
                   "marker (default; compact layout only) or at its end marker;\n"
                   "parted=count|record: occurrences a warp begins without lane 0 counted as\n"
                   "lost (default) or recorded (compact layout only);\n"
                   "time_base=globaltimer|clock64 (as --time-base); store_cache=cs|wb|cg;\n"
                   "with record_layout=full only: overflow=count (default clamp) and\n"
                   "record_store=paired (default leader)");
  verb->add_option("-o,--output", o->output, "Output directory")->required();
  verb->add_option("--ptx", o->ptx,
                   "Start from this PTX file instead of the device source's front-end PTX (e.g. "
                   "a hand-edited kernel; the variant's passes still apply)")
      ->check(CLI::ExistingFile);
  return {Command{verb, [o] { return runBuild(*o); }}};
}

}  // namespace argus::cli
