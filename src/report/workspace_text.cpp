// Workspace listings and objects as argus.workspace/1 JSON and text (argus/report/workspace.h).
#include "argus/report/workspace.h"

#include <ctime>
#include <iterator>
#include <map>
#include <optional>

#include <fmt/chrono.h>
#include <fmt/format.h>

namespace argus::report {
namespace {

namespace ws = argus::workspace;
using json = nlohmann::ordered_json;

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

std::string taskDuration(const ws::TaskRecord& t) {
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
          {"owner", t.owner},
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

json provenanceJson(const ws::Provenance& p) {
  json inputs = json::array();
  for (const auto& in : p.inputs) inputs.push_back(provenanceJson(in));
  return {{"artifact", artifactJson(p.artifact)},
          {"version", p.version ? versionJson(*p.version) : json(nullptr)},
          {"task", p.task ? taskJson(*p.task) : json(nullptr)},
          {"inputs", inputs},
          {"truncated", p.truncated}};
}

void provenanceText(std::string& text, const ws::Provenance& p, int depth) {
  auto out = std::back_inserter(text);
  std::string indent(static_cast<std::size_t>(4 + 2 * depth), ' ');
  fmt::format_to(out, "{}{}{}\n", indent, depth == 0 ? "" : "<- ", artifactLine(p.artifact));
  if (p.task)
    fmt::format_to(out, "{}   made by {} ({} {}, attempt {}){}\n", indent, p.task->id.text(),
                   ws::toString(p.task->type), ws::toString(p.task->status), p.task->attempt,
                   p.version ? " for " + p.version->id.text() : "");
  for (const auto& in : p.inputs) provenanceText(text, in, depth + 1);
  if (p.truncated) fmt::format_to(out, "{}  <- ... (deeper inputs not shown)\n", indent);
}

// --- show: one object ---------------------------------------------------------------------

json objectJson(const VersionView& view) {
  json lineage = json::array(), fj = json::object(), evidence = json::array();
  for (const auto& c : view.lineage) lineage.push_back(versionJson(c));
  for (const auto& f : view.files) fj[f.name] = artifactJson(f.artifact);
  for (const auto& a : view.artifacts) evidence.push_back(artifactJson(a));
  return json{{"schema", "argus.workspace/1"},
              {"version", versionJson(view.lineage.front())},
              {"lineage", lineage},
              {"files", fj},
              {"artifacts", evidence}};
}

json objectJson(const ws::Provenance& p) {
  return json{{"schema", "argus.workspace/1"}, {"provenance", provenanceJson(p)}};
}

json objectJson(const TaskView& view) {
  json rj = json::array(), outputs = json::array();
  for (const auto& r : view.runs) rj.push_back(runJson(r));
  for (const auto& a : view.task.outputs) outputs.push_back(artifactJson(a));
  json j = taskJson(view.task);
  j["outputs"] = outputs;
  return json{{"schema", "argus.workspace/1"}, {"task", j}, {"runs", rj}};
}

json objectJson(const ws::RunRecord& r) {
  return json{{"schema", "argus.workspace/1"}, {"run", runJson(r)}};
}

std::string objectText(const VersionView& view) {
  std::string text;
  auto out = std::back_inserter(text);
  const auto& v = view.lineage.front();
  fmt::format_to(out, "{}  {}{}\n", v.id.text(), ws::toString(v.kind),
                 v.label.empty() ? "" : "  \"" + v.label + "\"");
  fmt::format_to(out, "  created  {}\n", timeText(v.createdAt));
  if (!v.transform.empty()) fmt::format_to(out, "  transform {} {}\n", v.transform, v.optionsJson);
  if (v.task) fmt::format_to(out, "  made by  {}\n", v.task->text());
  fmt::format_to(out, "  lineage\n");
  for (const auto& c : view.lineage)
    fmt::format_to(out, "    {}{:<6} {:<8} {}{}\n", c.id == v.id ? "" : "<- ", c.id.text(),
                   ws::toString(c.kind), c.transform.empty() ? "(root)" : c.transform,
                   c.label.empty() ? "" : "  \"" + c.label + "\"");
  fmt::format_to(out, "  files\n");
  if (view.files.empty()) fmt::format_to(out, "    (none)\n");
  for (const auto& f : view.files)
    fmt::format_to(out, "    {:<20} {}\n", f.name, artifactLine(f.artifact));
  fmt::format_to(out, "  artifacts bound to {} ({})\n", v.id.text(), view.artifacts.size());
  for (const auto& a : view.artifacts) fmt::format_to(out, "    {}\n", artifactLine(a));
  return text;
}

std::string objectText(const ws::Provenance& p) {
  std::string text;
  auto out = std::back_inserter(text);
  const auto& a = p.artifact;
  fmt::format_to(out, "{}  {}{}\n", a.id.text(), a.kind, a.name.empty() ? "" : "  " + a.name);
  fmt::format_to(out, "  version  {}\n  scope    {}\n", a.version ? a.version->text() : "(none)",
                 a.scope.empty() ? "(whole program)" : a.scope);
  fmt::format_to(out, "  hash     {}\n  size     {} ({} stored, {}{})\n", a.hash.hex(),
                 humanBytes(a.size), humanBytes(a.storedSize), ws::toString(a.compression),
                 a.storedInline ? ", in the database" : "");
  fmt::format_to(out, "  created  {}\n  provenance\n", timeText(a.createdAt));
  provenanceText(text, p, 0);
  return text;
}

std::string objectText(const TaskView& view) {
  std::string text;
  auto out = std::back_inserter(text);
  const auto* t = &view.task;
  fmt::format_to(out, "{}  {} {}  attempt {}\n", t->id.text(), ws::toString(t->type),
                 ws::toString(t->status), t->attempt);
  fmt::format_to(out, "  version  {}\n  memo key {}\n  descriptor {}\n",
                 t->version ? t->version->text() : "(none)", t->memoKey.hex(), t->descriptorJson);
  fmt::format_to(out, "  queued   {}\n", timeText(t->queuedAt));
  if (t->startedAt) fmt::format_to(out, "  started  {}\n", timeText(*t->startedAt));
  if (t->endedAt)
    fmt::format_to(out, "  ended    {}  ({})\n", timeText(*t->endedAt), taskDuration(*t));
  if (!t->error.empty()) fmt::format_to(out, "  error    {}\n", t->error);
  if (t->log)
    fmt::format_to(out, "  log      {} (`argus ws show {}`)\n", t->log->text(), t->log->text());
  fmt::format_to(out, "  inputs\n");
  if (t->inputs.empty()) fmt::format_to(out, "    (none)\n");
  for (const auto& a : view.inputs) fmt::format_to(out, "    {}\n", artifactLine(a));
  fmt::format_to(out, "  outputs\n");
  if (t->outputs.empty()) fmt::format_to(out, "    (none)\n");
  for (const auto& a : t->outputs) fmt::format_to(out, "    {}\n", artifactLine(a));
  for (const auto& r : view.runs)
    fmt::format_to(out, "  run {}  device {}  backend {}  environment {}\n", r.id.text(), r.device,
                   r.backendConfigJson, r.environmentJson);
  return text;
}

std::string objectText(const ws::RunRecord& r) {
  return fmt::format(
      "{}  of task {}\n  device   {}\n  backend  {}\n  environment {}\n  created  {}\n",
      r.id.text(), r.task.text(), r.device, r.backendConfigJson, r.environmentJson,
      timeText(r.createdAt));
}

}  // namespace

// --- list ---------------------------------------------------------------------------------

json workspaceJson(const WorkspaceListing& listing) {
  json vs = json::array(), ts = json::array(), kinds = json::array();
  for (const auto& v : listing.versions) {
    json j = versionJson(v.record);
    json lineage = json::array();
    for (const auto& c : v.lineage) lineage.push_back(c.id.text());
    j["lineage"] = lineage;
    json fj = json::object();
    for (const auto& f : v.files) fj[f.name] = f.artifact.id.text();
    j["files"] = fj;
    vs.push_back(j);
  }
  for (const auto& t : listing.tasks) ts.push_back(taskJson(t));
  const auto& stats = listing.stats;
  for (const auto& k : stats.byKind)
    kinds.push_back({{"kind", k.kind}, {"count", k.count}, {"bytes", k.bytes}});
  return json{{"schema", "argus.workspace/1"},
              {"workspace", listing.directory},
              {"versions", vs},
              {"tasks", ts},
              {"artifacts",
               {{"count", stats.artifacts},
                {"bytes", stats.artifactBytes},
                {"blobs", stats.blobs},
                {"stored_bytes", stats.blobBytes},
                {"by_kind", kinds}}}};
}

std::string workspaceText(const WorkspaceListing& listing) {
  std::string text;
  auto out = std::back_inserter(text);
  std::map<std::int64_t, ws::VersionRecord> byId;
  for (const auto& v : listing.versions) byId.emplace(v.record.id.value(), v.record);
  fmt::format_to(out, "workspace {}\n\nversions ({})\n", listing.directory,
                 listing.versions.size());
  if (listing.versions.empty()) fmt::format_to(out, "  (none)\n");
  for (const auto& version : listing.versions) {
    const auto& v = version.record;
    std::string names;
    for (const auto& f : version.files) names += (names.empty() ? "" : ", ") + f.name;
    std::string how = v.transform.empty() ? "" : v.transform;
    if (!v.transform.empty() && v.optionsJson != "{}") how += " " + v.optionsJson;
    fmt::format_to(out, "  {:<6} {:<8} {:<24} {}{}{}\n", v.id.text(), ws::toString(v.kind),
                   chainText(byId, v.id), v.label.empty() ? "" : "\"" + v.label + "\"  ",
                   how.empty() ? "" : how + "  ", names);
  }
  fmt::format_to(out, "\ntasks ({})\n", listing.tasks.size());
  if (listing.tasks.empty()) fmt::format_to(out, "  (none)\n");
  for (const auto& t : listing.tasks) {
    fmt::format_to(out, "  {:<6} {:<10} {:<10} attempt {}  {}  {:>8}  {}{}{}\n", t.id.text(),
                   ws::toString(t.status), ws::toString(t.type), t.attempt, timeText(t.queuedAt),
                   taskDuration(t), t.version ? t.version->text() : "-",
                   t.outputs.empty() ? "" : "  -> " + idList(t.outputs),
                   t.error.empty() ? "" : "  error: " + t.error);
  }
  const auto& stats = listing.stats;
  fmt::format_to(out, "\nartifacts: {} ({}), in {} blobs using {}\n", stats.artifacts,
                 humanBytes(stats.artifactBytes), stats.blobs, humanBytes(stats.blobBytes));
  for (const auto& k : stats.byKind)
    fmt::format_to(out, "  {:<16} {:>6}  {}\n", k.kind, k.count, humanBytes(k.bytes));
  fmt::format_to(
      out, "\nids: v = version, a = artifact, t = task, r = run; `argus ws show ID` prints one\n");
  return text;
}

// --- show ---------------------------------------------------------------------------------

json workspaceJson(const WorkspaceObject& object) {
  return std::visit([](const auto& o) { return objectJson(o); }, object);
}

std::string workspaceText(const WorkspaceObject& object) {
  return std::visit([](const auto& o) { return objectText(o); }, object);
}

// --- gc / fork ----------------------------------------------------------------------------

namespace {

json verifyJson(const workspace::VerifyReport& check) {
  return json{{"ok", check.ok()},
              {"rows_checked", check.rowsChecked},
              {"artifacts_checked", check.artifactsChecked},
              {"blobs_checked", check.blobsChecked},
              {"problems", check.problems}};
}

json recoveryJson(const workspace::RecoveryReport& r) {
  json folders = json::array();
  for (const auto& f : r.staleFolders) folders.push_back(f.string());
  return json{{"stale_tasks", r.staleTasks},
              {"tasks_abandoned", r.tasksAbandoned},
              {"stale_folders", folders},
              {"folders_removed", r.foldersRemoved},
              {"tasks_of_unknown_owner", r.tasksOfUnknownOwner}};
}

/// "recovered 2 stale tasks (t4, t5) and 1 folder of dead processes", or "" when none.
std::string recoveryText(const workspace::RecoveryReport& r, bool repaired) {
  std::string text;
  if (!r.staleTasks.empty()) {
    std::vector<std::string> ids;
    for (const auto& t : r.staleTasks) ids.push_back(t.substr(0, t.find(' ')));
    text += fmt::format("{} {} task{} left unfinished by dead processes ({})\n",
                        repaired ? "marked abandoned:" : "found", r.staleTasks.size(),
                        r.staleTasks.size() == 1 ? "" : "s", fmt::join(ids, ", "));
  }
  if (!r.staleFolders.empty())
    text +=
        fmt::format("{} {} scratch folder{} and lease{} of dead processes\n",
                    repaired ? "removed" : "found", r.staleFolders.size(),
                    r.staleFolders.size() == 1 ? "" : "s", r.staleFolders.size() == 1 ? "" : "s");
  if (r.tasksOfUnknownOwner > 0)
    text += fmt::format(
        "left alone: {} unfinished task{} recorded by an older argus, whose owner cannot be told "
        "while another argus has the workspace open\n",
        r.tasksOfUnknownOwner, r.tasksOfUnknownOwner == 1 ? "" : "s");
  return text;
}

}  // namespace

json workspaceJson(const GcOutcome& outcome) {
  const auto& gc = outcome.gc;
  return json{{"schema", "argus.workspace/1"},
              {"workspace", outcome.directory},
              {"bytes_freed", gc.bytesFreed},
              {"blobs_removed", gc.blobsRemoved},
              {"temp_files_removed", gc.tempFilesRemoved},
              {"blobs_kept", gc.blobsKept},
              {"recovery", recoveryJson(outcome.recovery)},
              {"verify", verifyJson(outcome.verify)}};
}

std::string workspaceText(const GcOutcome& outcome) {
  const auto& gc = outcome.gc;
  const auto& check = outcome.verify;
  std::string text = recoveryText(outcome.recovery, true);
  text += fmt::format(
      "freed {} ({} unreferenced blobs, {} temp files of killed writers); {} blobs kept\n",
      humanBytes(gc.bytesFreed), gc.blobsRemoved, gc.tempFilesRemoved, gc.blobsKept);
  if (check.ok())
    text += fmt::format("verified {} rows, {} artifacts in {} blobs: ok\n", check.rowsChecked,
                        check.artifactsChecked, check.blobsChecked);
  return text;
}

std::vector<std::string> CheckOutcome::remaining() const {
  std::vector<std::string> out = verify.problems;
  if (!repair) {
    for (const auto& t : recovery.staleTasks)
      out.push_back(
          fmt::format("task {} is unfinished and its process is gone; `argus ws check "
                      "--repair` marks it abandoned",
                      t));
    for (const auto& f : recovery.staleFolders)
      out.push_back(
          fmt::format("{} belongs to a dead process; `argus ws check --repair` removes "
                      "it",
                      f.string()));
    if (verify.strayTempFiles > 0)
      out.push_back(
          fmt::format("{} temp files of killed blob writers in {}/tmp; `argus ws check "
                      "--repair` removes them",
                      verify.strayTempFiles, directory));
  } else {
    if (recovery.tasksAbandoned < recovery.staleTasks.size())
      out.push_back(fmt::format("{} stale tasks could not be marked abandoned",
                                recovery.staleTasks.size() - recovery.tasksAbandoned));
    if (recovery.foldersRemoved < recovery.staleFolders.size())
      out.push_back(fmt::format("{} folders of dead processes could not be removed",
                                recovery.staleFolders.size() - recovery.foldersRemoved));
    if (tempFilesRemoved < verify.strayTempFiles)
      out.push_back(fmt::format("{} temp files in {}/tmp could not be removed",
                                verify.strayTempFiles - tempFilesRemoved, directory));
  }
  return out;
}

json workspaceJson(const CheckOutcome& outcome) {
  return json{{"schema", "argus.workspace/1"},
              {"workspace", outcome.directory},
              {"ok", outcome.ok()},
              {"repair", outcome.repair},
              {"verify", verifyJson(outcome.verify)},
              {"recovery", recoveryJson(outcome.recovery)},
              {"stray_temp_files", outcome.verify.strayTempFiles},
              {"temp_files_removed", outcome.tempFilesRemoved},
              {"problems", outcome.remaining()}};
}

std::string workspaceText(const CheckOutcome& outcome) {
  const auto& v = outcome.verify;
  std::string text =
      fmt::format("checked {}: {} rows, {} artifacts in {} blobs: {}\n", outcome.directory,
                  v.rowsChecked, v.artifactsChecked, v.blobsChecked,
                  v.ok() ? "no damage" : fmt::format("{} problems", v.problems.size()));
  text += recoveryText(outcome.recovery, outcome.repair);
  if (v.strayTempFiles > 0)
    text += outcome.repair
                ? fmt::format("removed {} temp files of killed blob writers\n",
                              outcome.tempFilesRemoved)
                : fmt::format("found {} temp files of killed blob writers\n", v.strayTempFiles);
  const auto left = outcome.remaining();
  text += left.empty() ? std::string("ok\n")
                       : fmt::format("{} problem{} remain{}\n", left.size(),
                                     left.size() == 1 ? "" : "s", left.size() == 1 ? "s" : "");
  return text;
}

std::string workspaceProblems(const CheckOutcome& outcome) {
  std::string text;
  for (const auto& p : outcome.remaining()) text += fmt::format("argus: workspace: {}\n", p);
  return text;
}

std::string workspaceProblems(const GcOutcome& outcome) {
  std::string text;
  for (const auto& p : outcome.verify.problems) text += fmt::format("argus: workspace: {}\n", p);
  return text;
}

json workspaceJson(const ForkOutcome& outcome) {
  return json{{"schema", "argus.workspace/1"},
              {"id", outcome.id.text()},
              {"base", outcome.base.text()},
              {"label", outcome.label}};
}

std::string workspaceText(const ForkOutcome& outcome) {
  return fmt::format("{} (fork of {}{})\n", outcome.id.text(), outcome.base.text(),
                     outcome.label.empty() ? "" : ", \"" + outcome.label + "\"");
}

}  // namespace argus::report
