// `argus build`'s engine (argus/session/build.h).
#include "argus/session/build.h"

#include <optional>

#include <fmt/format.h>

#include "argus/passes/transforms.h"
#include "argus/program/build.h"
#include "argus/program/program.h"
#include "argus/program/triton.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/query/query.h"
#include "argus/sass/callee_copies.h"
#include "argus/support/process.h"

namespace argus::session {

namespace fs = std::filesystem;

Result<BuiltVariant> buildVariant(const BuildRequest& o) {
  // A malformed --pass-option or a key the trace pass does not take (trace::kTraceOptionNames) is
  // an error before anything is compiled.
  const auto passOptions = query::parseTraceOptions(o.passOptions, "--pass-option");
  if (!passOptions) return std::unexpected(passOptions.error());
  std::vector<std::string> transforms;
  if (o.variant == "trace_free" || o.variant == "reference") {
    transforms = {"strip_markers"};
  } else if (o.variant == "full_trace" || o.variant == "scoped_trace") {
    transforms = {"lower_markers_to_trace"};
  } else if (o.variant != "original") {
    return std::unexpected(
        Error{"build", fmt::format("unknown variant `{}`; variants are original, "
                                   "trace_free, full_trace, scoped_trace",
                                   o.variant)});
  }
  auto spec = program::loadProgramSpec(o.program);
  if (!spec) return std::unexpected(spec.error());
  const bool triton = spec->language == "triton";
  if (triton && o.copyCallees)
    return std::unexpected(Error{"build",
                                 "--copy-callees edits the cubin ptxas makes of a CUDA program; "
                                 "a Triton kernel's cubin is Triton's own (not supported yet)"});
  std::optional<program::TritonKernelDump> dump;
  std::string kernel = o.kernel;
  if (triton) {
    // Triton compiles at launch: run the script once with the dump knobs to get the PTX.
    if (kernel.empty() && spec->kernels.size() == 1) kernel = spec->kernels.front().name;
    if (kernel.empty())
      return std::unexpected(Error{"build",
                                   "a Triton program needs --kernel NAME (or exactly one "
                                   "entry under `kernels` in the spec)"});
    if (o.progress)
      o.progress(fmt::format("running {} once to dump Triton kernel `{}`...",
                             spec->script.filename().string(), kernel));
    auto dumped = program::dumpTritonKernel(*spec, kernel, fs::path(o.output) / "triton");
    if (!dumped) return std::unexpected(dumped.error());
    dump = std::move(*dumped);
  }
  if (!o.derive.empty() && !o.ptx.empty())
    return std::unexpected(
        Error{"build",
              "--derive and --regions-file place regions into the program's PTX; --ptx gives "
              "the PTX itself (derive into it first: `argus regions SPEC --derive ... "
              "--ptx-out F`, then --ptx F)"});
  if (triton && o.ptx.empty() && program::derivesRegions(*spec, o.derive)) {
    auto derived = program::deriveIntoDump(*spec, kernel, std::move(dump->ptx), o.derive);
    if (!derived) return std::unexpected(derived.error());
    dump->ptx = std::move(*derived);
  }
  Result<std::string> ptxText = !o.ptx.empty() ? readFile(o.ptx)
                                : triton       ? Result<std::string>(dump->ptx)
                                               : program::frontEndPtx(*spec, {}, o.derive);
  if (!ptxText) return std::unexpected(ptxText.error());
  auto module = ptx::parseModule(
      *ptxText, triton ? kernel + ".ptx" : spec->sources.front().stem().string() + ".ptx");
  if (!module) return std::unexpected(module.error());
  passes::TransformOptions options;
  auto scope = query::parseScope(o.scope);
  if (!scope) return std::unexpected(scope.error());
  if (o.variant == "scoped_trace" && scope->all())
    return std::unexpected(Error{"build", "a scoped_trace variant needs --scope"});
  options.scope = *scope;
  options.kernel = kernel;
  if (!o.timeBase.empty()) options.config["time_base"] = o.timeBase;
  // The spec's block shapes let the trace pass's lane-0 analysis know the warps' thread numbering.
  if (const auto blocks = program::blockShapes(*spec);
      !blocks.empty() && transforms == std::vector<std::string>{"lower_markers_to_trace"})
    options.config["blocks"] = blocks;
  for (const auto& [key, value] : *passOptions) options.config[key] = value;
  auto transformed = passes::applyTransforms(*module, transforms, options);
  if (!transformed) return std::unexpected(transformed.error());
  const fs::path out = o.output;
  fs::path executable;
  if (triton) {
    auto wrapper = program::writeTritonVariant(*spec, *dump, ptx::printModule(*module), out);
    if (!wrapper) return std::unexpected(wrapper.error());
    executable = *wrapper;
    if (!dump->ttgir.empty())
      if (auto ok = writeFile(out / (kernel + ".ttgir"), dump->ttgir); !ok)
        return std::unexpected(ok.error());
  } else {
    program::BuildOptions build;
    nlohmann::json copies = nlohmann::json::object();
    if (o.copyCallees)
      build.editCubin = [&](const fs::path& cubin) -> Result<void> {
        auto map = sass::copyCalleesInFile(cubin);
        if (!map) return fail("build", "--copy-callees: " + map.error().message);
        copies = std::move(*map);
        return {};
      };
    auto built = program::buildWithPtx(*spec, ptx::printModule(*module), out, build);
    if (!built) return std::unexpected(built.error());
    executable = built->executable;
    if (o.copyCallees)
      if (auto ok = writeFile(out / "callee_copies.json", copies.dump(2)); !ok)
        return std::unexpected(ok.error());
  }
  if (!transformed->traceMap.empty())
    if (auto ok = writeFile(out / "trace_map.json", transformed->traceMap.dump(2)); !ok)
      return std::unexpected(ok.error());
  return BuiltVariant{.variant = o.variant,
                      .program = spec->name,
                      .executable = executable,
                      .statistics = transformed->statistics};
}

}  // namespace argus::session
