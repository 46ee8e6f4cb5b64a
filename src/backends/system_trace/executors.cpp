// The `system_trace` Collect executor (argus/backends/system_trace.h).
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "argus/backends/system_trace.h"
#include "argus/collect/run_variant.h"
#include "argus/evidence/system_trace.h"
#include "argus/support/process.h"

namespace argus::backends {
namespace {

namespace fs = std::filesystem;
using collect::materializeExecutable;
using collect::runVariant;
using evidence::parseSystemTrace;

Result<runtime::TaskOutputs> collectSystemTrace(const program::ProgramSpec& spec,
                                                runtime::TaskContext& ctx) {
  auto exeInput = ctx.inputs.find("executable");
  if (exeInput == ctx.inputs.end())
    return fail("system_trace", fmt::format("task `{}` has no `executable` input", ctx.task.id));
  std::error_code ec;
  fs::create_directories(ctx.taskDir, ec);
  auto exe = materializeExecutable(exeInput->second, ctx.taskDir);
  if (!exe) return std::unexpected(exe.error());
  auto library = systemTraceLibrary();
  if (!library) return std::unexpected(library.error());
  const fs::path out = ctx.taskDir / "system_trace.jsonl";
  std::string labels;
  if (ctx.task.config.is_object() && ctx.task.config.contains("labels"))
    for (const auto& [key, value] : ctx.task.config["labels"].items())
      labels += fmt::format("{}{}={}", labels.empty() ? "" : ",", key,
                            value.is_string() ? value.get<std::string>() : value.dump());
  auto ran = runVariant(spec, ctx, *exe,
                        {{"CUDA_INJECTION64_PATH", library->string()},
                         {"ARGUS_SYSTEM_TRACE_OUT", out.string()},
                         {"ARGUS_SYSTEM_TRACE_LABELS", labels}},
                        "system_trace");
  if (!ran) return std::unexpected(ran.error());
  auto text = readFile(out);
  if (!text)
    return fail("system_trace", fmt::format("the program ran but {} wrote no trace ({}); its "
                                            "stderr is in the task log",
                                            library->string(), out.string()));
  if (auto parsed = parseSystemTrace(*text); !parsed) return std::unexpected(parsed.error());
  runtime::TaskOutputs outputs;
  outputs.artifacts["system_trace"] = runtime::Artifact::fromData(std::move(*text));
  // Further processes of the run (one per GPU) wrote system_trace.jsonl.<pid>: kept as
  // evidence of their own, `system_trace.<pid>`; the signals come from the first process.
  for (const auto& e : fs::directory_iterator(ctx.taskDir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string prefix = out.filename().string() + ".";
    if (!name.starts_with(prefix)) continue;
    const std::string suffix = name.substr(prefix.size());
    if (suffix.empty() || suffix.find_first_not_of("0123456789") != std::string::npos) continue;
    auto other = readFile(e.path());
    if (!other) return std::unexpected(other.error());
    if (auto parsed = parseSystemTrace(*other); !parsed)
      return fail("system_trace",
                  fmt::format("process {}'s trace: {}", suffix, parsed.error().message));
    outputs.artifacts["system_trace." + suffix] = runtime::Artifact::fromData(std::move(*other));
  }
  return outputs;
}

}  // namespace

Result<fs::path> systemTraceLibrary() {
  if (const char* env = std::getenv("ARGUS_SYSTEM_TRACE_LIB"); env && *env) {
    if (fs::exists(env)) return fs::path(env);
    return fail("system_trace",
                fmt::format("$ARGUS_SYSTEM_TRACE_LIB names `{}`, which does not exist", env));
  }
  fs::path built = ARGUS_SYSTEM_TRACE_LIB_DEFAULT;
  std::error_code ec;
  if (!built.empty() && fs::exists(built, ec)) return built;
  return fail("system_trace", fmt::format("libargus_system_trace.so (`{}`) is not built; build "
                                          "the `argus_system_trace_inject` target (needs CUPTI "
                                          "headers) or set $ARGUS_SYSTEM_TRACE_LIB",
                                          built.string()));
}

void registerSystemTraceExecutors(runtime::ExecutorRegistry& registry, program::ProgramSpec spec) {
  auto shared = std::make_shared<const program::ProgramSpec>(std::move(spec));
  (void)registry.add(runtime::ExecutorRecord{
      "system_trace",
      "runs the program under libargus_system_trace.so: CUPTI kernels, copies, launches, NVTX",
      std::make_shared<runtime::FunctionExecutor>(
          [shared](runtime::TaskContext& ctx) { return collectSystemTrace(*shared, ctx); })});
}

}  // namespace argus::backends
