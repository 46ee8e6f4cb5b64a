// `argus build`: build one measurement variant of a program by hand (what build_variant tasks
// do inside a query), for benchmarks and for looking at what Argus runs.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "argus/session/build.h"
#include "commands.h"

namespace argus::cli {
namespace {

int runBuild(session::BuildRequest request) {
  request.progress = [](const std::string& line) { fmt::print("{}\n", line); };
  auto built = session::buildVariant(request);
  if (!built) return reportError(built.error());
  fmt::print("built {} variant of {}: {}\n", built->variant, built->program,
             built->executable.string());
  if (!built->statistics.empty()) fmt::print("pass statistics: {}\n", built->statistics.dump());
  return 0;
}

}  // namespace

std::vector<Command> addBuildCommands(CLI::App& app) {
  auto o = std::make_shared<session::BuildRequest>();
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
  verb->add_option("--derive", o->derive.list,
                   "Regions derived into the PTX without editing the source, as on `argus "
                   "regions`: loops, ops, op:KIND, loop:LINE, lines:A-B, func:NAME "
                   "(docs/regions-file.md)");
  verb->add_option("--regions-file", o->derive.file,
                   "A region file (YAML or JSON) whose regions are derived into the PTX")
      ->check(CLI::ExistingFile);
  verb->add_flag("--copy-callees", o->copyCallees,
                 "Give every call path of a non-inlined device function its own copy of the "
                 "callee's machine code in the cubin: the reference's bytes appended to the "
                 "kernel, each CALL sent to its copy, so per-PC counts of the copies split the "
                 "callee's executions by call path (CUDA programs; the map of copies to "
                 "reference PCs is written as callee_copies.json)");
  return {Command{verb, [o] { return runBuild(*o); }}};
}

}  // namespace argus::cli
