// The Argus workspace: content-addressed blobs plus an SQLite database of program versions,
// artifacts, tasks and runs (docs/architecture.md pipeline step 5).
//
// Layout of a workspace directory (default `.argus/` beside the program):
//   argus.db (+ -wal, -shm)   metadata, SQLite in WAL mode
//   blobs/ab/<32 hex>[.zst]  one file per distinct content over 4 KiB, named by its XXH3-128
//                            hash; `.zst` when stored zstd-compressed (only if that saves >= 10 %)
//                            Contents up to 4 KiB live in the database (table inline_blobs):
//                            one file per small output would cost a file creation each.
//   tmp/                     blob writes in progress; renamed into blobs/ when complete
//   lock                     flock: publishers hold it shared, gc exclusive
//   owners/<token>.lock      one per process that has the workspace open for writing, flocked
//                            by it for as long as it is open: a lock that can be taken belongs
//                            to a dead process (robust to pid reuse, unlike a recorded pid)
//   owners/<token>/          that process's scratch space (a query's task directories);
//                            removed when it closes the workspace, or by a later process's
//                            recovery when it died
//   .gitignore               `*`, written when open() makes the directory: git ignores it
//
// Guarantees:
// - Immutable: rows are append-only (SQLite triggers reject updates and deletes), except that a
//   task's status moves forward once: queued -> running -> succeeded/failed/timed_out/cancelled.
//   A blob with an existing hash is reused, never rewritten.
// - Checked: every metadata row carries a checksum of its columns, verified whenever the row is
//   read, and every blob is checked against its content hash when read, so a damaged database
//   or blob is an error naming it, never different metadata or bytes.
// - Owned: each unfinished task records the process that runs it (its owners/ token); a task
//   whose owner died is stale, and recovery (on a writable open, `ws gc`, `ws check --repair`)
//   marks it failed ("abandoned: ...") and removes the dead owner's scratch folder.
// - Crash consistent: a blob is written to tmp/, fsynced, renamed into place and its directory
//   fsynced before the row that names it commits, so a process killed at any point leaves only
//   complete blobs visible; stray temp files are removed by gc().
// - Durability: `PRAGMA synchronous=NORMAL` under WAL. A killed process loses nothing it
//   committed; a power loss may drop the last few commits (never corrupts, never leaves a row
//   naming a missing blob). That keeps one publish at tens of microseconds plus the blob fsync.
// - Concurrency: several processes may use one workspace at once (WAL, BEGIN IMMEDIATE,
//   busy timeout). Each Workspace object serializes its own calls, so it is [thread-safe];
//   throughput is higher with one object per thread.
// - Joins are safe by construction: evidence is only returned for a named version and scope.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "argus/support/status.h"
#include "argus/workspace/hash.h"
#include "argus/workspace/ids.h"

namespace argus::workspace {

/// The schema version this build writes; a workspace with a newer one is refused, one with an
/// older one is migrated when opened for writing. 2: row checksums, task owners and version
/// content keys.
inline constexpr int kSchemaVersion = 2;

/// Contents up to this size are stored in the database instead of a blob file.
inline constexpr std::size_t kInlineBlobLimit = 4096;

enum class VersionKind { program, variant };
enum class TaskType { transform, collect, synthesize, control };
enum class TaskStatus { queued, running, succeeded, failed, timed_out, cancelled };
enum class Compression { none, zstd };

/// Lower-case names as stored in the database and printed ("program", "timed_out", "zstd").
[[nodiscard]] std::string_view toString(VersionKind kind);
[[nodiscard]] std::string_view toString(TaskType type);
[[nodiscard]] std::string_view toString(TaskStatus status);
[[nodiscard]] std::string_view toString(Compression compression);

/// memoKey(toString(type), descriptor, inputHashes).
[[nodiscard]] ContentHash memoKey(TaskType type, const nlohmann::json& descriptor,
                                  std::span<const ContentHash> inputHashes);

/// Milliseconds since the Unix epoch (wall clock), as stored.
using TimestampMs = std::int64_t;

/// A published artifact: immutable metadata of one blob bound to a version, scope and task.
struct ArtifactRecord {
  ArtifactId id{};
  std::string kind{};   ///< "ptx", "cubin", "region_trace", "log", "cuda_source", ...
  std::string name{};   ///< File name or role ("kernel.ptx"); may be empty.
  std::string scope{};  ///< Scope coordinates the evidence covers; may be empty.
  std::optional<VersionId> version{};  ///< The program version it belongs to.
  std::optional<TaskId> task{};        ///< The task that produced it; none for user inputs.
  ContentHash hash{};                  ///< Of the uncompressed bytes.
  std::uint64_t size = 0;              ///< Uncompressed bytes.
  std::uint64_t storedSize = 0;        ///< Bytes of the blob file.
  Compression compression = Compression::none;
  bool storedInline = false;  ///< In the database rather than a blob file (small contents).
  TimestampMs createdAt = 0;
};

/// An artifact to publish. `version` defaults to the producing task's version.
struct NewArtifact {
  std::string kind{};
  std::string name{};
  std::string scope{};
  std::optional<VersionId> version{};
  std::string bytes{};
};

/// A program version (the user's program or an edited fork) or a measurement variant.
struct VersionRecord {
  VersionId id{};
  VersionKind kind = VersionKind::program;
  std::optional<VersionId> base{};  ///< The version it was derived from; none for a root.
  std::string transform{};    ///< How it was derived from base ("paint", "fork"; "" for roots).
  std::string optionsJson{};  ///< Canonical JSON options of the transform.
  std::string label{};
  std::optional<TaskId> task{};  ///< The task that made it, if any.
  TimestampMs createdAt = 0;
};

/// Checks that `name` can name a file of a version: one plain path component (not empty, not
/// `.` or `..`, no `/`, `\` or NUL), so that a checkout of the version writes only inside its own
/// directory, whoever made the workspace. The error names the file and says what to give.
[[nodiscard]] Result<void> checkVersionFileName(std::string_view name);

/// A named file that makes a version up ("kernel.cu" -> artifact).
struct VersionFile {
  std::string name{};
  ArtifactRecord artifact{};
};

/// A version to add. With a base, the new version starts with the base's files; `files` adds
/// or replaces files by name and `removedFiles` drops some.
struct NewVersion {
  struct File {
    std::string name{};  ///< "kernel.cu"
    std::string kind{};  ///< Artifact kind ("cuda_source", "ptx", ...)
    std::string bytes{};
  };
  VersionKind kind = VersionKind::program;
  std::optional<VersionId> base{};
  std::string transform{};
  std::string optionsJson = "{}";  ///< Stored canonicalized; must be valid JSON.
  std::string label{};
  std::optional<TaskId> task{};
  std::vector<File> files{};
  std::vector<std::string> removedFiles{};
  /// When not empty: the version's identity by content. addVersion returns the existing version
  /// with this key instead of adding a second one (atomically, also across processes).
  std::string contentKey{};
};

/// One attempt of a task with its inputs and (when it succeeded) outputs.
struct TaskRecord {
  TaskId id{};
  TaskType type = TaskType::control;
  ContentHash memoKey{};
  std::string descriptorJson{};
  TaskStatus status = TaskStatus::queued;
  int attempt = 1;  ///< 1 + earlier attempts with the same memo key.
  std::optional<VersionId> version{};
  TimestampMs queuedAt = 0;
  std::optional<TimestampMs> startedAt{};
  std::optional<TimestampMs> endedAt{};
  std::string error{};
  std::optional<ArtifactId> log{};
  std::string owner{};  ///< Token of the process that created it (owners/<token>.lock).
  std::vector<ArtifactId> inputs{};       ///< In the order given to createTask.
  std::vector<ArtifactRecord> outputs{};  ///< Artifacts the task published, in publish order.
};

/// A task to record (status queued).
struct NewTask {
  TaskType type = TaskType::control;
  ContentHash memoKey{};  ///< Usually memoKey(type, descriptor, input hashes).
  std::string descriptorJson = "{}";
  std::vector<ArtifactId> inputs{};
  std::optional<VersionId> version{};  ///< Default version of its outputs.
  /// Record it as already running (status `running`, started now) in the same transaction,
  /// saving the separate startTask commit when the caller starts it at once.
  bool running = false;
};

/// The configuration a measurement run used.
struct NewRun {
  std::string device{};
  std::string backendConfigJson = "{}";
  std::string environmentJson = "{}";
};

struct RunRecord {
  RunId id{};
  TaskId task{};
  std::string device{};
  std::string backendConfigJson{};
  std::string environmentJson{};
  TimestampMs createdAt = 0;
};

/// What a finished task publishes; its outputs, log, run and status commit together.
struct TaskResult {
  TaskId task{};
  TaskStatus status = TaskStatus::succeeded;  ///< Must be a final status.
  std::vector<NewArtifact> outputs{};         ///< Only with status succeeded.
  std::string error{};                        ///< Why it did not succeed.
  std::optional<std::string> log{};           ///< Published as an artifact of kind "log".
  std::optional<NewRun> run{};
};

/// Where an artifact came from: its version, producing task and, recursively, the task's inputs.
struct Provenance {
  ArtifactRecord artifact{};
  std::optional<VersionRecord> version{};
  std::optional<TaskRecord> task{};
  std::vector<Provenance> inputs{};
  bool truncated = false;  ///< Inputs not expanded because the depth bound was reached.
};

/// Result of verify(): empty `problems` means the database passes SQLite's integrity check, every
/// row its checksum, references and file-name checks, and every artifact's blob exists and
/// hashes right.
struct VerifyReport {
  std::vector<std::string> problems{};  ///< One sentence each, naming the path.
  std::uint64_t rowsChecked = 0;
  std::uint64_t artifactsChecked = 0;
  std::uint64_t blobsChecked = 0;
  std::uint64_t strayTempFiles = 0;  ///< Left by killed writers; invisible, removed by gc().
  [[nodiscard]] bool ok() const { return problems.empty(); }
};

/// Result of recover(): unfinished tasks and scratch folders whose owner process is gone.
struct RecoveryReport {
  std::vector<std::string> staleTasks{};  ///< "t12 (owner 4711-9f3a, gone)", one per task.
  /// Dead owners' scratch folders and lease files.
  std::vector<std::filesystem::path> staleFolders{};
  std::uint64_t tasksAbandoned = 0;  ///< Marked failed with reason "abandoned: ..." (repair).
  std::uint64_t foldersRemoved = 0;  ///< Of staleFolders, removed (repair).
  /// Tasks left running by an Argus without owner records (schema 1) while another process
  /// holds the workspace open: they may be its, so they are left alone.
  std::uint64_t tasksOfUnknownOwner = 0;
};

/// Result of gc().
struct GcReport {
  std::uint64_t blobsRemoved = 0;
  std::uint64_t tempFilesRemoved = 0;
  std::uint64_t bytesFreed = 0;
  std::uint64_t blobsKept = 0;
};

/// Counts for `argus ws list`.
struct WorkspaceStats {
  struct KindCount {
    std::string kind{};
    std::uint64_t count = 0;
    std::uint64_t bytes = 0;  ///< Uncompressed.
  };
  std::uint64_t versions = 0;
  std::uint64_t tasks = 0;
  std::uint64_t artifacts = 0;
  std::uint64_t artifactBytes = 0;  ///< Uncompressed, counting each artifact.
  std::uint64_t blobs = 0;          ///< Distinct blob files.
  std::uint64_t blobBytes = 0;      ///< On disk.
  std::vector<KindCount> byKind{};
};

struct OpenOptions {
  bool create = true;  ///< Create the directory and database when missing (never when damaged).
  /// Open without writing anything (SQLite mode=ro; immutable=1 where the directory cannot be
  /// written): for the verbs that only read. Writing calls then fail naming the workspace.
  bool readOnly = false;
  /// On a writable open, recover() with repair: tasks of dead owners are marked abandoned and
  /// their scratch folders removed.
  bool recover = true;
  std::chrono::milliseconds busyTimeout{30'000};  ///< Wait this long for another process's lock.
  int zstdLevel = 3;
  double minCompressionSaving = 0.10;  ///< Store compressed only when it saves this fraction.
  bool syncBlobs = true;  ///< fsync blob files and directories (off only for throwaway tests).
};

/// An open workspace. Move-only; [thread-safe] (calls on one object are serialized).
class Workspace {
 public:
  /// Opens (and with options.create makes) the workspace in `directory`. Fails with a clear
  /// message when it is missing, unreadable, or made by a newer schema.
  [[nodiscard]] static Result<Workspace> open(const std::filesystem::path& directory,
                                              const OpenOptions& options = {});
  /// `.argus` beside the program file (or inside it when `program` is a directory).
  [[nodiscard]] static std::filesystem::path defaultDirectory(const std::filesystem::path& program);

  Workspace(Workspace&&) noexcept;
  Workspace& operator=(Workspace&&) noexcept;
  ~Workspace();

  [[nodiscard]] const std::filesystem::path& directory() const;
  /// This process's scratch folder (owners/<token>/), made on a writable open and removed when
  /// the workspace is closed or, after a crash, by the next process's recovery. Empty when
  /// opened read-only.
  [[nodiscard]] const std::filesystem::path& scratchDirectory() const;

  // --- Versions -------------------------------------------------------------------------------
  /// Adds a version; its files are published as artifacts bound to it, all in one transaction.
  [[nodiscard]] Result<VersionId> addVersion(const NewVersion& version);
  /// A new program version with the same files as `base`, transform "fork", for optimizers that
  /// then add edited versions on top of it.
  [[nodiscard]] Result<VersionId> fork(VersionId base, std::string_view label);
  [[nodiscard]] Result<VersionRecord> version(VersionId id) const;
  [[nodiscard]] Result<std::vector<VersionFile>> versionFiles(VersionId id) const;
  /// The version, its base, the base's base, ... up to the root (first element is `id`).
  [[nodiscard]] Result<std::vector<VersionRecord>> lineage(VersionId id) const;
  [[nodiscard]] Result<std::vector<VersionRecord>> versions() const;

  // --- Artifacts ------------------------------------------------------------------------------
  /// Publishes bytes as an artifact not produced by a task (e.g. a user input).
  [[nodiscard]] Result<ArtifactRecord> publishArtifact(const NewArtifact& artifact);
  [[nodiscard]] Result<ArtifactRecord> artifact(ArtifactId id) const;
  /// The artifact's bytes, decompressed and checked against its hash; corruption is an error
  /// naming the blob file.
  [[nodiscard]] Result<std::string> readArtifact(ArtifactId id) const;
  /// Evidence of `kind` bound to exactly version `version` and scope `scope`, from user inputs or
  /// succeeded tasks, oldest first. There is deliberately no query without a version.
  [[nodiscard]] Result<std::vector<ArtifactRecord>> evidence(VersionId version,
                                                             std::string_view kind,
                                                             std::string_view scope) const;
  /// Every artifact bound to `version` (any kind and scope), oldest first.
  [[nodiscard]] Result<std::vector<ArtifactRecord>> artifactsOf(VersionId version) const;
  /// The artifact, its version, producing task and that task's inputs, recursively up to
  /// `maxDepth` task levels.
  [[nodiscard]] Result<Provenance> provenance(ArtifactId id, int maxDepth = 8) const;

  // --- Tasks ----------------------------------------------------------------------------------
  /// The first succeeded task with this memo key, with its outputs; nullopt on a miss. One
  /// indexed query (microseconds).
  [[nodiscard]] Result<std::optional<TaskRecord>> findSucceededTask(const ContentHash& key) const;
  /// Records a queued task; attempt = 1 + earlier tasks with the same memo key.
  [[nodiscard]] Result<TaskId> createTask(const NewTask& task);
  /// Marks a queued task running.
  [[nodiscard]] Result<void> startTask(TaskId id);
  /// Publishes a task's outputs, log, run and final status in one transaction.
  [[nodiscard]] Result<void> finishTask(const TaskResult& result);
  /// finishTask for many tasks in one transaction (all or nothing): the cheap way to publish a
  /// batch.
  [[nodiscard]] Result<void> finishTasks(std::span<const TaskResult> results);
  [[nodiscard]] Result<TaskRecord> task(TaskId id) const;
  /// Every task, oldest first (outputs included).
  [[nodiscard]] Result<std::vector<TaskRecord>> tasks() const;
  [[nodiscard]] Result<RunId> recordRun(TaskId task, const NewRun& run);
  [[nodiscard]] Result<RunRecord> run(RunId id) const;
  [[nodiscard]] Result<std::vector<RunRecord>> runsOf(TaskId task) const;

  // --- Maintenance ----------------------------------------------------------------------------
  /// Checks the database (SQLite integrity check), every row (checksum, references, a version's
  /// file names) and that every artifact's blob exists and hashes right; counts stray temp files.
  [[nodiscard]] Result<VerifyReport> verify() const;
  /// Finds unfinished tasks whose owner process is gone and dead owners' scratch folders; with
  /// `repair`, marks those tasks failed ("abandoned: ...") and removes the folders. Tasks of
  /// live owners (this process included) are never touched.
  [[nodiscard]] Result<RecoveryReport> recover(bool repair);
  /// Deletes the temp files of killed blob writers (as gc() does, without collecting blobs).
  [[nodiscard]] Result<std::uint64_t> removeStrayTempFiles();
  /// Deletes blobs no artifact references and temp files of killed writers. Waits (up to the busy
  /// timeout) for publishers in other processes to finish.
  [[nodiscard]] Result<GcReport> gc();
  [[nodiscard]] Result<WorkspaceStats> stats() const;

  struct Impl;

 private:
  explicit Workspace(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_{};
};

}  // namespace argus::workspace
