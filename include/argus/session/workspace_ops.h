// The workspace verbs' engine (`argus ws list|show|cat|check|gc|fork`): each opens an existing
// workspace, reads or changes it and returns what the report module renders
// (argus/report/workspace.h). The reading verbs (list, show, cat, check without --repair) open
// it read-only, so they work on a workspace nobody may write. Ids parse with their table's letter:
// v12, a34, t56, r7, or bare.
#pragma once

#include <string>
#include <vector>

#include "argus/report/workspace.h"
#include "argus/support/status.h"

namespace argus::session {

/// Every version with its lineage and files, every task and the artifact totals.
[[nodiscard]] Result<report::WorkspaceListing> listWorkspace(const std::string& workspace);

/// One object by id; a bare number is looked up in every table and must name exactly one.
[[nodiscard]] Result<report::WorkspaceObject> showObject(const std::string& workspace,
                                                         const std::string& id);

struct CatRequest {
  std::string workspace;
  std::string id;      ///< An artifact (a12) or a version's file (v3:kernel.ttgir).
  std::string output;  ///< Write the bytes here; empty: only return them.
};

/// The bytes of an artifact or of a version's file (also written to `output` when given).
[[nodiscard]] Result<std::string> catObject(const CatRequest& request);

/// Recovers stale tasks and dead processes' folders, deletes unreferenced blobs and killed
/// writers' temp files, then verifies every row and artifact.
[[nodiscard]] Result<report::GcOutcome> collectGarbage(const std::string& workspace);

/// Verifies every row (checksum, references, file names) and every blob (presence, content
/// hash) and finds stale state (unfinished tasks of dead processes, their folders, temp files of
/// killed writers); with `repair` (a writable open), marks those tasks abandoned and removes
/// that state. Damaged rows and blobs are reported, never changed.
[[nodiscard]] Result<report::CheckOutcome> checkWorkspace(const std::string& workspace,
                                                          bool repair);

struct ForkRequest {
  std::string workspace;
  std::string version;  ///< The version to fork (v3).
  std::string label;
  /// NAME=PATH: files to add or replace; a .ttgir/.ttir is checked (its regions must parse).
  std::vector<std::string> files;
  /// A region file (docs/regions-file.md) the fork's queries derive regions from; checked first.
  std::string regionsFile;
};

/// A new program version with `version`'s files and the request's replacements.
[[nodiscard]] Result<report::ForkOutcome> forkVersion(const ForkRequest& request);

/// A query's report as the workspace kept it (`argus report`): its JSON (argus.report/1) and
/// the text the query printed.
struct StoredReport {
  std::string id;       ///< The report artifact (`a57`).
  std::string version;  ///< The program version it belongs to (`v3`).
  std::string json;
  std::string text;
};

/// The report `ref` names: a report artifact (`a57`), the latest report of a program version
/// (`v3`), or `last`, the workspace's latest. The error says what exists instead.
[[nodiscard]] Result<StoredReport> findReport(const std::string& workspace, const std::string& ref);

}  // namespace argus::session
