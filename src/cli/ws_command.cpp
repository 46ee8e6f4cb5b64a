// `argus ws`: list, show, cat, check, gc and fork on a workspace.
#include "commands.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "argus/report/workspace.h"
#include "argus/session/workspace_ops.h"

namespace argus::cli {
namespace {

struct WsOptions {
  std::string workspace = ".argus";
  bool json = false;
  std::string id;
  std::string label;
  std::vector<std::string> files;  ///< fork: NAME=PATH files to add or replace.
  std::string regionsFile;         ///< fork: a region file the fork's queries use.
  std::string output;              ///< cat: write here instead of stdout.
  bool repair = false;             ///< check: repair what can be repaired.
};

void addCommonOptions(CLI::App* verb, WsOptions& o) {
  verb->add_option("--workspace", o.workspace, "Workspace directory")->capture_default_str();
  verb->add_flag("--json", o.json, "Machine-readable output (schema argus.workspace/1)");
}

/// Prints `shown` as JSON or text, the way every ws verb does.
template <class T>
void print(const T& shown, bool asJson) {
  if (asJson)
    std::cout << report::workspaceJson(shown).dump(2) << "\n";
  else
    std::cout << report::workspaceText(shown);
}

int runList(const WsOptions& o) {
  auto listing = session::listWorkspace(o.workspace);
  if (!listing) return reportError(listing.error());
  print(*listing, o.json);
  return 0;
}

int runShow(const WsOptions& o) {
  auto object = session::showObject(o.workspace, o.id);
  if (!object) return reportError(object.error());
  print(*object, o.json);
  return 0;
}

int runGc(const WsOptions& o) {
  auto outcome = session::collectGarbage(o.workspace);
  if (!outcome) return reportError(outcome.error());
  print(*outcome, o.json);
  if (!o.json) std::cerr << report::workspaceProblems(*outcome);
  return outcome->verify.ok() ? 0 : 1;
}

int runCheck(const WsOptions& o) {
  auto outcome = session::checkWorkspace(o.workspace, o.repair);
  if (!outcome) return reportError(outcome.error());
  print(*outcome, o.json);
  if (!o.json) std::cerr << report::workspaceProblems(*outcome);
  return outcome->ok() ? 0 : 1;
}

int runFork(const WsOptions& o) {
  auto outcome = session::forkVersion({.workspace = o.workspace,
                                       .version = o.id,
                                       .label = o.label,
                                       .files = o.files,
                                       .regionsFile = o.regionsFile});
  if (!outcome) return reportError(outcome.error());
  print(*outcome, o.json);
  return 0;
}

/// `argus ws cat ID`: the bytes of an artifact (a12) or of a version's file (v3:kernel.ttgir),
/// to stdout or --output.
int runCat(const WsOptions& o) {
  auto bytes = session::catObject({.workspace = o.workspace, .id = o.id, .output = o.output});
  if (!bytes) return reportError(bytes.error());
  if (o.output.empty()) std::cout.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
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
  auto [check, checkOptions] =
      add("check",
          "Verify every row (checksums, references, file names) and blob (content hash), and "
          "find what dead processes left (unfinished tasks, scratch folders, temp files); exit "
          "1 while problems remain",
          runCheck);
  check->add_flag("--repair", checkOptions->repair,
                  "Mark dead processes' unfinished tasks abandoned and remove their folders and "
                  "temp files (damaged rows and blobs are only reported: restore them)");
  add("gc",
      "Recover dead processes' tasks and folders, delete unreferenced blobs and killed writers' "
      "temp files, then verify",
      runGc);
  auto [fork, forkOptions] =
      add("fork", "Make a new program version from VERSION (same files), for edits", runFork);
  fork->add_option("VERSION", forkOptions->id, "Version to fork, e.g. v3")->required();
  fork->add_option("--label", forkOptions->label, "Label of the new version");
  fork->add_option("--regions-file", forkOptions->regionsFile,
                   "A region file (docs/regions-file.md) that becomes part of the fork: queries "
                   "on it (--version) derive its regions without editing the source");
  fork->add_option("--file", forkOptions->files,
                   "NAME=PATH: add or replace a file in the fork, e.g. an optimizer's edited "
                   "kernel.ttgir (checked: its regions must parse); repeatable");
  return commands;
}

}  // namespace argus::cli
