// What `argus ws` shows of a workspace: the listing, one object (version, artifact, task, run),
// the outcome of gc, check and fork, as argus.workspace/1 JSON and as text. The session fills these
// (argus/session/workspace_ops.h); ids print with their table's letter (v12, a34, t56, r7).
#pragma once

#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/workspace/workspace.h"

namespace argus::report {

/// Every version (with its files and lineage), every task, and the artifact totals.
struct WorkspaceListing {
  std::string directory;
  struct Version {
    workspace::VersionRecord record;
    std::vector<workspace::VersionRecord> lineage;  ///< From the version to its root.
    std::vector<workspace::VersionFile> files;
  };
  std::vector<Version> versions;
  std::vector<workspace::TaskRecord> tasks;
  workspace::WorkspaceStats stats;
};

/// One version: its lineage (front: the version), its files and the artifacts bound to it.
struct VersionView {
  std::vector<workspace::VersionRecord> lineage;
  std::vector<workspace::VersionFile> files;
  std::vector<workspace::ArtifactRecord> artifacts;
};

/// One task: its record (outputs included), its input artifacts and its runs.
struct TaskView {
  workspace::TaskRecord task;
  std::vector<workspace::ArtifactRecord> inputs;
  std::vector<workspace::RunRecord> runs;
};

/// One object of a workspace; an artifact shows with its provenance.
using WorkspaceObject =
    std::variant<VersionView, workspace::Provenance, TaskView, workspace::RunRecord>;

/// What gc removed (with what recovery found and repaired first) and what the verification
/// after it found.
struct GcOutcome {
  std::string directory;
  workspace::GcReport gc;
  workspace::VerifyReport verify;
  workspace::RecoveryReport recovery;
};

/// What `argus ws check` found and, with --repair, repaired. Damaged rows and blobs cannot be
/// repaired (history is immutable); they stay problems until restored.
struct CheckOutcome {
  std::string directory;
  bool repair = false;
  workspace::VerifyReport verify;
  workspace::RecoveryReport recovery;
  std::uint64_t tempFilesRemoved = 0;  ///< Of verify.strayTempFiles (repair).
  /// Problems that remain: every damaged row or blob, plus stale state left unrepaired.
  [[nodiscard]] std::vector<std::string> remaining() const;
  [[nodiscard]] bool ok() const { return remaining().empty(); }
};

/// A version made by fork.
struct ForkOutcome {
  workspace::VersionId id;
  workspace::VersionId base;
  std::string label;
};

[[nodiscard]] nlohmann::ordered_json workspaceJson(const WorkspaceListing& listing);
[[nodiscard]] std::string workspaceText(const WorkspaceListing& listing);

[[nodiscard]] nlohmann::ordered_json workspaceJson(const WorkspaceObject& object);
[[nodiscard]] std::string workspaceText(const WorkspaceObject& object);

[[nodiscard]] nlohmann::ordered_json workspaceJson(const GcOutcome& outcome);
/// The freed and verified lines; the verification's problems are not part of it (the fronts
/// show them as errors, workspaceProblems()).
[[nodiscard]] std::string workspaceText(const GcOutcome& outcome);
/// "argus: workspace: PROBLEM" per problem the verification found.
[[nodiscard]] std::string workspaceProblems(const GcOutcome& outcome);

[[nodiscard]] nlohmann::ordered_json workspaceJson(const CheckOutcome& outcome);
/// What was checked, found and repaired; the remaining problems are workspaceProblems().
[[nodiscard]] std::string workspaceText(const CheckOutcome& outcome);
/// "argus: workspace: PROBLEM" per remaining problem.
[[nodiscard]] std::string workspaceProblems(const CheckOutcome& outcome);

[[nodiscard]] nlohmann::ordered_json workspaceJson(const ForkOutcome& outcome);
[[nodiscard]] std::string workspaceText(const ForkOutcome& outcome);

}  // namespace argus::report
