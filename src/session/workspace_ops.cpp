// The workspace verbs' engine (argus/session/workspace_ops.h). Errors about the ids and files a
// user typed carry the component `cli`, as the verbs have always printed them.
#include "argus/session/workspace_ops.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "argus/program/region_file.h"
#include "argus/support/process.h"
#include "argus/ttgir/regions.h"
#include "argus/workspace/workspace.h"

namespace argus::session {
namespace {

namespace fs = std::filesystem;
namespace ws = argus::workspace;

/// For the verbs that change the workspace.
Result<ws::Workspace> openExisting(const std::string& workspace) {
  return ws::Workspace::open(workspace, ws::OpenOptions{.create = false});
}

/// For the verbs that only read it: nothing is written (no lease, no recovery).
Result<ws::Workspace> openToRead(const std::string& workspace) {
  return ws::Workspace::open(workspace, ws::OpenOptions{.create = false, .readOnly = true});
}

Result<report::WorkspaceObject> versionView(ws::Workspace& w, ws::VersionId id) {
  auto chain = w.lineage(id);
  if (!chain) return std::unexpected(chain.error());
  auto files = w.versionFiles(id);
  if (!files) return std::unexpected(files.error());
  auto bound = w.artifactsOf(id);
  if (!bound) return std::unexpected(bound.error());
  return report::VersionView{std::move(*chain), std::move(*files), std::move(*bound)};
}

Result<report::WorkspaceObject> artifactView(ws::Workspace& w, ws::ArtifactId id) {
  auto p = w.provenance(id);
  if (!p) return std::unexpected(p.error());
  return std::move(*p);
}

Result<report::WorkspaceObject> taskView(ws::Workspace& w, ws::TaskId id) {
  auto t = w.task(id);
  if (!t) return std::unexpected(t.error());
  auto runs = w.runsOf(id);
  if (!runs) return std::unexpected(runs.error());
  report::TaskView view{std::move(*t), {}, std::move(*runs)};
  for (auto in : view.task.inputs) {
    auto a = w.artifact(in);
    if (!a) return std::unexpected(a.error());
    view.inputs.push_back(std::move(*a));
  }
  return view;
}

Result<report::WorkspaceObject> runView(ws::Workspace& w, ws::RunId id) {
  auto r = w.run(id);
  if (!r) return std::unexpected(r.error());
  return std::move(*r);
}

}  // namespace

Result<report::WorkspaceListing> listWorkspace(const std::string& workspace) {
  auto w = openToRead(workspace);
  if (!w) return std::unexpected(w.error());
  auto versions = w->versions();
  if (!versions) return std::unexpected(versions.error());
  auto tasks = w->tasks();
  if (!tasks) return std::unexpected(tasks.error());
  auto stats = w->stats();
  if (!stats) return std::unexpected(stats.error());
  report::WorkspaceListing listing{
      w->directory().string(), {}, std::move(*tasks), std::move(*stats)};
  for (auto& v : *versions) {
    auto chain = w->lineage(v.id);
    if (!chain) return std::unexpected(chain.error());
    auto files = w->versionFiles(v.id);
    if (!files) return std::unexpected(files.error());
    listing.versions.push_back({std::move(v), std::move(*chain), std::move(*files)});
  }
  return listing;
}

Result<report::WorkspaceObject> showObject(const std::string& workspace, const std::string& id) {
  auto ref = ws::parseObjectRef(id);
  if (!ref) return fail("cli", ref.error().message);
  auto w = openToRead(workspace);
  if (!w) return std::unexpected(w.error());
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
      return fail("workspace",
                  fmt::format("no version, artifact, task or run with id {} in {}; `argus ws "
                              "list` shows what exists",
                              ref->value, w->directory().string()));
    if (found.size() > 1)
      return fail("cli", fmt::format("id {} is ambiguous: {} exist; add the prefix", ref->value,
                                     fmt::join(found, ", ")));
    kind = kinds.front();
  }
  switch (kind) {
    case ws::ObjectKind::version:
      return versionView(*w, ws::VersionId(ref->value));
    case ws::ObjectKind::artifact:
      return artifactView(*w, ws::ArtifactId(ref->value));
    case ws::ObjectKind::task:
      return taskView(*w, ws::TaskId(ref->value));
    case ws::ObjectKind::run:
    case ws::ObjectKind::any:
      break;
  }
  return runView(*w, ws::RunId(ref->value));
}

Result<std::string> catObject(const CatRequest& o) {
  auto w = openToRead(o.workspace);
  if (!w) return std::unexpected(w.error());
  std::optional<ws::ArtifactId> artifact;
  const size_t colon = o.id.find(':');
  if (colon != std::string::npos) {
    auto ref = ws::parseObjectRef(o.id.substr(0, colon));
    if (!ref || (ref->kind != ws::ObjectKind::version && ref->kind != ws::ObjectKind::any))
      return fail("cli", fmt::format("`{}`: give VERSION:FILE, e.g. v3:kernel.ttgir", o.id));
    auto files = w->versionFiles(ws::VersionId(ref->value));
    if (!files) return std::unexpected(files.error());
    const std::string name = o.id.substr(colon + 1);
    std::vector<std::string> names;
    for (const auto& f : *files) {
      if (f.name == name) artifact = f.artifact.id;
      names.push_back(f.name);
    }
    if (!artifact)
      return fail("workspace", fmt::format("{} has no file `{}`; its files are: {}",
                                           o.id.substr(0, colon), name, fmt::join(names, ", ")));
  } else {
    auto ref = ws::parseObjectRef(o.id);
    if (!ref || (ref->kind != ws::ObjectKind::artifact && ref->kind != ws::ObjectKind::any))
      return fail("cli", fmt::format("`{}`: give an artifact id (a12) or "
                                     "VERSION:FILE (v3:kernel.ttgir)",
                                     o.id));
    artifact = ws::ArtifactId(ref->value);
  }
  auto bytes = w->readArtifact(*artifact);
  if (!bytes) return std::unexpected(bytes.error());
  if (!o.output.empty())
    if (auto ok = writeFile(o.output, *bytes); !ok) return std::unexpected(ok.error());
  return std::move(*bytes);
}

Result<report::GcOutcome> collectGarbage(const std::string& workspace) {
  // Recovery explicitly, not on open, so that the outcome says what it did.
  auto w = ws::Workspace::open(workspace, ws::OpenOptions{.create = false, .recover = false});
  if (!w) return std::unexpected(w.error());
  auto recovery = w->recover(true);
  if (!recovery) return std::unexpected(recovery.error());
  auto gc = w->gc();
  if (!gc) return std::unexpected(gc.error());
  auto check = w->verify();
  if (!check) return std::unexpected(check.error());
  return report::GcOutcome{w->directory().string(), *gc, std::move(*check), std::move(*recovery)};
}

Result<report::CheckOutcome> checkWorkspace(const std::string& workspace, bool repair) {
  auto w = repair
               ? ws::Workspace::open(workspace, ws::OpenOptions{.create = false, .recover = false})
               : openToRead(workspace);
  if (!w) return std::unexpected(w.error());
  report::CheckOutcome outcome;
  outcome.directory = w->directory().string();
  outcome.repair = repair;
  auto recovery = w->recover(repair);
  if (!recovery) return std::unexpected(recovery.error());
  outcome.recovery = std::move(*recovery);
  if (repair) {
    auto removed = w->removeStrayTempFiles();
    if (!removed) return std::unexpected(removed.error());
    outcome.tempFilesRemoved = *removed;
  }
  auto check = w->verify();
  if (!check) return std::unexpected(check.error());
  outcome.verify = std::move(*check);
  // What repair removed is no longer there to count; report what was found.
  outcome.verify.strayTempFiles += outcome.tempFilesRemoved;
  return outcome;
}

Result<report::ForkOutcome> forkVersion(const ForkRequest& o) {
  auto ref = ws::parseObjectRef(o.version);
  if (!ref) return fail("cli", ref.error().message);
  if (ref->kind != ws::ObjectKind::version && ref->kind != ws::ObjectKind::any)
    return fail("cli",
                fmt::format("`{}` is not a version; fork takes a version id like v3", o.version));
  auto w = openExisting(o.workspace);
  if (!w) return std::unexpected(w.error());
  ws::VersionId base(ref->value);
  ws::NewVersion nv;
  nv.kind = ws::VersionKind::program;
  nv.base = base;
  nv.transform = "fork";
  nv.label = o.label;
  for (const auto& spec : o.files) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return fail("cli", fmt::format("--file `{}`: use NAME=PATH, e.g. "
                                     "kernel.ttgir=edited.ttgir",
                                     spec));
    const std::string name = spec.substr(0, eq);
    const fs::path path = spec.substr(eq + 1);
    auto bytes = readFile(path);
    if (!bytes) return std::unexpected(bytes.error());
    const std::string ext = fs::path(name).extension().string();
    std::string kind = "file";
    if (ext == ".ttgir" || ext == ".ttir") {
      // An optimizer's edit is checked before it becomes a version: its regions must parse.
      auto regions = ttgir::analyzeRegions(*bytes, path.string());
      if (!regions) return std::unexpected(regions.error());
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
  if (!o.regionsFile.empty()) {
    // An agent's region definitions, checked before they become part of a version.
    auto bytes = readFile(o.regionsFile);
    if (!bytes) return std::unexpected(bytes.error());
    if (auto defs = program::parseRegionFile(*bytes, o.regionsFile); !defs)
      return std::unexpected(defs.error());
    nv.files.push_back(
        {fs::path(o.regionsFile).filename().string(), "region_file", std::move(*bytes)});
  }
  auto id = w->addVersion(nv);
  if (!id) return std::unexpected(id.error());
  return report::ForkOutcome{*id, base, o.label};
}

Result<StoredReport> findReport(const std::string& workspace, const std::string& ref) {
  auto w = openToRead(workspace);
  if (!w) return std::unexpected(w.error());
  auto versions = w->versions();
  if (!versions) return std::unexpected(versions.error());
  std::vector<ws::ArtifactRecord> reports, texts;
  for (const auto& v : *versions) {
    auto artifacts = w->artifactsOf(v.id);
    if (!artifacts) return std::unexpected(artifacts.error());
    for (const auto& a : *artifacts) {
      if (a.kind == "report") reports.push_back(a);
      if (a.kind == "report_text") texts.push_back(a);
    }
  }
  auto newest = [](const ws::ArtifactRecord& a, const ws::ArtifactRecord& b) {
    return a.id.value() < b.id.value();
  };
  const ws::ArtifactRecord* chosen = nullptr;
  std::string wanted = "a report";
  if (ref == "last") {
    if (!reports.empty()) chosen = &*std::max_element(reports.begin(), reports.end(), newest);
  } else {
    auto parsed = ws::parseObjectRef(ref);
    if (!parsed ||
        (parsed->kind != ws::ObjectKind::artifact && parsed->kind != ws::ObjectKind::version))
      return fail("report", fmt::format("`{}`: give a report artifact (a57), a program version "
                                        "(v3: its latest report) or `last`",
                                        ref));
    for (const auto& a : reports) {
      const bool match = parsed->kind == ws::ObjectKind::artifact
                             ? a.id.value() == parsed->value
                             : a.version && a.version->value() == parsed->value;
      if (match && (chosen == nullptr || newest(*chosen, a))) chosen = &a;
    }
    wanted = parsed->kind == ws::ObjectKind::artifact ? fmt::format("report {}", ref)
                                                      : fmt::format("a report of {}", ref);
  }
  if (chosen == nullptr) {
    std::vector<std::string> have;
    for (const auto& a : reports)
      have.push_back(fmt::format("{} ({})", a.id.text(), a.version ? a.version->text() : "-"));
    return fail("report", fmt::format("{} holds no {}; {}", workspace, wanted,
                                      have.empty() ? "it holds none: `argus query` keeps each "
                                                     "report it prints"
                                                   : "its reports: " +
                                                         fmt::format("{}", fmt::join(have, ", "))));
  }
  StoredReport out;
  out.id = chosen->id.text();
  out.version = chosen->version ? chosen->version->text() : "";
  auto json = w->readArtifact(chosen->id);
  if (!json) return std::unexpected(json.error());
  out.json = std::move(*json);
  for (const auto& t : texts)
    if (t.name == "report-" + out.id + ".txt") {
      auto text = w->readArtifact(t.id);
      if (!text) return std::unexpected(text.error());
      out.text = std::move(*text);
    }
  return out;
}

}  // namespace argus::session
