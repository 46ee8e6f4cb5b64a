// `argus ws`: list, show, cat, gc and fork on a workspace.
#include "commands.h"

#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/support/process.h"
#include "argus/ttgir/regions.h"
#include "argus/workspace/workspace.h"

namespace argus::cli {
namespace {

namespace fs = std::filesystem;
namespace ws = argus::workspace;
using json = nlohmann::ordered_json;

struct WsOptions {
  std::string workspace = ".argus";
  bool json = false;
  std::string id;
  std::string label;
  std::vector<std::string> files;  ///< fork: NAME=PATH files to add or replace.
  std::string output;              ///< cat: write here instead of stdout.
};

void addCommonOptions(CLI::App* verb, WsOptions& o) {
  verb->add_option("--workspace", o.workspace, "Workspace directory")->capture_default_str();
  verb->add_flag("--json", o.json, "Machine-readable output (schema argus.workspace/1)");
}

Result<ws::Workspace> openExisting(const WsOptions& o) {
  return ws::Workspace::open(o.workspace, ws::OpenOptions{.create = false});
}

std::string humanBytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

std::string timeText(ws::TimestampMs ms) {
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  return fmt::format("{:%Y-%m-%d %H:%M:%S}", fmt::localtime(seconds));
}

std::string durationText(const ws::TaskRecord& t) {
  if (!t.startedAt || !t.endedAt) return "";
  return fmt::format("{:.2f} s", static_cast<double>(*t.endedAt - *t.startedAt) / 1000.0);
}

template <class Id>
json idJson(const std::optional<Id>& id) {
  return id ? json(id->text()) : json(nullptr);
}

json parsedOrText(const std::string& text) {
  auto parsed = json::parse(text, nullptr, false);
  return parsed.is_discarded() ? json(text) : parsed;
}

/// "v1 -> v3 -> v7": the chain from the root to `id`, from the in-memory version list.
std::string chainText(const std::map<std::int64_t, ws::VersionRecord>& versions, ws::VersionId id) {
  std::vector<std::string> chain;
  std::optional<ws::VersionId> at = id;
  while (at && chain.size() < 1000) {
    chain.push_back(at->text());
    auto it = versions.find(at->value());
    at = it == versions.end() ? std::nullopt : it->second.base;
  }
  std::string text;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    text += (text.empty() ? "" : " -> ") + *it;
  return text;
}

json artifactJson(const ws::ArtifactRecord& a) {
  return {{"id", a.id.text()},
          {"kind", a.kind},
          {"name", a.name},
          {"scope", a.scope},
          {"version", idJson(a.version)},
          {"task", idJson(a.task)},
          {"hash", a.hash.hex()},
          {"size", a.size},
          {"stored_size", a.storedSize},
          {"compression", ws::toString(a.compression)},
          {"stored_inline", a.storedInline},
          {"created_at", a.createdAt}};
}

json versionJson(const ws::VersionRecord& v) {
  return {{"id", v.id.text()},
          {"kind", ws::toString(v.kind)},
          {"base", idJson(v.base)},
          {"transform", v.transform},
          {"options", parsedOrText(v.optionsJson)},
          {"label", v.label},
          {"task", idJson(v.task)},
          {"created_at", v.createdAt}};
}

json taskJson(const ws::TaskRecord& t) {
  json inputs = json::array(), outputs = json::array();
  for (auto in : t.inputs) inputs.push_back(in.text());
  for (const auto& out : t.outputs) outputs.push_back(out.id.text());
  return {{"id", t.id.text()},
          {"type", ws::toString(t.type)},
          {"status", ws::toString(t.status)},
          {"attempt", t.attempt},
          {"memo_key", t.memoKey.hex()},
          {"descriptor", parsedOrText(t.descriptorJson)},
          {"version", idJson(t.version)},
          {"queued_at", t.queuedAt},
          {"started_at", t.startedAt ? json(*t.startedAt) : json(nullptr)},
          {"ended_at", t.endedAt ? json(*t.endedAt) : json(nullptr)},
          {"error", t.error},
          {"log", idJson(t.log)},
          {"inputs", inputs},
          {"outputs", outputs}};
}

json runJson(const ws::RunRecord& r) {
  return {{"id", r.id.text()},
          {"task", r.task.text()},
          {"device", r.device},
          {"backend_config", parsedOrText(r.backendConfigJson)},
          {"environment", parsedOrText(r.environmentJson)},
          {"created_at", r.createdAt}};
}

std::string idList(const std::vector<ws::ArtifactRecord>& artifacts) {
  std::string text;
  for (const auto& a : artifacts) text += (text.empty() ? "" : ", ") + a.id.text();
  return text;
}

std::string artifactLine(const ws::ArtifactRecord& a) {
  return fmt::format("{}  {}{}{}  {}  {}{}", a.id.text(), a.kind,
                     a.name.empty() ? "" : " " + a.name,
                     a.scope.empty() ? "" : " [" + a.scope + "]", humanBytes(a.size),
                     a.hash.hex().substr(0, 12), a.task ? "  from " + a.task->text() : "");
}

// --- list ---------------------------------------------------------------------------------

int runList(const WsOptions& o) {
  auto w = openExisting(o);
  if (!w) return reportError(w.error());
  auto versions = w->versions();
  if (!versions) return reportError(versions.error());
  auto tasks = w->tasks();
  if (!tasks) return reportError(tasks.error());
  auto stats = w->stats();
  if (!stats) return reportError(stats.error());
  std::map<std::int64_t, ws::VersionRecord> byId;
  for (const auto& v : *versions) byId.emplace(v.id.value(), v);

  if (o.json) {
    json vs = json::array(), ts = json::array(), kinds = json::array();
    for (const auto& v : *versions) {
      json j = versionJson(v);
      auto chain = w->lineage(v.id);
      if (!chain) return reportError(chain.error());
      json lineage = json::array();
      for (const auto& c : *chain) lineage.push_back(c.id.text());
      j["lineage"] = lineage;
      auto files = w->versionFiles(v.id);
      if (!files) return reportError(files.error());
      json fj = json::object();
      for (const auto& f : *files) fj[f.name] = f.artifact.id.text();
      j["files"] = fj;
      vs.push_back(j);
    }
    for (const auto& t : *tasks) ts.push_back(taskJson(t));
    for (const auto& k : stats->byKind)
      kinds.push_back({{"kind", k.kind}, {"count", k.count}, {"bytes", k.bytes}});
    std::cout << json{{"schema", "argus.workspace/1"},
                      {"workspace", w->directory().string()},
                      {"versions", vs},
                      {"tasks", ts},
                      {"artifacts",
                       {{"count", stats->artifacts},
                        {"bytes", stats->artifactBytes},
                        {"blobs", stats->blobs},
                        {"stored_bytes", stats->blobBytes},
                        {"by_kind", kinds}}}}
                     .dump(2)
              << "\n";
    return 0;
  }

  fmt::print("workspace {}\n\nversions ({})\n", w->directory().string(), versions->size());
  if (versions->empty()) fmt::print("  (none)\n");
  for (const auto& v : *versions) {
    auto files = w->versionFiles(v.id);
    if (!files) return reportError(files.error());
    std::string names;
    for (const auto& f : *files) names += (names.empty() ? "" : ", ") + f.name;
    std::string how = v.transform.empty() ? "" : v.transform;
    if (!v.transform.empty() && v.optionsJson != "{}") how += " " + v.optionsJson;
    fmt::print("  {:<6} {:<8} {:<24} {}{}{}\n", v.id.text(), ws::toString(v.kind),
               chainText(byId, v.id), v.label.empty() ? "" : "\"" + v.label + "\"  ",
               how.empty() ? "" : how + "  ", names);
  }
  fmt::print("\ntasks ({})\n", tasks->size());
  if (tasks->empty()) fmt::print("  (none)\n");
  for (const auto& t : *tasks) {
    fmt::print("  {:<6} {:<10} {:<10} attempt {}  {}  {:>8}  {}{}{}\n", t.id.text(),
               ws::toString(t.status), ws::toString(t.type), t.attempt, timeText(t.queuedAt),
               durationText(t), t.version ? t.version->text() : "-",
               t.outputs.empty() ? "" : "  -> " + idList(t.outputs),
               t.error.empty() ? "" : "  error: " + t.error);
  }
  fmt::print("\nartifacts: {} ({}), in {} blobs using {}\n", stats->artifacts,
             humanBytes(stats->artifactBytes), stats->blobs, humanBytes(stats->blobBytes));
  for (const auto& k : stats->byKind)
    fmt::print("  {:<16} {:>6}  {}\n", k.kind, k.count, humanBytes(k.bytes));
  fmt::print(
      "\nids: v = version, a = artifact, t = task, r = run; `argus ws show ID` prints one\n");
  return 0;
}

// --- show ---------------------------------------------------------------------------------

void printProvenance(const ws::Provenance& p, int depth) {
  std::string indent(static_cast<std::size_t>(4 + 2 * depth), ' ');
  fmt::print("{}{}{}\n", indent, depth == 0 ? "" : "<- ", artifactLine(p.artifact));
  if (p.task)
    fmt::print("{}   made by {} ({} {}, attempt {}){}\n", indent, p.task->id.text(),
               ws::toString(p.task->type), ws::toString(p.task->status), p.task->attempt,
               p.version ? " for " + p.version->id.text() : "");
  for (const auto& in : p.inputs) printProvenance(in, depth + 1);
  if (p.truncated) fmt::print("{}  <- ... (deeper inputs not shown)\n", indent);
}

json provenanceJson(const ws::Provenance& p) {
  json inputs = json::array();
  for (const auto& in : p.inputs) inputs.push_back(provenanceJson(in));
  return {{"artifact", artifactJson(p.artifact)},
          {"version", p.version ? versionJson(*p.version) : json(nullptr)},
          {"task", p.task ? taskJson(*p.task) : json(nullptr)},
          {"inputs", inputs},
          {"truncated", p.truncated}};
}

int showVersion(ws::Workspace& w, ws::VersionId id, bool asJson) {
  auto chain = w.lineage(id);
  if (!chain) return reportError(chain.error());
  auto files = w.versionFiles(id);
  if (!files) return reportError(files.error());
  auto bound = w.artifactsOf(id);
  if (!bound) return reportError(bound.error());
  const auto& v = chain->front();
  if (asJson) {
    json lineage = json::array(), fj = json::object(), evidence = json::array();
    for (const auto& c : *chain) lineage.push_back(versionJson(c));
    for (const auto& f : *files) fj[f.name] = artifactJson(f.artifact);
    for (const auto& a : *bound) evidence.push_back(artifactJson(a));
    std::cout << json{{"schema", "argus.workspace/1"},
                      {"version", versionJson(v)},
                      {"lineage", lineage},
                      {"files", fj},
                      {"artifacts", evidence}}
                     .dump(2)
              << "\n";
    return 0;
  }
  fmt::print("{}  {}{}\n", v.id.text(), ws::toString(v.kind),
             v.label.empty() ? "" : "  \"" + v.label + "\"");
  fmt::print("  created  {}\n", timeText(v.createdAt));
  if (!v.transform.empty()) fmt::print("  transform {} {}\n", v.transform, v.optionsJson);
  if (v.task) fmt::print("  made by  {}\n", v.task->text());
  fmt::print("  lineage\n");
  for (const auto& c : *chain)
    fmt::print("    {}{:<6} {:<8} {}{}\n", c.id == v.id ? "" : "<- ", c.id.text(),
               ws::toString(c.kind), c.transform.empty() ? "(root)" : c.transform,
               c.label.empty() ? "" : "  \"" + c.label + "\"");
  fmt::print("  files\n");
  if (files->empty()) fmt::print("    (none)\n");
  for (const auto& f : *files) fmt::print("    {:<20} {}\n", f.name, artifactLine(f.artifact));
  fmt::print("  artifacts bound to {} ({})\n", v.id.text(), bound->size());
  for (const auto& a : *bound) fmt::print("    {}\n", artifactLine(a));
  return 0;
}

int showArtifact(ws::Workspace& w, ws::ArtifactId id, bool asJson) {
  auto p = w.provenance(id);
  if (!p) return reportError(p.error());
  if (asJson) {
    std::cout << json{{"schema", "argus.workspace/1"}, {"provenance", provenanceJson(*p)}}.dump(2)
              << "\n";
    return 0;
  }
  const auto& a = p->artifact;
  fmt::print("{}  {}{}\n", a.id.text(), a.kind, a.name.empty() ? "" : "  " + a.name);
  fmt::print("  version  {}\n  scope    {}\n", a.version ? a.version->text() : "(none)",
             a.scope.empty() ? "(whole program)" : a.scope);
  fmt::print("  hash     {}\n  size     {} ({} stored, {}{})\n", a.hash.hex(), humanBytes(a.size),
             humanBytes(a.storedSize), ws::toString(a.compression),
             a.storedInline ? ", in the database" : "");
  fmt::print("  created  {}\n  provenance\n", timeText(a.createdAt));
  printProvenance(*p, 0);
  return 0;
}

int showTask(ws::Workspace& w, ws::TaskId id, bool asJson) {
  auto t = w.task(id);
  if (!t) return reportError(t.error());
  auto runs = w.runsOf(id);
  if (!runs) return reportError(runs.error());
  if (asJson) {
    json rj = json::array(), outputs = json::array();
    for (const auto& r : *runs) rj.push_back(runJson(r));
    for (const auto& a : t->outputs) outputs.push_back(artifactJson(a));
    json j = taskJson(*t);
    j["outputs"] = outputs;
    std::cout << json{{"schema", "argus.workspace/1"}, {"task", j}, {"runs", rj}}.dump(2) << "\n";
    return 0;
  }
  fmt::print("{}  {} {}  attempt {}\n", t->id.text(), ws::toString(t->type),
             ws::toString(t->status), t->attempt);
  fmt::print("  version  {}\n  memo key {}\n  descriptor {}\n",
             t->version ? t->version->text() : "(none)", t->memoKey.hex(), t->descriptorJson);
  fmt::print("  queued   {}\n", timeText(t->queuedAt));
  if (t->startedAt) fmt::print("  started  {}\n", timeText(*t->startedAt));
  if (t->endedAt) fmt::print("  ended    {}  ({})\n", timeText(*t->endedAt), durationText(*t));
  if (!t->error.empty()) fmt::print("  error    {}\n", t->error);
  if (t->log) fmt::print("  log      {} (`argus ws show {}`)\n", t->log->text(), t->log->text());
  fmt::print("  inputs\n");
  if (t->inputs.empty()) fmt::print("    (none)\n");
  for (auto in : t->inputs) {
    auto a = w.artifact(in);
    if (!a) return reportError(a.error());
    fmt::print("    {}\n", artifactLine(*a));
  }
  fmt::print("  outputs\n");
  if (t->outputs.empty()) fmt::print("    (none)\n");
  for (const auto& a : t->outputs) fmt::print("    {}\n", artifactLine(a));
  for (const auto& r : *runs)
    fmt::print("  run {}  device {}  backend {}  environment {}\n", r.id.text(), r.device,
               r.backendConfigJson, r.environmentJson);
  return 0;
}

int showRun(ws::Workspace& w, ws::RunId id, bool asJson) {
  auto r = w.run(id);
  if (!r) return reportError(r.error());
  if (asJson) {
    std::cout << json{{"schema", "argus.workspace/1"}, {"run", runJson(*r)}}.dump(2) << "\n";
    return 0;
  }
  fmt::print("{}  of task {}\n  device   {}\n  backend  {}\n  environment {}\n  created  {}\n",
             r->id.text(), r->task.text(), r->device, r->backendConfigJson, r->environmentJson,
             timeText(r->createdAt));
  return 0;
}

int runShow(const WsOptions& o) {
  auto ref = ws::parseObjectRef(o.id);
  if (!ref) return reportError(Error{"cli", ref.error().message});
  auto w = openExisting(o);
  if (!w) return reportError(w.error());
  ws::ObjectKind kind = ref->kind;
  if (kind == ws::ObjectKind::any) {
    std::vector<std::string> found;
    std::vector<ws::ObjectKind> kinds;
    auto probe = [&](ws::ObjectKind k, std::string text, bool exists) {
      if (!exists) return;
      found.push_back(std::move(text));
      kinds.push_back(k);
    };
    probe(ws::ObjectKind::version, ws::VersionId(ref->value).text(),
          w->version(ws::VersionId(ref->value)).has_value());
    probe(ws::ObjectKind::artifact, ws::ArtifactId(ref->value).text(),
          w->artifact(ws::ArtifactId(ref->value)).has_value());
    probe(ws::ObjectKind::task, ws::TaskId(ref->value).text(),
          w->task(ws::TaskId(ref->value)).has_value());
    probe(ws::ObjectKind::run, ws::RunId(ref->value).text(),
          w->run(ws::RunId(ref->value)).has_value());
    if (found.empty())
      return reportError(Error{
          "workspace", fmt::format("no version, artifact, task or run with id {} in {}; `argus ws "
                                   "list` shows what exists",
                                   ref->value, w->directory().string())});
    if (found.size() > 1)
      return reportError(Error{"cli", fmt::format("id {} is ambiguous: {} exist; add the prefix",
                                                  ref->value, fmt::join(found, ", "))});
    kind = kinds.front();
  }
  switch (kind) {
    case ws::ObjectKind::version:
      return showVersion(*w, ws::VersionId(ref->value), o.json);
    case ws::ObjectKind::artifact:
      return showArtifact(*w, ws::ArtifactId(ref->value), o.json);
    case ws::ObjectKind::task:
      return showTask(*w, ws::TaskId(ref->value), o.json);
    case ws::ObjectKind::run:
    case ws::ObjectKind::any:
      break;
  }
  return showRun(*w, ws::RunId(ref->value), o.json);
}

// --- gc / fork ----------------------------------------------------------------------------

int runGc(const WsOptions& o) {
  auto w = openExisting(o);
  if (!w) return reportError(w.error());
  auto gc = w->gc();
  if (!gc) return reportError(gc.error());
  auto check = w->verify();
  if (!check) return reportError(check.error());
  if (o.json) {
    std::cout << json{{"schema", "argus.workspace/1"},
                      {"workspace", w->directory().string()},
                      {"bytes_freed", gc->bytesFreed},
                      {"blobs_removed", gc->blobsRemoved},
                      {"temp_files_removed", gc->tempFilesRemoved},
                      {"blobs_kept", gc->blobsKept},
                      {"verify",
                       {{"ok", check->ok()},
                        {"artifacts_checked", check->artifactsChecked},
                        {"blobs_checked", check->blobsChecked},
                        {"problems", check->problems}}}}
                     .dump(2)
              << "\n";
  } else {
    fmt::print("freed {} ({} unreferenced blobs, {} temp files of killed writers); {} blobs kept\n",
               humanBytes(gc->bytesFreed), gc->blobsRemoved, gc->tempFilesRemoved, gc->blobsKept);
    if (check->ok())
      fmt::print("verified {} artifacts in {} blobs: ok\n", check->artifactsChecked,
                 check->blobsChecked);
    for (const auto& p : check->problems) fmt::print(stderr, "argus: workspace: {}\n", p);
  }
  return check->ok() ? 0 : 1;
}

int runFork(const WsOptions& o) {
  auto ref = ws::parseObjectRef(o.id);
  if (!ref) return reportError(Error{"cli", ref.error().message});
  if (ref->kind != ws::ObjectKind::version && ref->kind != ws::ObjectKind::any)
    return reportError(
        Error{"cli", fmt::format("`{}` is not a version; fork takes a version id like v3", o.id)});
  auto w = openExisting(o);
  if (!w) return reportError(w.error());
  ws::VersionId base(ref->value);
  ws::NewVersion nv;
  nv.kind = ws::VersionKind::program;
  nv.base = base;
  nv.transform = "fork";
  nv.label = o.label;
  for (const auto& spec : o.files) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return reportError(Error{"cli", fmt::format("--file `{}`: use NAME=PATH, e.g. "
                                                  "kernel.ttgir=edited.ttgir",
                                                  spec)});
    const std::string name = spec.substr(0, eq);
    const fs::path path = spec.substr(eq + 1);
    auto bytes = readFile(path);
    if (!bytes) return reportError(bytes.error());
    const std::string ext = fs::path(name).extension().string();
    std::string kind = "file";
    if (ext == ".ttgir" || ext == ".ttir") {
      // An optimizer's edit is checked before it becomes a version: its regions must parse.
      auto regions = ttgir::analyzeRegions(*bytes, path.string());
      if (!regions) return reportError(regions.error());
      kind = ext == ".ttgir" ? "ttgir" : "ttir";
    } else if (ext == ".ptx") {
      kind = "ptx";
    } else if (ext == ".cu" || ext == ".cuh" || ext == ".h") {
      kind = "cuda_source";
    } else if (ext == ".py") {
      kind = "python_source";
    }
    nv.files.push_back({name, kind, std::move(*bytes)});
  }
  auto id = w->addVersion(nv);
  if (!id) return reportError(id.error());
  if (o.json)
    std::cout << json{{"schema", "argus.workspace/1"},
                      {"id", id->text()},
                      {"base", base.text()},
                      {"label", o.label}}
                     .dump(2)
              << "\n";
  else
    fmt::print("{} (fork of {}{})\n", id->text(), base.text(),
               o.label.empty() ? "" : ", \"" + o.label + "\"");
  return 0;
}

/// `argus ws cat ID`: the bytes of an artifact (a12) or of a version's file (v3:kernel.ttgir),
/// to stdout or --output.
int runCat(const WsOptions& o) {
  auto w = openExisting(o);
  if (!w) return reportError(w.error());
  std::optional<ws::ArtifactId> artifact;
  const size_t colon = o.id.find(':');
  if (colon != std::string::npos) {
    auto ref = ws::parseObjectRef(o.id.substr(0, colon));
    if (!ref || (ref->kind != ws::ObjectKind::version && ref->kind != ws::ObjectKind::any))
      return reportError(
          Error{"cli", fmt::format("`{}`: give VERSION:FILE, e.g. v3:kernel.ttgir", o.id)});
    auto files = w->versionFiles(ws::VersionId(ref->value));
    if (!files) return reportError(files.error());
    const std::string name = o.id.substr(colon + 1);
    std::vector<std::string> names;
    for (const auto& f : *files) {
      if (f.name == name) artifact = f.artifact.id;
      names.push_back(f.name);
    }
    if (!artifact)
      return reportError(
          Error{"workspace", fmt::format("{} has no file `{}`; its files are: {}",
                                         o.id.substr(0, colon), name, fmt::join(names, ", "))});
  } else {
    auto ref = ws::parseObjectRef(o.id);
    if (!ref || (ref->kind != ws::ObjectKind::artifact && ref->kind != ws::ObjectKind::any))
      return reportError(Error{"cli", fmt::format("`{}`: give an artifact id (a12) or "
                                                  "VERSION:FILE (v3:kernel.ttgir)",
                                                  o.id)});
    artifact = ws::ArtifactId(ref->value);
  }
  auto bytes = w->readArtifact(*artifact);
  if (!bytes) return reportError(bytes.error());
  if (!o.output.empty()) {
    if (auto ok = writeFile(o.output, *bytes); !ok) return reportError(ok.error());
    return 0;
  }
  std::cout.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  return 0;
}

}  // namespace

std::vector<Command> addWorkspaceCommands(CLI::App& app) {
  auto* ws = app.add_subcommand(
      "ws",
      "Inspect and maintain the workspace (.argus/): versions, tasks, artifacts.\n"
      "Ids carry their table: v12 version, a34 artifact, t56 task, r7 run.");
  ws->require_subcommand(1);
  std::vector<Command> commands;
  auto add = [&](const char* name, const char* help, auto run) {
    auto o = std::make_shared<WsOptions>();
    auto* verb = ws->add_subcommand(name, help);
    addCommonOptions(verb, *o);
    commands.push_back(Command{verb, [o, run] { return run(*o); }});
    return std::pair{verb, o};
  };
  add("list", "List versions (with lineage), tasks and artifact totals", runList);
  auto [show, showOptions] =
      add("show", "Print one version, artifact, task or run with its lineage", runShow);
  show->add_option("ID", showOptions->id, "v12, a34, t56, r7, or a bare number")->required();
  auto [cat, catOptions] = add("cat",
                               "Write an artifact's bytes (a12) or a version's file "
                               "(v3:kernel.ttgir) to stdout or --output",
                               runCat);
  cat->add_option("ID", catOptions->id, "a12, or VERSION:FILE like v3:kernel.ttgir")->required();
  cat->add_option("-o,--output", catOptions->output, "Write to this file instead of stdout");
  add("gc", "Delete unreferenced blobs and killed writers' temp files, then verify", runGc);
  auto [fork, forkOptions] =
      add("fork", "Make a new program version from VERSION (same files), for edits", runFork);
  fork->add_option("VERSION", forkOptions->id, "Version to fork, e.g. v3")->required();
  fork->add_option("--label", forkOptions->label, "Label of the new version");
  fork->add_option("--file", forkOptions->files,
                   "NAME=PATH: add or replace a file in the fork, e.g. an optimizer's edited "
                   "kernel.ttgir (checked: its regions must parse); repeatable");
  return commands;
}

}  // namespace argus::cli
