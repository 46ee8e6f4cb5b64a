// Running a prepared query and assembling its report (argus/session/query.h).
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/program/build.h"
#include "argus/program/program.h"
#include "argus/report/html.h"
#include "argus/report/timeline.h"
#include "argus/runtime/observer.h"
#include "argus/runtime/scheduler.h"
#include "argus/runtime/workspace_store.h"
#include "argus/session/catalog.h"
#include "argus/session/query.h"
#include "argus/support/process.h"
#include "argus/workspace/workspace.h"

namespace argus::session {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

/// The workspace version of the program (spec and sources), made once per content: a root
/// version whose options record the same content hash is reused (one made from the same
/// directory first). New versions carry the content hash as their content key, so two queries
/// started at once still make one version.
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
  version.contentKey = "program " + contentHash;
  std::vector<std::pair<fs::path, std::string>> files{{spec.file, "program_spec"}};
  for (const auto& f : spec.sources) {
    const std::string ext = f.extension().string();
    files.emplace_back(f, ext == ".py"                        ? "python_source"
                          : ext == ".ttgir" || ext == ".ttir" ? ext.substr(1)
                                                              : "cuda_source");
  }
  for (const auto& f : spec.hostSources) files.emplace_back(f, "host_source");
  if (!spec.derive.file.empty()) files.emplace_back(spec.derive.file, "region_file");
  for (const auto& [path, kind] : files) {
    auto bytes = readFile(path);
    if (!bytes) return std::unexpected(bytes.error());
    version.files.push_back({path.filename().string(), kind, std::move(*bytes)});
  }
  return ws.addVersion(version);
}

/// Records every variant this run built as a version derived from the program's version.
void recordBuiltVariants(workspace::Workspace& ws, workspace::VersionId base,
                         const runtime::RunReport& run, runtime::ResultStore& store,
                         report::QueryReport& out) {
  for (const auto& t : run.tasks) {
    if (!t.executed || t.outcome.state != runtime::TaskState::Succeeded ||
        t.id.rfind("build/", 0) != 0)
      continue;
    const std::string key = t.id.substr(6);
    const auto* variantTask = run.find("variant/" + key);
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
    if (const auto* d = run.plan.find(variantTask->id)) files.optionsJson = d->config.dump();
    auto id = program::recordVariant(ws, base, key, files);
    if (id) out.newVariantVersions.emplace_back(key, id->text());
  }
}

/// The report entry of one signal: its answer from the task's outputs, or why there is none.
report::SignalEntry signalEntry(const std::string& signal, const std::string& taskId,
                                const PreparedQuery& prepared, const runtime::RunReport& run,
                                runtime::ResultStore& store, workspace::Workspace& ws,
                                const std::string& wsName,
                                const std::map<std::string, std::string>& reasons) {
  const auto& q = prepared.query;
  report::SignalEntry entry;
  entry.signal = signal;
  entry.task = taskId;
  if (const planner::Recipe* recipe = prepared.catalog.producing(signal); recipe != nullptr) {
    entry.qualification = std::string(planner::qualificationName(recipe->qualification));
    for (const auto& s : recipe->signals)
      if (s.name == signal) entry.unit = s.unit;
  }
  entry.scope = q.scope.all() ? "all" : q.scope.canonical();
  const auto* task = run.find(taskId);
  if (task == nullptr) {
    entry.status = "not collected";
    entry.reason = rootReason(reasons, taskId);
    return entry;
  }
  entry.status = std::string(runtime::toString(task->outcome.state));
  if (task->outcome.state != runtime::TaskState::Succeeded &&
      task->outcome.state != runtime::TaskState::Memoized) {
    if (!task->outcome.error.empty()) entry.error = task->outcome.error;
    return entry;
  }
  if (auto outputs = store.lookup(task->memoKey))
    if (auto it = outputs->artifacts.find(signal); it != outputs->artifacts.end()) {
      if (auto bytes = it->second.read()) entry.value = json::parse(*bytes, nullptr, false);
      entry.provenance = json{{"memo_key", task->memoKey}};
    }
  if (auto key = workspace::ContentHash::fromHex(task->memoKey))
    if (auto record = ws.findSucceededTask(*key); record && *record) {
      json artifacts = json::array();
      for (const auto& a : (*record)->outputs) artifacts.push_back(a.id.text());
      entry.provenance =
          json{{"task", (*record)->id.text()}, {"artifacts", artifacts}, {"workspace", wsName}};
    }
  return entry;
}

/// With both the traced run's kernel times and the untraced reference build's, what tracing
/// cost the kernel.
std::optional<report::TraceCost> traceCost(const std::vector<report::SignalEntry>& signals) {
  const report::SignalEntry* duration = nullptr;
  const report::SignalEntry* kernel = nullptr;
  for (const auto& s : signals) {
    if (s.signal == "duration") duration = &s;
    if (s.signal == "kernel_duration") kernel = &s;
  }
  if (duration == nullptr || kernel == nullptr || !duration->value || !kernel->value) return {};
  if (!duration->value->is_object() || !kernel->value->is_object()) return {};
  const json traced = duration->value->value("traced_kernel", json::object());
  const json& untraced = *kernel->value;
  if (!traced.contains("median") || !untraced.contains("median") ||
      untraced["median"].get<double>() <= 0)
    return {};
  return report::TraceCost{traced["median"].get<double>(), untraced["median"].get<double>()};
}

/// The region traces and system traces of the run's collections, for the timeline.
std::vector<report::CollectionEvidence> collectionEvidence(const runtime::RunReport& run,
                                                           runtime::ResultStore& store) {
  std::vector<report::CollectionEvidence> out;
  for (const auto& t : run.tasks) {
    if (t.id.rfind("collect/", 0) != 0) continue;
    auto outputs = store.lookup(t.memoKey);
    if (!outputs) continue;
    report::CollectionEvidence c;
    if (outputs->artifacts.contains("region_trace"))
      if (auto bytes = outputs->artifacts.at("region_trace").read()) c.regionTrace = *bytes;
    for (const auto& [name, artifact] : outputs->artifacts) {
      if (name != "system_trace" && !name.starts_with("system_trace.")) continue;
      if (auto bytes = artifact.read()) c.systemTraces.emplace_back(name, std::move(*bytes));
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::size_t defaultConcurrentProbes() {
  // Each probe process compiles nothing but starts a CUDA context, and the start-ups are what
  // overlap. At eight at once the examples' latencies (Triton's: four at once) stayed within
  // 16-32 ns of one at a time, one or two of the steps they come in (BENCHMARKS.md).
  const unsigned cores = std::thread::hardware_concurrency();  // 0: unknown
  return cores == 0 ? 8 : std::min<std::size_t>(cores, 8);
}

Result<QueryRun> runQuery(const PreparedQuery& prepared, const RunSettings& settings) {
  const auto& q = prepared.query;
  if (fs::path(q.program).extension() != ".yaml" && fs::path(q.program).extension() != ".yml")
    return fail("query", fmt::format("`{}`: argus query builds and runs the program, so it needs "
                                     "a program spec (argus.yaml; see examples/*/argus.yaml)",
                                     q.program));
  auto spec = program::loadProgramSpec(q.program);
  if (!spec) return std::unexpected(spec.error());
  const fs::path wsDir = q.workspace.empty() ? workspace::Workspace::defaultDirectory(spec->file)
                                             : fs::path(q.workspace);
  auto ws = workspace::Workspace::open(wsDir);
  if (!ws) return std::unexpected(ws.error());

  // The catalog of this build, and what this build and machine cannot do, taken out of the plan
  // and said plainly.
  // The GPUs runs can have: this machine's, or on Slurm the partition's (a login node without a
  // GPU plans the GPU collections, and Slurm gives each run its GPUs).
  backends::AdapterContext context{.target = spec->file, .spec = *spec, .devices = {}};
  unsigned largestNode = 0;  // Slurm: the most GPUs one run can hold
  if (settings.slurm) {
    if (auto ok = runtime::checkSlurm(*settings.slurm); !ok) return std::unexpected(ok.error());
    auto cluster = runtime::slurmDevices(*settings.slurm);
    if (!cluster) return std::unexpected(cluster.error());
    context.devices = cluster->devices;
    largestNode = cluster->largestNode;
    context.noGpu = fmt::format(
        "the Slurm partition{} has none (sinfo lists no gpu GRES on its nodes)",
        settings.slurm->partition.empty() ? "" : " `" + settings.slurm->partition + "`");
  } else {
    context.devices = detectDevices();
  }
  auto catalog = makeCatalog(std::move(context));
  if (!catalog) return std::unexpected(catalog.error());
  const auto& devices = catalog->context.devices;
  auto capabilities = checkCapabilities(prepared.plan.plan, *catalog);
  auto& reasons = capabilities.reasons;
  runtime::Plan plan = without(prepared.plan.plan, reasons);

  auto baseVersion = prepared.version ? Result<workspace::VersionId>(*prepared.version)
                                      : programVersion(*ws, *spec, prepared.plan.programVersion);
  if (!baseVersion) return std::unexpected(baseVersion.error());

  runtime::installInterruptHandler();
  runtime::WorkspaceResultStore store(*ws);
  runtime::ProgressObserver progress;
  runtime::RunOptions options;
  std::optional<runtime::SlurmLauncher> slurm;
  if (settings.slurm) {
    slurm.emplace(*settings.slurm);
    options.launcher = &*slurm;
  }
  options.devices = devices;
  options.maxDevicesPerTask = largestNode;
  options.maxTasksPerDevice = 1;
  options.maxTurnTasksPerDevice = settings.concurrentProbes;
  options.cancelFlag = runtime::interruptFlag();
  // Task directories are scratch, removed after the run: every output is published into the
  // workspace's blobs, so the build directories (an executable each) would only be garbage
  // (measured: ~1 MiB per probe variant of tma_gemm). They live in this process's scratch
  // folder of the workspace, so that a run killed before removing them leaves them where the
  // next process that opens the workspace (or `argus ws check --repair`) removes them.
  const fs::path scratch = ws->scratchDirectory();
  options.workRoot = scratch / "run";
  options.keepTaskDirs = false;
  if (settings.progress) options.observers.push_back(&progress);
  runtime::Scheduler scheduler(catalog->registry, store, options);
  auto run = scheduler.run(plan);
  std::error_code ec;
  fs::remove_all(options.workRoot, ec);
  if (!run) return std::unexpected(run.error());

  QueryRun result;
  report::QueryReport& r = result.report;
  r.query = query::toJson(q);
  r.scope = q.scope.all() ? "all" : q.scope.canonical();
  r.programVersion = prepared.plan.programVersion;
  r.workspaceVersion = baseVersion->text();
  r.workspace = wsDir.string();
  r.kernel = prepared.plan.kernel;
  r.region = prepared.plan.regionPath;
  r.regionId = prepared.plan.regionId;
  recordBuiltVariants(*ws, *baseVersion, *run, store, r);
  for (const auto& [signal, taskId] : prepared.plan.answers)
    r.signals.push_back(
        signalEntry(signal, taskId, prepared, *run, store, *ws, r.workspace, reasons));
  r.traceCost = traceCost(r.signals);
  for (const auto& t : prepared.plan.plan.tasks())
    if (reasons.contains(t.id)) r.notCollected.push_back({t.id, rootReason(reasons, t.id)});
  for (const auto* f : run->failures()) r.failures.push_back({f->id, f->outcome.error, f->log});
  r.run.planned = prepared.plan.plan.tasks().size();
  r.run.ran = run->tasks.size();
  r.run.executed = static_cast<std::size_t>(std::count_if(
      run->tasks.begin(), run->tasks.end(), [](const auto& t) { return t.executed; }));
  r.run.devices = devices;
  // op_latency discovery: the probes it added and what it left out.
  for (const auto& t : run->tasks) {
    const auto* d = run->plan.find(t.id);
    if (d == nullptr || d->executor != "ptx_analysis") continue;
    auto outputs = store.lookup(t.memoKey);
    if (!outputs || !outputs->artifacts.contains("op_sites")) continue;
    if (auto bytes = outputs->artifacts.at("op_sites").read())
      r.discovery.emplace_back(t.id, json::parse(*bytes, nullptr, false));
  }
  if (!r.failures.empty()) r.runText = run->toText();

  // One timeline for the query: region traces and system traces (every process of the run),
  // for --chrome-trace and for the HTML page (in the scratch folder when only the page asks).
  std::optional<fs::path> timelineFile;
  if (settings.timeline || settings.html) {
    const auto timeline = report::queryTimeline(collectionEvidence(*run, store));
    const fs::path file = settings.timeline ? *settings.timeline : scratch / "timeline.json";
    if (!settings.timeline) fs::create_directories(scratch, ec);
    if (!timeline["traceEvents"].empty() && writeFile(file, timeline.dump())) timelineFile = file;
  }
  result.gpuSkipped = capabilities.needGpu.size();
  result.failed = !run->failures().empty();
  // The report itself is kept with the program version, so that `argus report` can show it
  // again (as text, JSON or HTML) without asking again. Not keeping it loses no result.
  // Its text form beside it, named after it (`report-a57.txt`).
  auto kept = ws->publishArtifact(
      {"report", "report.json", r.scope, *baseVersion, report::toJson(r).dump()});
  if (kept) {
    auto text = ws->publishArtifact({"report_text", "report-" + kept->id.text() + ".txt", r.scope,
                                     *baseVersion, report::toText(r)});
    if (text)
      result.reportArtifact = kept->id.text();
    else
      result.reportNotKept = text.error().text();
  } else {
    result.reportNotKept = kept.error().text();
  }
  if (settings.html)
    if (auto ok = report::writeHtml(r, timelineFile, *settings.html); !ok)
      result.htmlError = ok.error();
  if (timelineFile && !settings.timeline) fs::remove(*timelineFile, ec);
  return result;
}

}  // namespace argus::session
