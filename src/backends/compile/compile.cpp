#include "argus/backends/compile.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/passes/transforms.h"
#include "argus/program/region_file.h"
#include "argus/program/triton.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/query/scope.h"
#include "argus/sass/callee_copies.h"
#include "argus/sass/pcmap.h"
#include "argus/support/process.h"
#include "argus/workspace/hash.h"

namespace argus::backends {
namespace {

namespace fs = std::filesystem;
using runtime::Artifact;
using runtime::TaskContext;
using runtime::TaskOutputs;

/// The context shared (read-only) by the three executors.
using SharedContext = std::shared_ptr<const CompileContext>;

std::string configString(const TaskContext& ctx, const char* key) {
  const auto& config = ctx.task.config;
  if (config.is_object() && config.contains(key) && config[key].is_string())
    return config[key].get<std::string>();
  return {};
}

Error taskError(const TaskContext& ctx, std::string_view executor, std::string message) {
  return Error{std::string(executor), fmt::format("task `{}`: {}", ctx.task.id, message)};
}

Result<std::string> inputPtx(TaskContext& ctx, std::string_view executor) {
  auto it = ctx.inputs.find("ptx");
  if (it == ctx.inputs.end())
    return std::unexpected(
        taskError(ctx, executor, "has no input named `ptx`; bind the PTX task's `ptx` output"));
  return it->second.read();
}

bool isSpec(const fs::path& path) {
  return path.extension() == ".yaml" || path.extension() == ".yml";
}

/// Regions the query derives (planner: `derive`, `regions_file`, `regions_key`); the region
/// file must still be what the plan saw.
Result<program::DeriveRequest> plannedDerivation(TaskContext& ctx, std::string_view executor) {
  program::DeriveRequest derive{configString(ctx, "derive"),
                                fs::path(configString(ctx, "regions_file"))};
  if (!derive.file.empty()) {
    auto material = program::deriveMaterial(derive);
    if (!material) return std::unexpected(material.error());
    if (workspace::hashBytes(*material).hex() != configString(ctx, "regions_key"))
      return std::unexpected(taskError(
          ctx, executor,
          fmt::format("the region file {} changed since the query was planned; plan again",
                      derive.file.string())));
  }
  return derive;
}

Result<TaskOutputs> runNvccPtx(const CompileContext& context, TaskContext& ctx) {
  std::string targetText = configString(ctx, "target");
  fs::path target = targetText.empty() ? context.target : fs::path(targetText);
  if (target.empty())
    return std::unexpected(
        taskError(ctx, "nvcc_ptx", "no target: set config.target or CompileContext::target"));
  Result<std::string> text = std::unexpected(Error{});
  auto derive = plannedDerivation(ctx, "nvcc_ptx");
  if (!derive) return std::unexpected(derive.error());
  // The registered spec is already loaded; other targets go through loadTargetPtx.
  if (context.spec && isSpec(target) &&
      fs::weakly_canonical(target) == fs::weakly_canonical(context.spec->file)) {
    text = program::frontEndPtx(*context.spec, {}, *derive);
  } else {
    auto loaded = program::loadTargetPtx(target, context.arch, {}, *derive);
    if (loaded)
      text = std::move(loaded->text);
    else
      text = std::unexpected(loaded.error());
  }
  if (!text) {
    ctx.log += text.error().text() + '\n';
    return std::unexpected(text.error());
  }
  ctx.log += fmt::format("nvcc_ptx: {} bytes of PTX from {}\n", text->size(), target.string());
  TaskOutputs out;
  out.artifacts.emplace("ptx", Artifact::fromData(std::move(*text)));
  return out;
}

Result<TaskOutputs> runPtxPass(TaskContext& ctx) {
  constexpr std::string_view kName = "ptx_pass";
  const auto& config = ctx.task.config;
  if (!config.is_object() || !config.contains("transforms") || !config["transforms"].is_array())
    return std::unexpected(taskError(
        ctx, kName,
        "config.transforms must be a list of transform names (e.g. [\"strip_markers\"])"));
  std::vector<std::string> names;
  for (const auto& n : config["transforms"]) {
    if (!n.is_string())
      return std::unexpected(taskError(ctx, kName, "config.transforms entries must be strings"));
    names.push_back(n.get<std::string>());
  }
  auto text = inputPtx(ctx, kName);
  if (!text) return std::unexpected(text.error());
  const std::string variant = configString(ctx, "variant");
  const std::string fileName = (variant.empty() ? ctx.task.id : variant) + ".ptx";
  auto module = ptx::parseModule(*text, fileName);
  if (!module) return std::unexpected(module.error());
  auto scope = query::parseScope(ctx.task.scope);
  if (!scope) return std::unexpected(scope.error());

  passes::TransformOptions options;
  options.scope = std::move(*scope);
  options.kernel = configString(ctx, "kernel");
  options.config = config;
  auto result = passes::applyTransforms(*module, names, options);
  if (!result) {
    ctx.log += result.error().text() + '\n';
    return std::unexpected(result.error());
  }
  ctx.log += fmt::format("ptx_pass: applied [{}]; statistics {}\n", fmt::join(names, ", "),
                         result->statistics.dump());

  TaskOutputs out;
  out.artifacts.emplace("ptx", Artifact::fromData(ptx::printModule(*module)));
  const bool declared = std::ranges::find(ctx.task.outputs, "trace_map") != ctx.task.outputs.end();
  if (declared || !result->traceMap.empty())
    out.artifacts.emplace("trace_map",
                          Artifact::fromData(runtime::canonicalJson(result->traceMap)));
  // A painted variant publishes its paint map: the PC map of its cubin is read through it.
  if (std::ranges::find(ctx.task.outputs, "paint_map") != ctx.task.outputs.end() ||
      !result->paintMap.empty())
    out.artifacts.emplace("paint_map",
                          Artifact::fromData(runtime::canonicalJson(result->paintMap)));
  // A probe variant publishes insert_forced_wait's description of its probe region, which the
  // probe join needs to find the region in the probe's trace.
  if (std::ranges::find(ctx.task.outputs, "probe") != ctx.task.outputs.end()) {
    if (!result->statistics.contains("probe"))
      return std::unexpected(taskError(ctx, kName,
                                       "declares output `probe`, but no pass described a probe (is "
                                       "insert_forced_wait in config.transforms?)"));
    out.artifacts.emplace("probe",
                          Artifact::fromData(runtime::canonicalJson(result->statistics["probe"])));
  }
  return out;
}

Result<TaskOutputs> runTritonDump(const CompileContext& context, TaskContext& ctx) {
  constexpr std::string_view kName = "triton_dump";
  if (!context.spec || context.spec->language != "triton")
    return std::unexpected(taskError(
        ctx, kName,
        fmt::format("`{}` is not a Triton program spec (language: triton); CUDA programs get "
                    "their PTX from nvcc_ptx",
                    context.target.string())));
  const std::string kernel = configString(ctx, "kernel");
  if (kernel.empty())
    return std::unexpected(taskError(ctx, kName, "config.kernel names no Triton kernel"));
  program::ProgramSpec spec = *context.spec;
  if (ctx.device) spec.run.environment["CUDA_VISIBLE_DEVICES"] = *ctx.device;
  auto dump = program::dumpTritonKernel(spec, kernel, ctx.taskDir);
  if (!dump) {
    ctx.log += dump.error().text() + '\n';
    return std::unexpected(dump.error());
  }
  auto derive = plannedDerivation(ctx, kName);
  if (!derive) return std::unexpected(derive.error());
  if (program::derivesRegions(spec, *derive)) {
    // The regions the query was planned with were derived into a dump like this one.
    auto derived = program::deriveIntoDump(spec, kernel, std::move(dump->ptx), *derive);
    if (!derived) {
      ctx.log += derived.error().text() + '\n';
      return std::unexpected(derived.error());
    }
    dump->ptx = std::move(*derived);
    ctx.log += fmt::format(
        "triton_dump: regions derived into the dumped PTX (spec: `{}` {}; "
        "query: `{}` {})\n",
        spec.derive.list, spec.derive.file.string(), derive->list, derive->file.string());
  }
  if (auto ok = program::checkDumpedRegions(spec, kernel, dump->ptx); !ok) {
    ctx.log += ok.error().text() + '\n';
    return std::unexpected(ok.error());
  }
  ctx.log += fmt::format("triton_dump: kernel {} (override key {}): {} bytes of PTX, {} of TTGIR\n",
                         kernel, dump->sourceHash, dump->ptx.size(), dump->ttgir.size());
  if (!dump->ir.empty())
    ctx.log += fmt::format("triton_dump: compiled from the spec's {} ({} bytes)\n", dump->irStage,
                           dump->ir.size());
  nlohmann::json info{{"kernel", dump->kernel}, {"source_hash", dump->sourceHash}};
  // Variants override the IR too (program::writeTritonVariant).
  if (!dump->ir.empty()) info["ir"] = {{"stage", dump->irStage}, {"text", dump->ir}};
  TaskOutputs out;
  out.artifacts.emplace("triton_dump", Artifact::fromData(runtime::canonicalJson(info)));
  out.artifacts.emplace("ptx", Artifact::fromData(std::move(dump->ptx)));
  out.artifacts.emplace("ttgir", Artifact::fromData(std::move(dump->ttgir)));
  return out;
}

/// The build's cubin edits (config.cubin_edits: "copy_callees" is the one there is): whether to
/// copy callees per call path; an unknown edit is an error.
Result<bool> copiesCallees(TaskContext& ctx) {
  const auto& config = ctx.task.config;
  if (!config.is_object() || !config.contains("cubin_edits")) return false;
  const auto& edits = config["cubin_edits"];
  if (!edits.is_array())
    return std::unexpected(taskError(
        ctx, "build_variant", "config.cubin_edits must be a list (e.g. [\"copy_callees\"])"));
  bool copy = false;
  for (const auto& e : edits) {
    if (!e.is_string() || e.get<std::string>() != "copy_callees")
      return std::unexpected(taskError(
          ctx, "build_variant",
          fmt::format("config.cubin_edits: `{}` is no cubin edit; the one there is: copy_callees",
                      e.dump())));
    copy = true;
  }
  return copy;
}

/// Copies `cubin`'s callees per call path in place and publishes the map as `callee_copies`.
Result<void> copyCallees(const fs::path& cubin, TaskContext& ctx, TaskOutputs& out) {
  // The cubin as ptxas made it: the reference build's, when the PTX is the same.
  auto before = readFile(cubin);
  if (!before) return std::unexpected(before.error());
  auto map = sass::copyCalleesInFile(cubin);
  if (!map) return std::unexpected(map.error());
  (*map)["reference_cubin"]["hash"] = runtime::contentHash(*before);
  for (const auto& [kernel, why] : (*map)["refused"].items())
    ctx.log += fmt::format("build_variant: kernel {}: callees not copied: {}\n", kernel,
                           why.get<std::string>());
  size_t copies = 0;
  for (const auto& [kernel, list] : (*map)["kernels"].items()) copies += list.size();
  ctx.log += fmt::format("build_variant: {} callee copies ({})\n", copies,
                         (*map)["check"].value("method", std::string()));
  out.artifacts.emplace("callee_copies", Artifact::fromData(runtime::canonicalJson(*map)));
  return {};
}

/// A Triton variant: an executable wrapper that runs the script with the variant's PTX in place
/// of the dumped kernel's (the PTX is embedded, so the memoized artifact stands alone).
Result<TaskOutputs> buildTritonVariant(const program::ProgramSpec& spec, const std::string& ptx,
                                       TaskContext& ctx) {
  constexpr std::string_view kName = "build_variant";
  auto in = ctx.inputs.find("triton_dump");
  if (in == ctx.inputs.end())
    return std::unexpected(taskError(ctx, kName,
                                     "a Triton variant needs the `triton_dump` input (the "
                                     "triton_dump task's override key)"));
  auto bytes = in->second.read();
  if (!bytes) return std::unexpected(bytes.error());
  const auto info = nlohmann::json::parse(*bytes, nullptr, false);
  if (!info.is_object() || !info.contains("kernel") || !info.contains("source_hash"))
    return std::unexpected(
        taskError(ctx, kName, "input `triton_dump` is not {kernel, source_hash} JSON"));
  program::TritonKernelDump dump;
  dump.kernel = info["kernel"].get<std::string>();
  dump.sourceHash = info["source_hash"].get<std::string>();
  if (info.contains("ir")) {
    const auto& ir = info["ir"];
    if (!ir.is_object() || !ir.contains("stage") || !ir.contains("text"))
      return std::unexpected(
          taskError(ctx, kName, "input `triton_dump`: `ir` is not {stage, text} JSON"));
    dump.irStage = ir["stage"].get<std::string>();
    dump.ir = ir["text"].get<std::string>();
  }
  // A variant whose collections join per-PC evidence with its cubin's map (a painted one) is
  // assembled here, and the wrapper overrides Triton's cubin with it: the cubin that runs is then
  // the one the map is read from (the collectors check that it is).
  std::optional<fs::path> cubin;
  std::string cubinBase64;
  TaskOutputs out;
  auto copy = copiesCallees(ctx);
  if (!copy) return std::unexpected(copy.error());
  if (std::ranges::find(ctx.task.outputs, "cubin") != ctx.task.outputs.end()) {
    auto module = ptx::parseModule(ptx, dump.kernel + ".ptx");
    if (!module) return std::unexpected(module.error());
    const std::string arch = module->target();
    if (arch.empty())
      return std::unexpected(taskError(ctx, kName, "the Triton PTX has no `.target sm_NN` line"));
    std::error_code ec;
    fs::create_directories(ctx.taskDir, ec);
    auto assembled = sass::assemblePtx(ptx, arch, ctx.taskDir, dump.kernel, true);
    if (!assembled) return std::unexpected(assembled.error());
    if (*copy)
      if (auto ok = copyCallees(*assembled, ctx, out); !ok) return std::unexpected(ok.error());
    auto encoded = runProcess(
        {"base64", "-w", "76", assembled->string()},
        {.workingDirectory = std::nullopt, .timeout = std::chrono::seconds(60), .environment = {}});
    if (!encoded) return std::unexpected(encoded.error());
    if (encoded->exitCode != 0)
      return std::unexpected(taskError(ctx, kName, "base64 failed: " + encoded->err));
    cubin = *assembled;
    cubinBase64 = std::move(encoded->out);
    // The system's ptxas (the one Argus's CUDA builds use), not the one Triton bundles: the
    // cubin measured can differ from what Triton itself would have made of this PTX.
    ctx.log += fmt::format(
        "build_variant: ptxas -arch={} -lineinfo (the system's, not Triton's own) assembled {} "
        "for the cubin override\n",
        arch, assembled->string());
  }
  auto wrapper = program::writeTritonVariant(spec, dump, ptx, ctx.taskDir, cubinBase64);
  if (!wrapper) return std::unexpected(wrapper.error());
  ctx.log += fmt::format("build_variant: Triton override wrapper {} for kernel {} (key {})\n",
                         wrapper->string(), dump.kernel, dump.sourceHash);
  auto executable = Artifact::fromFile(*wrapper);
  if (!executable) return std::unexpected(executable.error());
  out.artifacts.emplace("executable", std::move(*executable));
  if (cubin) {
    auto artifact = Artifact::fromFile(*cubin);
    if (!artifact) return std::unexpected(artifact.error());
    out.artifacts.emplace("cubin", std::move(*artifact));
  }
  return out;
}

Result<TaskOutputs> runBuildVariant(const CompileContext& context, TaskContext& ctx) {
  constexpr std::string_view kName = "build_variant";
  if (!context.spec)
    return std::unexpected(taskError(
        ctx, kName,
        fmt::format("`{}` is not a program spec; building a variant needs an argus.yaml that names "
                    "the host sources and how to link",
                    context.target.string())));
  auto text = inputPtx(ctx, kName);
  if (!text) return std::unexpected(text.error());
  if (context.spec->language == "triton") return buildTritonVariant(*context.spec, *text, ctx);
  program::BuildOptions options = context.build;
  options.cancelled = [&ctx] { return ctx.cancelled() || ctx.expired(); };
  TaskOutputs out;
  auto copy = copiesCallees(ctx);
  if (!copy) return std::unexpected(copy.error());
  if (*copy)
    options.editCubin = [&ctx, &out](const fs::path& cubin) {
      return copyCallees(cubin, ctx, out);
    };
  auto built = program::buildWithPtx(*context.spec, *text, ctx.taskDir, options);
  if (!built) {
    if (auto log = readFile(ctx.taskDir / "build.log")) ctx.log += *log;
    if (ctx.expired()) ctx.timedOut = true;
    return std::unexpected(built.error());
  }
  ctx.log += built->log();
  auto executable = Artifact::fromFile(built->executable);
  if (!executable) return std::unexpected(executable.error());
  auto cubin = Artifact::fromFile(built->cubin);
  if (!cubin) return std::unexpected(cubin.error());
  out.artifacts.emplace("executable", std::move(*executable));
  out.artifacts.emplace("cubin", std::move(*cubin));
  return out;
}

/// The CUDA toolkit nvcc_ptx and build_variant run, for their memo keys: nvcc's path and size
/// (what the host-object cache keys it by), so that a workspace does not hand back PTX or
/// executables another toolkit made. Empty when there is no nvcc (their tasks then fail).
std::string toolkitVersion() {
  auto nvcc = findTool("nvcc");
  if (!nvcc) return {};
  std::error_code ec;
  const auto size = std::filesystem::file_size(*nvcc, ec);
  return nvcc->string() + ":" + std::to_string(ec ? 0 : size);
}

}  // namespace

Result<std::vector<runtime::ExecutorRecord>> compileExecutorRecords(CompileContext context) {
  if (!context.spec && isSpec(context.target)) {
    auto spec = program::loadProgramSpec(context.target);
    if (!spec) return std::unexpected(spec.error());
    context.spec = std::move(*spec);
  }
  auto shared = std::make_shared<const CompileContext>(std::move(context));
  std::vector<runtime::ExecutorRecord> records;
  const std::string toolkit = toolkitVersion();
  records.push_back({"nvcc_ptx", "front-end PTX of the program (nvcc -ptx -lineinfo)",
                     std::make_shared<runtime::FunctionExecutor>(
                         [shared](TaskContext& ctx) { return runNvccPtx(*shared, ctx); }),
                     toolkit});
  records.push_back({"triton_dump",
                     "a Triton program's PTX and TTGIR: runs its script once on a GPU with "
                     "Triton's kernel dump knobs",
                     std::make_shared<runtime::FunctionExecutor>(
                         [shared](TaskContext& ctx) { return runTritonDump(*shared, ctx); })});
  records.push_back({"ptx_pass", "applies config.transforms (Argus PTX passes) to the input PTX",
                     std::make_shared<runtime::FunctionExecutor>(
                         [](TaskContext& ctx) { return runPtxPass(ctx); }),
                     std::string(passes::kPassesVersion)});
  records.push_back({"build_variant",
                     "builds the program with the input PTX substituted before ptxas (Triton: "
                     "a wrapper that substitutes it through Triton's kernel override)",
                     std::make_shared<runtime::FunctionExecutor>(
                         [shared](TaskContext& ctx) { return runBuildVariant(*shared, ctx); }),
                     toolkit});
  return records;
}

Result<void> registerCompileExecutors(runtime::ExecutorRegistry& registry, CompileContext context) {
  auto records = compileExecutorRecords(std::move(context));
  if (!records) return std::unexpected(records.error());
  for (auto& record : *records)
    if (auto added = registry.add(std::move(record)); !added) return added;
  return {};
}

}  // namespace argus::backends
