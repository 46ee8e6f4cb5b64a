#include "argus/backends/run.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "argus/backends/trace_dir.h"
#include "argus/collect/run_variant.h"
#include "argus/evidence/trace_bundle.h"
#include "argus/sass/pcmap.h"
#include "argus/support/process.h"
#include "argus/trace/format.h"

namespace argus::backends {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using collect::materializeExecutable;
using collect::runVariant;
using collect::userSetting;
using evidence::addKernelTimes;
using evidence::encodeBundle;
using evidence::kernelStreams;
using evidence::TraceBundle;

/// The JSON objects of a file of JSON lines (the injection library's kernels.jsonl, turn.json),
/// in order; lines that are not objects are skipped, a missing file gives none.
std::vector<json> jsonObjectLines(const fs::path& file) {
  std::vector<json> out;
  auto text = readFile(file);
  if (!text) return out;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    json parsed = json::parse(line, nullptr, false);
    if (parsed.is_object()) out.push_back(std::move(parsed));
  }
  return out;
}

/// [[start_ns, end_ns], ...] of every kernel in a kernels.jsonl (CUPTI activity), in order.
json kernelIntervals(const std::vector<json>& kernels) {
  json out = json::array();
  for (const json& k : kernels)
    if (k.contains("start_ns") && k.contains("end_ns")) out.push_back({k["start_ns"], k["end_ns"]});
  return out;
}

// The hardware work queues a one-GPU probe process's context gets (the runs that take GPU
// turns). Creating contexts with the driver's default of 8 dominates a probe's start-up when
// several start at once: on the H200, 8 processes of the TMA GEMM started together under
// libargus_inject.so took 1.58-1.69 s with 8 queues and 0.89 s with one
// (experiments/probe-isolation/startup-experiment.sh, BENCHMARKS.md). A program that runs all its
// GPU work on one stream does the same work either way; with several streams one queue may
// serialize work that overlapped in the reference run, so the probe join flags runs whose kernels
// used several streams (copies on other streams are not seen). Where the program spec's run.env or
// Argus's own environment sets CUDA_DEVICE_MAX_CONNECTIONS, that value stays.
constexpr const char* kWorkQueuesVariable = "CUDA_DEVICE_MAX_CONNECTIONS";
constexpr const char* kProbeWorkQueues = "1";

// Modules load when the context is created (EAGER), in a process's set-up, rather than at their
// first launch: their upload is then set-up work, out of the turn in which the measured launch
// runs. Where Argus's own environment (or the spec's run.env) sets CUDA_MODULE_LOADING, that
// value stays: with LAZY the kernel's code is uploaded inside the turn, right before its launch
// (experiments/probe-isolation/probe-disturb-experiment.sh's +lazy compares the two). The run
// record says which was in effect (module_loading).
constexpr const char* kModuleLoadingVariable = "CUDA_MODULE_LOADING";

/// A run under the injection library that writes into `traceDir` (made empty here): the
/// library and the folder, and CUDA_MODULE_LOADING=EAGER unless the spec or Argus's own
/// environment sets it (`moduleLoading`: that setting).
struct InjectionRun {
  fs::path library;
  std::vector<std::pair<std::string, std::string>> environment;
  std::optional<std::string> moduleLoading;
};
Result<InjectionRun> injectionRun(const program::ProgramSpec& spec, const fs::path& traceDir) {
  auto library = injectionLibrary();
  if (!library) return std::unexpected(library.error());
  std::error_code ec;
  fs::remove_all(traceDir, ec);
  fs::create_directories(traceDir, ec);
  InjectionRun run;
  run.library = *library;
  run.environment = {{"CUDA_INJECTION64_PATH", library->string()},
                     {"ARGUS_TRACE_DIR", traceDir.string()}};
  run.moduleLoading = userSetting(spec, kModuleLoadingVariable);
  if (!run.moduleLoading) run.environment.emplace_back(kModuleLoadingVariable, "EAGER");
  return run;
}

/// One run of the traced variant `exe` under the injection library, its launches read back
/// from `traceDir` with their kernel times; `capacity`: ARGUS_TRACE_CAPACITY for this run.
Result<TraceBundle> runTraced(const program::ProgramSpec& spec, runtime::TaskContext& ctx,
                              const fs::path& exe, const fs::path& traceDir,
                              std::optional<std::uint32_t> capacity) {
  TraceBundle bundle;
  auto injection = injectionRun(spec, traceDir);
  if (!injection) return std::unexpected(injection.error());
  auto& environment = injection->environment;
  if (capacity) environment.emplace_back("ARGUS_TRACE_CAPACITY", std::to_string(*capacity));
  const auto& moduleLoading = injection->moduleLoading;
  const bool turns = ctx.task.isolation.gpuTurns && ctx.device.has_value();
  if (turns) environment.emplace_back("ARGUS_GPU_TURN", gpuTurnFile(*ctx.device).string());
  const bool oneWorkQueue =
      ctx.task.isolation.gpuTurns && !userSetting(spec, kWorkQueuesVariable).has_value();
  if (oneWorkQueue) environment.emplace_back(kWorkQueuesVariable, kProbeWorkQueues);
  const auto epochNs = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const auto started = epochNs();
  auto ran = runVariant(spec, ctx, exe, std::move(environment), "region_trace");
  const auto ended = epochNs();
  if (!ran) return std::unexpected(ran.error());
  const auto& argv = ran->argv;
  const auto& result = ran->result;

  std::string errors;
  if (auto text = readFile(traceDir / "errors.txt")) errors = *text;
  bundle.run = {{"exit_code", result.exitCode},
                {"device", ctx.device.value_or("")},
                {"command", argv},
                {"stdout_tail", collect::outputTail(result.out, 20)},
                {"stderr_tail", collect::outputTail(result.err, 20)},
                {"injection_errors", errors},
                {"process_ns", {started, ended}}};
  // What the program ran with: Argus's EAGER, its own environment's value, or the spec's; and,
  // taking the device's turn, what each holder did to the L2 first (libargus_inject.so's default
  // `empty` unless set).
  bundle.run["module_loading"] = moduleLoading.value_or("EAGER");
  if (turns) {
    const auto l2 = userSetting(spec, "ARGUS_GPU_TURN_L2");
    bundle.run["gpu_turn_l2"] = l2 && !l2->empty() ? *l2 : "empty";
  }
  // The process's kernels on the GPU's clock (CUPTI), and its wait for the device's turn: the
  // probe join checks with them that processes sharing a device never overlapped.
  const std::vector<json> kernels = jsonObjectLines(traceDir / "kernels.jsonl");
  if (auto intervals = kernelIntervals(kernels); !intervals.empty())
    bundle.run["kernel_intervals"] = std::move(intervals);
  // With one work queue, whether the program's kernels used more than one stream (the join says
  // so beside the probe's latency).
  if (oneWorkQueue) {
    bundle.run["work_queues"] = 1;
    if (const auto streams = kernelStreams(kernels)) bundle.run["kernel_streams"] = *streams;
  }
  // One line per time the process took the turn; the first holds the wait before its GPU work.
  if (const auto taken = jsonObjectLines(traceDir / "turn.json"); !taken.empty()) {
    bundle.run["gpu_turn"] = taken.front();
    bundle.run["gpu_turn"]["turns"] = taken.size();
  }
  // When it asked for and took each hold, on CUPTI's clock and the system clock: where its
  // phases fell beside other processes' kernels.
  if (auto timeline = jsonObjectLines(traceDir / "turn_timeline.jsonl"); !timeline.empty())
    bundle.run["turn_timeline"] = std::move(timeline);
  if (!fs::exists(traceDir / "launches.jsonl"))
    return fail("region_trace", fmt::format("the injection library wrote no launch index in {} "
                                            "(is {} loadable? errors: {})",
                                            traceDir.string(), injection->library.string(),
                                            errors.empty() ? "none" : errors));
  auto launches = readTraceDir(traceDir);
  if (!launches) return std::unexpected(launches.error());
  bundle.launches = std::move(*launches);
  // Each traced launch's own kernel time (CUPTI, in this run): what the trace cost the kernel,
  // against kernel_duration's untraced one.
  addKernelTimes(bundle.launches, kernels);
  return bundle;
}

Result<runtime::TaskOutputs> collectRegionTrace(const program::ProgramSpec& spec,
                                                runtime::TaskContext& ctx) {
  auto exeInput = ctx.inputs.find("executable");
  if (exeInput == ctx.inputs.end())
    return fail("region_trace", fmt::format("task `{}` has no `executable` input", ctx.task.id));
  std::error_code ec;
  fs::create_directories(ctx.taskDir, ec);
  auto exe = materializeExecutable(exeInput->second, ctx.taskDir);
  if (!exe) return std::unexpected(exe.error());
  json traceMap;
  if (auto map = ctx.inputs.find("trace_map"); map != ctx.inputs.end()) {
    auto text = map->second.read();
    if (!text) return std::unexpected(text.error());
    traceMap = json::parse(*text, nullptr, false);
    if (traceMap.is_discarded())
      return fail("region_trace", "the variant's trace map is not valid JSON");
  }
  // Run once; when the warps' slots overflowed (and the spec does not set the capacity), once
  // more with slots that hold every record (overflowCapacity), from a trace folder of its own.
  const bool capacityFixed = userSetting(spec, "ARGUS_TRACE_CAPACITY").has_value();
  const std::uint32_t capacity = trace::kDefaultTraceCapacity;
  auto bundle = runTraced(spec, ctx, *exe, ctx.taskDir / "trace", std::nullopt);
  if (!bundle) return std::unexpected(bundle.error());
  if (!capacityFixed)
    if (const auto larger =
            evidence::overflowCapacity(bundle->launches, capacity, trace::kTraceWindowBytes)) {
      std::uint64_t dropped = 0;
      for (const auto& l : bundle->launches) dropped += l.info.value("dropped", std::uint64_t{0});
      ctx.log += fmt::format(
          "region_trace: the warps' trace slots overflowed ({} records dropped at "
          "ARGUS_TRACE_CAPACITY={}): running again with {}\n",
          dropped, capacity, *larger);
      bundle = runTraced(spec, ctx, *exe, ctx.taskDir / "trace-rerun", *larger);
      if (!bundle) return std::unexpected(bundle.error());
      bundle->run["slot_overflow_rerun"] = {
          {"first_capacity", capacity}, {"first_dropped", dropped}, {"capacity", *larger}};
    }
  bundle->traceMap = std::move(traceMap);
  size_t traced = 0;
  for (const auto& l : bundle->launches) traced += !l.buffer.empty();
  if (traced == 0)
    return fail("region_trace", fmt::format("the program ran, but no launch of a traced kernel "
                                            "was seen ({} launches in all); is the kernel in the "
                                            "variant the program runs?",
                                            bundle->launches.size()));
  runtime::TaskOutputs outputs;
  outputs.artifacts["region_trace"] = runtime::Artifact::fromData(encodeBundle(*bundle));
  return outputs;
}

/// kernel_duration's collection: the reference build (markers painted away, no trace buffer) run
/// under the injection library, which writes CUPTI's kernel records; the evidence is those
/// records, with the kernel asked about (config `kernel`) and how the run went.
Result<runtime::TaskOutputs> collectKernelActivity(const program::ProgramSpec& spec,
                                                   runtime::TaskContext& ctx) {
  auto exeInput = ctx.inputs.find("executable");
  if (exeInput == ctx.inputs.end())
    return fail("cupti_activity", fmt::format("task `{}` has no `executable` input", ctx.task.id));
  const std::string kernel = ctx.task.config.value("kernel", std::string());
  std::error_code ec;
  fs::create_directories(ctx.taskDir, ec);
  auto exe = materializeExecutable(exeInput->second, ctx.taskDir);
  if (!exe) return std::unexpected(exe.error());
  // The reference build is the painted one: its SASS must be the unpainted program's, or the
  // durations are another program's. Checked first: no GPU run for a build that fails it.
  json sassCheck = {{"painted_equals_unpainted", nullptr},
                    {"detail", "not checked: the task has no unpainted and painted PTX inputs"}};
  if (ctx.inputs.contains("unpainted_ptx") && ctx.inputs.contains("ptx")) {
    auto unpainted = ctx.readInput("unpainted_ptx", "cupti_activity");
    auto painted = ctx.readInput("ptx", "cupti_activity");
    if (!unpainted) return std::unexpected(unpainted.error());
    if (!painted) return std::unexpected(painted.error());
    auto check =
        sass::paintedSassCheck(*unpainted, *painted, spec.arch, ctx.taskDir / "sass_check");
    if (!check) return std::unexpected(check.error());
    if (!check->value("painted_equals_unpainted", false))
      return fail("cupti_activity",
                  fmt::format("the reference build's SASS is not the unpainted program's ({}); "
                              "its kernel durations would be another program's",
                              check->value("detail", std::string())));
    sassCheck = std::move(*check);
  }
  const fs::path traceDir = ctx.taskDir / "trace";
  auto injection = injectionRun(spec, traceDir);
  if (!injection) return std::unexpected(injection.error());
  const auto& moduleLoading = injection->moduleLoading;
  auto ran = runVariant(spec, ctx, *exe, std::move(injection->environment), "cupti_activity");
  if (!ran) return std::unexpected(ran.error());
  std::string errors;
  if (auto text = readFile(traceDir / "errors.txt")) errors = *text;
  json kernels = json::array();
  std::set<std::string> others;
  size_t matching = 0;
  for (json& k : jsonObjectLines(traceDir / "kernels.jsonl")) {
    const std::string name = k.value("kernel", std::string());
    if (kernel.empty() || program::sameKernelName(name, kernel)) {
      ++matching;
    } else {
      others.insert(program::demangle(name));
    }
    kernels.push_back(std::move(k));
  }
  if (matching == 0) {
    std::string seen;
    for (const auto& name : others) seen += (seen.empty() ? "" : ", ") + name;
    return fail("cupti_activity",
                fmt::format("the program ran, but CUPTI saw no launch of kernel `{}` ({}); is it "
                            "the kernel the program launches? injection errors: {}",
                            program::demangle(kernel),
                            seen.empty() ? "no kernels at all" : "kernels seen: " + seen,
                            errors.empty() ? "none" : errors));
  }
  const json evidence = {{"kernel", kernel},
                         {"sass_check", sassCheck},
                         {"kernels", std::move(kernels)},
                         {"run",
                          {{"exit_code", ran->result.exitCode},
                           {"device", ctx.device.value_or("")},
                           {"command", ran->argv},
                           {"module_loading", moduleLoading.value_or("EAGER")},
                           {"stderr_tail", collect::outputTail(ran->result.err, 20)},
                           {"injection_errors", errors}}}};
  runtime::TaskOutputs outputs;
  outputs.artifacts["kernel_activity"] = runtime::Artifact::fromData(evidence.dump());
  return outputs;
}

}  // namespace

fs::path gpuTurnFile(const std::string& device) {
  std::error_code ec;
  fs::path dir = fs::temp_directory_path(ec);
  if (ec) dir = "/tmp";
  std::string name = device;  // an index, a UUID or a MIG id ("MIG-GPU-.../1/0")
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
  return dir / fmt::format("argus-gpu{}.turn", name);
}

Result<fs::path> injectionLibrary() {
  if (const char* env = std::getenv("ARGUS_INJECT_LIB"); env && *env) {
    if (fs::exists(env)) return fs::path(env);
    return fail("region_trace",
                fmt::format("$ARGUS_INJECT_LIB names `{}`, which does not exist", env));
  }
  fs::path built = ARGUS_INJECT_LIB_DEFAULT;
  std::error_code ec;
  if (fs::exists(built, ec)) return built;
  return fail("region_trace", fmt::format("the injection library `{}` is not built; build the "
                                          "`argus_inject` target or set $ARGUS_INJECT_LIB",
                                          built.string()));
}

void registerRunExecutors(runtime::ExecutorRegistry& registry, program::ProgramSpec spec) {
  auto shared = std::make_shared<program::ProgramSpec>(std::move(spec));
  (void)registry.add(runtime::ExecutorRecord{
      "region_trace",
      "runs a traced variant under the injection library and bundles the trace buffers",
      std::make_shared<runtime::FunctionExecutor>(
          [shared](runtime::TaskContext& ctx) { return collectRegionTrace(*shared, ctx); })});
  (void)registry.add(runtime::ExecutorRecord{
      "cupti_activity",
      "runs the reference build under the injection library and keeps CUPTI's kernel records",
      std::make_shared<runtime::FunctionExecutor>(
          [shared](runtime::TaskContext& ctx) { return collectKernelActivity(*shared, ctx); })});
}

}  // namespace argus::backends
