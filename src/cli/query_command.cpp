// `argus query`: plan, build, run, synthesize and report a region query.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/backends/compile.h"
#include "argus/backends/ncu.h"
#include "argus/backends/pc_collect.h"
#include "argus/backends/ptx_analysis.h"
#include "argus/backends/run.h"
#include "argus/backends/system_trace.h"
#include "argus/evidence/system_trace.h"
#include "argus/passes/transforms.h"
#include "argus/program/build.h"
#include "argus/program/program.h"
#include "argus/runtime/observer.h"
#include "argus/runtime/scheduler.h"
#include "argus/runtime/workspace_store.h"
#include "argus/support/process.h"
#include "argus/synthesis/attribution_executor.h"
#include "argus/synthesis/comm_signals.h"
#include "argus/synthesis/kernel_timing.h"
#include "argus/synthesis/probe_join_executor.h"
#include "argus/synthesis/region_timing.h"
#include "argus/workspace/workspace.h"
#include "commands.h"
#include "pc_report.h"

namespace argus::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

/// Probe processes started at once per GPU unless --concurrent-probes says otherwise: 8, or the
/// host's CPU threads if fewer (each process compiles nothing but starts a CUDA context, and the
/// start-ups are what overlap); 8 when the count is unknown. At eight at once the examples'
/// latencies (Triton's: four at once) stayed within 16-32 ns of one at a time, one or two of the
/// steps they come in (BENCHMARKS.md, issue 7).
std::size_t defaultConcurrentProbes() {
  const unsigned cores = std::thread::hardware_concurrency();  // 0: unknown
  return cores == 0 ? 8 : std::min<std::size_t>(cores, 8);
}

struct QueryCommandOptions {
  QueryOptions query;
  bool json = false;
  bool requireGpu = false;
  std::string traceOut;
  std::string chromeTraceOut;
  std::size_t concurrentProbes = defaultConcurrentProbes();
};

/// GPUs this machine has, as CUDA_VISIBLE_DEVICES ids ("0", "1", ...): $ARGUS_DEVICES if set
/// (comma-separated), else what `nvidia-smi -L` lists.
std::vector<std::string> detectDevices() {
  std::vector<std::string> devices;
  if (const char* env = std::getenv("ARGUS_DEVICES"); env != nullptr) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      std::string id = list.substr(start, comma == std::string::npos ? comma : comma - start);
      if (!id.empty()) devices.push_back(id);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return devices;
  }
  auto smi = runProcess(
      {"nvidia-smi", "-L"},
      {.workingDirectory = std::nullopt, .timeout = std::chrono::seconds(20), .environment = {}});
  if (!smi || smi->exitCode != 0) return devices;
  size_t n = 0;
  for (size_t at = smi->out.find("GPU "); at != std::string::npos;
       at = smi->out.find("GPU ", at + 4))
    devices.push_back(std::to_string(n++));
  return devices;
}

/// Whether `task` reads `up` only through inputs it lists in config.optional_inputs (discovery
/// without the reference run), so that it can run without it.
bool optionalUpstream(const runtime::TaskDescriptor& task, const std::string& up) {
  const auto optional = task.config.value("optional_inputs", nlohmann::json::array());
  if (std::find(task.dependencies.begin(), task.dependencies.end(), up) != task.dependencies.end())
    return false;
  return std::all_of(task.inputs.begin(), task.inputs.end(), [&](const runtime::InputBinding& b) {
    return b.task != up || std::find(optional.begin(), optional.end(), b.name) != optional.end();
  });
}

/// Removes the tasks in `reasons` and every task downstream of them from the plan; dependents
/// get a reason naming the upstream task they needed. A task that needs a removed task only for
/// optional inputs stays, without those inputs.
runtime::Plan without(const runtime::Plan& plan, std::map<std::string, std::string>& reasons) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (const auto& t : plan.tasks()) {
      if (reasons.contains(t.id)) continue;
      for (const auto& up : t.upstream())
        if (reasons.contains(up) && !optionalUpstream(t, up)) {
          reasons[t.id] = fmt::format("needs `{}`", up);
          changed = true;
          break;
        }
    }
  }
  runtime::Plan kept;
  for (auto t : plan.tasks()) {
    if (reasons.contains(t.id)) continue;
    std::erase_if(t.inputs,
                  [&](const runtime::InputBinding& b) { return reasons.contains(b.task); });
    (void)kept.add(std::move(t));
  }
  return kept;
}

/// The first reason in the chain of `needs` that explains why `task` was not run.
std::string rootReason(const std::map<std::string, std::string>& reasons, std::string task) {
  std::vector<std::string> via;
  for (int hops = 0; hops < 64; ++hops) {
    auto it = reasons.find(task);
    if (it == reasons.end()) break;
    if (!it->second.starts_with("needs `")) {
      if (via.empty()) return it->second;
      return fmt::format("{}: {}", fmt::join(via, " <- "), it->second);
    }
    task = it->second.substr(7, it->second.size() - 8);
    via.insert(via.begin(), task);
  }
  return "not run";
}

std::string formatNs(double ns) {
  if (ns >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.2f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

/// The workspace version of the program (spec and sources), made once per content: a root
/// version whose options record the same content hash is reused (one made from the same
/// directory first).
Result<workspace::VersionId> programVersion(workspace::Workspace& ws,
                                            const program::ProgramSpec& spec,
                                            const std::string& contentHash) {
  // The spec's directory too: a checkout of the version (or a fork of it) resolves the paths
  // its spec gives relative to it, e.g. include_dirs (program::checkoutVersion).
  const std::string directory = fs::absolute(spec.file).parent_path().string();
  const std::string options =
      nlohmann::json{{"content", contentHash}, {"directory", directory}}.dump();
  auto versions = ws.versions();
  if (!versions) return std::unexpected(versions.error());
  std::optional<workspace::VersionId> sameContent;
  for (const auto& v : *versions) {
    if (v.kind != workspace::VersionKind::program || v.base) continue;
    const auto recorded = nlohmann::json::parse(v.optionsJson, nullptr, false);
    if (!recorded.is_object() || recorded.value("content", "") != contentHash) continue;
    if (recorded.value("directory", "") == directory) return v.id;
    if (!sameContent) sameContent = v.id;
  }
  if (sameContent) return *sameContent;
  workspace::NewVersion version;
  version.kind = workspace::VersionKind::program;
  version.label = spec.name;
  version.optionsJson = options;
  std::vector<std::pair<fs::path, std::string>> files{{spec.file, "program_spec"}};
  for (const auto& f : spec.sources) {
    const std::string ext = f.extension().string();
    files.emplace_back(f, ext == ".py"                        ? "python_source"
                          : ext == ".ttgir" || ext == ".ttir" ? ext.substr(1)
                                                              : "cuda_source");
  }
  for (const auto& f : spec.hostSources) files.emplace_back(f, "host_source");
  for (const auto& [path, kind] : files) {
    auto bytes = readFile(path);
    if (!bytes) return std::unexpected(bytes.error());
    version.files.push_back({path.filename().string(), kind, std::move(*bytes)});
  }
  return ws.addVersion(version);
}

/// Records every variant this run built as a version derived from the program's version.
void recordBuiltVariants(workspace::Workspace& ws, workspace::VersionId base,
                         const runtime::RunReport& report, runtime::ResultStore& store,
                         json& variants) {
  for (const auto& t : report.tasks) {
    if (!t.executed || t.outcome.state != runtime::TaskState::Succeeded ||
        t.id.rfind("build/", 0) != 0)
      continue;
    const std::string key = t.id.substr(6);
    const auto* variantTask = report.find("variant/" + key);
    if (variantTask == nullptr) continue;
    auto built = store.lookup(t.memoKey);
    auto variant = store.lookup(variantTask->memoKey);
    if (!built || !variant || !variant->artifacts.contains("ptx")) continue;
    program::VariantFiles files;
    if (auto ptx = variant->artifacts.at("ptx").read()) files.ptx = *ptx;
    if (auto it = variant->artifacts.find("trace_map"); it != variant->artifacts.end())
      if (auto map = it->second.read()) files.traceMap = *map;
    if (auto it = built->artifacts.find("cubin"); it != built->artifacts.end())
      if (auto cubin = it->second.read()) files.cubin = *cubin;
    if (const auto* d = report.plan.find(variantTask->id)) files.optionsJson = d->config.dump();
    auto id = program::recordVariant(ws, base, key, files);
    if (id) variants.push_back({{"variant", key}, {"version", id->text()}});
  }
}

int runQuery(const QueryCommandOptions& o) {
  auto prepared = prepareQuery(o.query);
  if (!prepared) return reportError(prepared.error());
  const auto& q = prepared->query;
  if (fs::path(q.program).extension() != ".yaml" && fs::path(q.program).extension() != ".yml")
    return reportError(Error{"query", fmt::format("`{}`: argus query builds and runs the "
                                                  "program, so it needs a program spec "
                                                  "(argus.yaml; see examples/*/argus.yaml)",
                                                  q.program)});
  auto spec = program::loadProgramSpec(q.program);
  if (!spec) return reportError(spec.error());
  const fs::path wsDir = q.workspace.empty() ? workspace::Workspace::defaultDirectory(spec->file)
                                             : fs::path(q.workspace);
  auto ws = workspace::Workspace::open(wsDir);
  if (!ws) return reportError(ws.error());

  runtime::ExecutorRegistry registry;
  backends::CompileContext compile;
  compile.target = spec->file;
  compile.spec = *spec;
  if (auto ok = backends::registerCompileExecutors(registry, compile); !ok)
    return reportError(ok.error());
  backends::registerRunExecutors(registry, *spec);
  synthesis::registerSynthesisExecutors(registry);
  synthesis::registerKernelTimingExecutor(registry);
  backends::registerCuptiPcExecutors(registry, *spec);
  backends::registerNcuExecutor(registry, *spec);
  synthesis::registerAttributionExecutors(registry);
  backends::registerSystemTraceExecutors(registry, *spec);
  synthesis::registerCommSignalsExecutor(registry);

  // What this build and machine cannot do is taken out of the plan and said plainly.
  const auto devices = detectDevices();
  // op_latency: discovery adds probe branches (only their builds where no GPU is) and the join.
  if (auto ok = backends::registerPtxAnalysisExecutor(registry, !devices.empty()); !ok)
    return reportError(ok.error());
  if (auto ok = synthesis::registerProbeJoinExecutor(registry); !ok) return reportError(ok.error());
  const auto available = passes::availableTransforms();
  std::map<std::string, std::string> reasons;
  std::set<std::string> noGpu;
  for (const auto& t : prepared->plan.plan.tasks()) {
    if (registry.find(t.executor) == nullptr) {
      reasons[t.id] = fmt::format("executor `{}` is not part of this build yet", t.executor);
      continue;
    }
    if (t.executor == "ptx_pass" && t.config.contains("transforms")) {
      for (const auto& name : t.config["transforms"]) {
        if (std::find(available.begin(), available.end(), name.get<std::string>()) ==
            available.end()) {
          reasons[t.id] =
              fmt::format("transform `{}` is not part of this build yet", name.get<std::string>());
          break;
        }
      }
      if (reasons.contains(t.id)) continue;
    }
    if (t.needs(runtime::Requirement::Gpu) && devices.empty()) {
      noGpu.insert(t.id);
      reasons[t.id] = t.executor == "triton_dump"
                          ? fmt::format(
                                "needs a GPU: Triton compiles the kernel when `{}` launches it, so "
                                "its PTX comes from running the script on a GPU, and this machine "
                                "has none (nvidia-smi lists none)",
                                spec->script.filename().string())
                          : "needs a GPU, and this machine has none (nvidia-smi lists none)";
    }
  }
  // A GPU task downstream of another task that cannot run (a Triton dump) points at it, so the
  // chain of reasons ends at the root cause.
  std::map<std::string, bool> blocked;
  auto isBlocked = [&](auto& self, const std::string& id) -> bool {
    if (auto it = blocked.find(id); it != blocked.end()) return it->second;
    blocked[id] = false;
    const auto* task = prepared->plan.plan.find(id);
    bool result = reasons.contains(id);
    if (task != nullptr)
      for (const auto& up : task->upstream()) result = result || self(self, up);
    return blocked[id] = result;
  };
  for (const auto& id : noGpu) {
    const auto* task = prepared->plan.plan.find(id);
    for (const auto& up : task->upstream())
      if (isBlocked(isBlocked, up)) {
        reasons[id] = fmt::format("needs `{}`", up);
        break;
      }
  }
  runtime::Plan plan = without(prepared->plan.plan, reasons);
  json notCollected = json::array();
  for (const auto& t : prepared->plan.plan.tasks())
    if (reasons.contains(t.id))
      notCollected.push_back({{"task", t.id}, {"reason", rootReason(reasons, t.id)}});

  auto baseVersion = prepared->version ? Result<workspace::VersionId>(*prepared->version)
                                       : programVersion(*ws, *spec, prepared->plan.programVersion);
  if (!baseVersion) return reportError(baseVersion.error());

  runtime::installInterruptHandler();
  runtime::WorkspaceResultStore store(*ws);
  runtime::ProgressObserver progress;
  runtime::RunOptions options;
  options.devices = devices;
  options.maxTasksPerDevice = 1;
  options.maxTurnTasksPerDevice = o.concurrentProbes;
  options.cancelFlag = runtime::interruptFlag();
  // Task directories live in a fresh temporary root that the run removes: every output is
  // published into the workspace's blobs, so the build directories (an executable each) would
  // only be garbage there (measured: ~1 MiB per probe variant of tma_gemm).
  options.workRoot.clear();
  options.keepTaskDirs = false;
  if (!o.json) options.observers.push_back(&progress);
  runtime::Scheduler scheduler(registry, store, options);
  auto report = scheduler.run(plan);
  if (!report) return reportError(report.error());

  json variants = json::array();
  recordBuiltVariants(*ws, *baseVersion, *report, store, variants);

  // Assemble the answer.
  json signals = json::object();
  json failures = json::array();
  for (const auto* f : report->failures())
    failures.push_back({{"task", f->id}, {"error", f->outcome.error}, {"log_tail", f->log}});
  for (const auto& [signal, taskId] : prepared->plan.answers) {
    const auto* task = report->find(taskId);
    json entry{{"task", taskId}};
    const planner::Recipe* recipe = prepared->catalog.producing(signal);
    if (recipe != nullptr) {
      entry["qualification"] = planner::qualificationName(recipe->qualification);
      for (const auto& s : recipe->signals)
        if (s.name == signal) entry["unit"] = s.unit;
    }
    entry["scope"] = q.scope.all() ? "all" : q.scope.canonical();
    if (task == nullptr) {
      entry["status"] = "not collected";
      entry["reason"] = rootReason(reasons, taskId);
    } else {
      entry["status"] = std::string(runtime::toString(task->outcome.state));
      if (task->outcome.state == runtime::TaskState::Succeeded ||
          task->outcome.state == runtime::TaskState::Memoized) {
        if (auto outputs = store.lookup(task->memoKey)) {
          if (auto it = outputs->artifacts.find(signal); it != outputs->artifacts.end()) {
            if (auto bytes = it->second.read())
              entry["value"] = json::parse(*bytes, nullptr, false);
            entry["provenance"] = {{"memo_key", task->memoKey}};
          }
        }
        auto key = workspace::ContentHash::fromHex(task->memoKey);
        if (key)
          if (auto record = ws->findSucceededTask(*key); record && *record) {
            json artifacts = json::array();
            for (const auto& a : (*record)->outputs) artifacts.push_back(a.id.text());
            entry["provenance"] = {{"task", (*record)->id.text()},
                                   {"artifacts", artifacts},
                                   {"workspace", wsDir.string()}};
          }
      } else if (!task->outcome.error.empty()) {
        entry["error"] = task->outcome.error;
      }
    }
    signals[signal] = entry;
  }
  // With both the traced run's kernel times and the untraced reference build's, what tracing
  // cost the kernel: derived from two runs' CUPTI medians.
  json traceCost;
  if (signals.contains("duration") && signals.contains("kernel_duration")) {
    const json traced =
        signals["duration"].value("value", json::object()).value("traced_kernel", json::object());
    const json untraced = signals["kernel_duration"].value("value", json::object());
    if (traced.contains("median") && untraced.contains("median") &&
        untraced["median"].get<double>() > 0) {
      const double t = traced["median"].get<double>();
      const double u = untraced["median"].get<double>();
      traceCost = {{"unit", "ns"},
                   {"qualification", "derived"},
                   {"traced_median", t},
                   {"untraced_median", u},
                   {"added", t - u},
                   {"relative", (t - u) / u},
                   {"from",
                    "the traced launches' CUPTI median (duration's traced_kernel) less "
                    "the untraced reference build's (kernel_duration), two runs"}};
    }
  }
  json result{{"schema", "argus.report/1"},
              {"query", query::toJson(q)},
              {"program_version", prepared->plan.programVersion},
              {"workspace_version", baseVersion->text()},
              {"new_variant_versions", variants},
              {"kernel", prepared->plan.kernel},
              {"region", prepared->plan.regionPath},
              {"region_id", prepared->plan.regionId},
              {"signals", signals},
              {"trace_cost", traceCost},
              {"not_collected", notCollected},
              {"failures", failures},
              {"run",
               {{"tasks", report->tasks.size()},
                {"executed", std::count_if(report->tasks.begin(), report->tasks.end(),
                                           [](const auto& t) { return t.executed; })},
                {"devices", devices}}}};

  if (!o.chromeTraceOut.empty()) {
    // One timeline for the query: region traces and system traces (every process of the run).
    nlohmann::json events = nlohmann::json::array();
    for (const auto& t : report->tasks) {
      if (t.id.rfind("collect/", 0) != 0) continue;
      auto outputs = store.lookup(t.memoKey);
      if (!outputs) continue;
      if (outputs->artifacts.contains("region_trace"))
        if (auto bytes = outputs->artifacts.at("region_trace").read())
          if (auto timeline = synthesis::bundleTimeline(*bytes))
            for (auto& e : (*timeline)["traceEvents"]) events.push_back(std::move(e));
      std::vector<evidence::SystemTrace> processes;
      for (const auto& [name, artifact] : outputs->artifacts) {
        if (name != "system_trace" && !name.starts_with("system_trace.")) continue;
        auto bytes = artifact.read();
        if (!bytes) continue;
        auto trace = evidence::parseSystemTrace(*bytes);
        if (!trace) continue;
        // The first process's trace first: it keeps the plain track names.
        if (name == "system_trace")
          processes.insert(processes.begin(), std::move(*trace));
        else
          processes.push_back(std::move(*trace));
      }
      if (!processes.empty())
        for (auto& e : evidence::systemTraceChrome(processes)["traceEvents"])
          events.push_back(std::move(e));
    }
    if (!events.empty())
      (void)writeFile(o.chromeTraceOut,
                      nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump());
  }

  std::string discoveryText;  // op_latency discovery: the probes it added and what it left out
  for (const auto& t : report->tasks) {
    if (report->plan.find(t.id) == nullptr || report->plan.find(t.id)->executor != "ptx_analysis")
      continue;
    auto outputs = store.lookup(t.memoKey);
    if (!outputs || !outputs->artifacts.contains("op_sites")) continue;
    if (auto bytes = outputs->artifacts.at("op_sites").read()) {
      auto sites = nlohmann::json::parse(*bytes, nullptr, false);
      result["discovery"][t.id] = json::parse(*bytes, nullptr, false);
      discoveryText += fmt::format("\n{}:\n{}", t.id, synthesis::opSitesText(sites));
    }
  }

  if (o.json) {
    std::cout << result.dump(2) << "\n";
  } else {
    fmt::print("\nargus query: kernel {}  region {}{}  scope {}\n",
               program::demangle(result["kernel"]),
               prepared->plan.regionPath.empty() ? "(whole kernel)" : prepared->plan.regionPath,
               prepared->plan.regionId.empty() ? "" : " [" + prepared->plan.regionId + "]",
               q.scope.all() ? "all" : q.scope.canonical());
    for (const auto& [signal, entry] : signals.items()) {
      fmt::print("\n{} ({}, {}): {}\n", signal, entry.value("unit", "?"),
                 entry.value("qualification", "?"), entry.value("status", "?"));
      if (entry.contains("error")) fmt::print("  error: {}\n", entry["error"].get<std::string>());
      if (entry.contains("reason")) fmt::print("  why: {}\n", entry["reason"].get<std::string>());
      if (!entry.contains("value")) continue;
      const json& value = entry["value"];
      if (signal == "duration" && value.contains("regions")) {
        fmt::print("  {:<32} {:>8} {:>12} {:>12} {:>12} {:>12}\n", "region", "count", "mean",
                   "median", "p95", "total");
        for (const auto& r : value["regions"]) {
          const json& d = r["duration"];
          std::string path = r.value("path", "");
          size_t depth = static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
          fmt::print("  {:<32} {:>8} {:>12} {:>12} {:>12} {:>12}\n",
                     std::string(2 * depth, ' ') + path.substr(path.rfind('/') + 1),
                     d.value("count", 0), formatNs(d.value("mean", 0.0)),
                     formatNs(d.value("median", 0.0)), formatNs(d.value("p95", 0.0)),
                     formatNs(d.value("total", 0.0)));
        }
        fmt::print("  launches {}, dropped records {}\n", value.value("launches", 0),
                   value.value("dropped", 0));
        if (value.contains("traced_kernel"))
          fmt::print("  traced kernel (CUPTI, this run): median {} per launch\n",
                     formatNs(value["traced_kernel"].value("median", 0.0)));
        for (const auto& note : value.value("launch_notes", nlohmann::json::array()))
          fmt::print("  note: {}\n", note.get<std::string>());
      } else if (signal == "kernel_duration" && value.contains("median")) {
        fmt::print("  {} of {} launches: median {}, mean {}, p95 {}, min {}, max {}\n",
                   value.value("count", 0), value.value("launches", 0),
                   formatNs(value.value("median", 0.0)), formatNs(value.value("mean", 0.0)),
                   formatNs(value.value("p95", 0.0)), formatNs(value.value("min", 0.0)),
                   formatNs(value.value("max", 0.0)));
        if (value.contains("note")) fmt::print("  note: {}\n", value["note"].get<std::string>());
      } else if (signal == "op_latency" && value.contains("ops")) {
        fmt::print("{}", synthesis::opLatencyText(nlohmann::json::parse(value.dump())));
      } else if (!printPcSignal(value)) {
        fmt::print("  {}\n", value.dump());
      }
      if (entry.contains("provenance"))
        fmt::print("  provenance: {}\n", entry["provenance"].dump());
    }
    if (!traceCost.is_null())
      fmt::print(
          "\ntrace cost (ns, derived): the traced kernel's median {} against the untraced "
          "one's {}: {}{} ({:+.2f} %)\n",
          formatNs(traceCost["traced_median"].get<double>()),
          formatNs(traceCost["untraced_median"].get<double>()),
          traceCost["added"].get<double>() >= 0 ? "+" : "-",
          formatNs(std::abs(traceCost["added"].get<double>())),
          100.0 * traceCost["relative"].get<double>());
    fmt::print("{}", discoveryText);
    if (!notCollected.empty()) {
      fmt::print("\nnot run:\n");
      for (const auto& n : notCollected)
        fmt::print("  {}: {}\n", n["task"].get<std::string>(), n["reason"].get<std::string>());
    }
    fmt::print("\n{} of {} tasks executed, the rest reused from {}\n",
               result["run"]["executed"].get<long>(), report->tasks.size(), wsDir.string());
    if (!failures.empty()) fmt::print("\n{}", report->toText());
  }
  if (o.requireGpu && !noGpu.empty()) {
    std::cerr << "argus: query: --require-gpu: " << noGpu.size()
              << " GPU collection(s) could not run on this machine\n";
    return 2;
  }
  return report->failures().empty() ? 0 : 1;
}

}  // namespace

std::vector<Command> addQueryCommands(CLI::App& app) {
  auto o = std::make_shared<QueryCommandOptions>();
  auto* verb = app.add_subcommand(
      "query",
      "Answer a region query: plan, build the variants, run the collections on the GPU,\n"
      "synthesize and report. Results are kept in the workspace; asking again reuses them.\n"
      "Example: argus query --program examples/tma_gemm/argus.yaml --region mainloop "
      "--signals duration --scope role=producer\n"
      "op_latency probes every async op of the region's subtree in every iteration the reference\n"
      "run recorded; narrow the ops with --region (e.g. mainloop/tma_load) and the iterations\n"
      "with --scope iter=A..B.");
  addQueryOptions(*verb, o->query);
  verb->add_flag("--json", o->json, "The report as JSON (schema argus.report/1)");
  verb->add_flag("--require-gpu", o->requireGpu,
                 "Exit with 2 when a GPU collection could not run on this machine");
  verb->add_option("--chrome-trace", o->chromeTraceOut,
                   "Write the timeline of the query's collections (region traces, system traces "
                   "of every process) as Chrome/Perfetto JSON to this file");
  verb->add_option(
          "--concurrent-probes", o->concurrentProbes,
          "op_latency probe processes started at once per GPU (default: 8, or the host's CPU "
          "threads if fewer; 1 runs them one after another). With N > 1 their start-ups "
          "overlap; each takes the GPU's turn from its first GPU work to its exit, so no two "
          "probes' GPU work overlaps (the join checks their kernels). Every one-GPU probe first "
          "empties "
          "the L2 ($ARGUS_GPU_TURN_L2), so its latencies do not depend on what ran or set up "
          "before it. H200: 0.15 s/probe at 8 and 0.13 at 16 against 0.36 one at a time; "
          "at 8 at once (Triton: its 4 probes at once) the latencies of the TMA, cp.async, "
          "warp-specialized and Triton examples stayed within 16-32 ns (3.6-12.5 %) of one at a "
          "time, where two one-at-a-time runs differed by up to 12.5 %")
      ->check(CLI::Range(1, 64));
  return {Command{verb, [o] { return runQuery(*o); }}};
}

}  // namespace argus::cli
