// Workspace hygiene (issue 29, defect 5): damaged databases are errors, not new workspaces; a dead
// process's tasks and scratch folders are recovered; identical versions are made once; reading
// verbs open read-only; every row is checked against its checksum (identical versions made by
// several processes at once: concurrency_test.cpp).
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "argus/workspace/workspace.h"
#include "workspace_test_util.h"

namespace fs = std::filesystem;

namespace argus::workspace {
namespace {

using testing::must;
using testing::randomBytes;
using testing::rawSql;
using testing::repetitiveText;
using testing::WorkspaceTest;

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

/// A workspace with a version, finished and failed tasks with outputs, logs and runs.
void populate(Workspace& ws) {
  NewVersion program;
  program.label = "baseline";
  program.files = {{"kernel.cu", "cuda_source", repetitiveText(6000, "__global__ void k() {}\n")},
                   {"argus.yaml", "program_spec", "name: k\nsources: [kernel.cu]\n"}};
  VersionId v = must(ws.addVersion(program));
  VersionId fork = must(ws.fork(v, "edited"));
  for (int i = 0; i < 6; ++i) {
    nlohmann::json d = {{"i", i}};
    auto input = must(ws.publishArtifact({"ptx", "in.ptx", "", v, "input " + std::to_string(i)}));
    TaskId t = must(ws.createTask({.type = TaskType::collect,
                                   .memoKey = hashBytes("task " + std::to_string(i)),
                                   .descriptorJson = d.dump(),
                                   .inputs = {input.id},
                                   .version = i % 2 ? fork : v,
                                   .running = true}));
    TaskResult r;
    r.task = t;
    r.status = i == 3 ? TaskStatus::failed : TaskStatus::succeeded;
    if (i != 3)
      r.outputs = {{"region_trace",
                    "trace.bin",
                    "iter=" + std::to_string(i),
                    {},
                    randomBytes(i == 0 ? 9000 : 300, static_cast<std::uint64_t>(i))}};
    r.error = i == 3 ? "it failed" : "";
    r.log = "log of " + std::to_string(i);
    r.run = NewRun{"gpu0", "{}", "{}"};
    must(ws.finishTask(r));
  }
}

/// Everything the API returns about the workspace, as one text; reading fails as an error.
Result<std::string> dump(const Workspace& ws) {
  std::ostringstream out;
  auto versions = ws.versions();
  if (!versions) return std::unexpected(versions.error());
  for (const auto& v : *versions) {
    out << v.id.text() << ' ' << toString(v.kind) << ' ' << (v.base ? v.base->text() : "-") << ' '
        << v.transform << ' ' << v.optionsJson << ' ' << v.label << ' ' << v.createdAt << '\n';
    auto files = ws.versionFiles(v.id);
    if (!files) return std::unexpected(files.error());
    for (const auto& f : *files) {
      auto bytes = ws.readArtifact(f.artifact.id);
      if (!bytes) return std::unexpected(bytes.error());
      out << "  " << f.name << ' ' << f.artifact.id.text() << ' ' << f.artifact.hash.hex() << ' '
          << *bytes << '\n';
    }
  }
  auto tasks = ws.tasks();
  if (!tasks) return std::unexpected(tasks.error());
  for (const auto& t : *tasks) {
    out << t.id.text() << ' ' << toString(t.type) << ' ' << t.memoKey.hex() << ' '
        << t.descriptorJson << ' ' << toString(t.status) << ' ' << t.attempt << ' '
        << (t.version ? t.version->text() : "-") << ' ' << t.queuedAt << ' '
        << t.startedAt.value_or(-1) << ' ' << t.endedAt.value_or(-1) << ' ' << t.error << ' '
        << (t.log ? t.log->text() : "-") << '\n';
    for (auto in : t.inputs) out << "  in " << in.text() << '\n';
    for (const auto& o : t.outputs) {
      auto bytes = ws.readArtifact(o.id);
      if (!bytes) return std::unexpected(bytes.error());
      out << "  out " << o.id.text() << ' ' << o.kind << ' ' << o.name << ' ' << o.scope << ' '
          << o.size << ' ' << std::hash<std::string>{}(*bytes) << '\n';
    }
    if (t.log) {
      auto bytes = ws.readArtifact(*t.log);
      if (!bytes) return std::unexpected(bytes.error());
      out << "  log " << *bytes << '\n';
    }
    auto runs = ws.runsOf(t.id);
    if (!runs) return std::unexpected(runs.error());
    for (const auto& r : *runs)
      out << "  run " << r.id.text() << ' ' << r.device << ' ' << r.createdAt << '\n';
  }
  return out.str();
}

TEST_F(WorkspaceTest, AnEmptyDatabaseIsAnErrorNotANewWorkspace) {
  {
    auto ws = openWorkspace();
    populate(ws);
  }
  fs::resize_file(dir_ / "argus.db", 0);
  for (auto options :
       {OpenOptions{}, OpenOptions{.create = false}, OpenOptions{.readOnly = true}}) {
    auto ws = Workspace::open(dir_, options);
    ASSERT_FALSE(ws) << "a 0-byte argus.db was taken as a workspace";
    const std::string& m = ws.error().message;
    EXPECT_TRUE(contains(m, (dir_ / "argus.db").string())) << m;
    EXPECT_TRUE(contains(m, "empty")) << m;
    EXPECT_TRUE(contains(m, "backup")) << m;
  }
  EXPECT_EQ(fs::file_size(dir_ / "argus.db"), 0u);  // left as found, for the user to restore
}

TEST_F(WorkspaceTest, ADatabaseThatIsNotOneIsAnError) {
  {
    auto ws = openWorkspace();
    populate(ws);
  }
  {
    std::ofstream garbage(dir_ / "argus.db", std::ios::binary | std::ios::trunc);
    garbage << randomBytes(8192, 7);
  }
  auto ws = Workspace::open(dir_);
  ASSERT_FALSE(ws);
  EXPECT_TRUE(contains(ws.error().message, (dir_ / "argus.db").string())) << ws.error().message;
  EXPECT_TRUE(contains(ws.error().message, "backup")) << ws.error().message;

  // An SQLite database that is not a workspace's is not made one either.
  fs::remove(dir_ / "argus.db");
  ASSERT_EQ(rawSql(dir_ / "argus.db", "CREATE TABLE notes(x)"), SQLITE_OK);
  auto foreign = Workspace::open(dir_);
  ASSERT_FALSE(foreign);
  EXPECT_TRUE(contains(foreign.error().message, "no meta table")) << foreign.error().message;
}

TEST_F(WorkspaceTest, BlobsWithoutTheirDatabaseAreNotANewWorkspace) {
  {
    auto ws = openWorkspace();
    populate(ws);
  }
  fs::remove(dir_ / "argus.db");
  auto ws = Workspace::open(dir_);
  ASSERT_FALSE(ws);
  EXPECT_TRUE(contains(ws.error().message, "history is gone")) << ws.error().message;
  EXPECT_FALSE(fs::exists(dir_ / "argus.db"));
}

TEST_F(WorkspaceTest, SingleBitFlipsInTheDatabaseAreNoticed) {
  {
    auto ws = openWorkspace(OpenOptions{.syncBlobs = false});
    populate(ws);
  }  // closed: checkpointed, no -wal left
  ASSERT_FALSE(fs::exists(dir_ / "argus.db-wal"));
  const std::string original = must(dump(must(Workspace::open(dir_, {.readOnly = true}))));
  std::string pristine;
  {
    std::ifstream in(dir_ / "argus.db", std::ios::binary);
    pristine.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::mt19937_64 rng(2929);
  int changedUnnoticed = 0;
  int noticed = 0;
  constexpr int kFlips = 40;
  for (int flip = 0; flip < kFlips; ++flip) {
    std::string bytes = pristine;
    // Flip within pages that hold data (a flip in free space changes nothing to notice).
    std::size_t bit = rng() % (bytes.size() * 8);
    bytes[bit / 8] = static_cast<char>(bytes[bit / 8] ^ (1 << (bit % 8)));
    {
      std::ofstream out(dir_ / "argus.db", std::ios::binary | std::ios::trunc);
      out << bytes;
    }
    fs::remove(dir_ / "argus.db-shm");
    auto ws = Workspace::open(dir_, {.readOnly = true});
    if (!ws) {
      ++noticed;
      continue;
    }
    auto seen = dump(*ws);
    if (!seen) {
      ++noticed;
      continue;
    }
    auto check = must(ws->verify());
    if (!check.ok()) ++noticed;
    if (*seen != original && check.ok()) {
      ++changedUnnoticed;
      ADD_FAILURE() << "bit " << bit << " (byte " << bit / 8 << ") changed what the workspace "
                    << "says without any check noticing";
    }
  }
  std::printf("%d of %d single-bit flips noticed; %d changed metadata unnoticed\n", noticed, kFlips,
              changedUnnoticed);
  EXPECT_EQ(changedUnnoticed, 0);
}

TEST_F(WorkspaceTest, ARowEditedBehindTheApisBackFailsItsChecksum) {
  {
    auto ws = openWorkspace();
    populate(ws);
  }
  // A hand edit that the triggers allow (the checksum column is not immutable for tasks): the
  // status of a failed task is a value the CHECK accepts, so only the checksum can tell.
  ASSERT_EQ(rawSql(dir_ / "argus.db",
                   "DROP TRIGGER tasks_forward_only; UPDATE tasks SET error = 'fine' WHERE id = 4"),
            SQLITE_OK);
  auto ws = openWorkspace();
  auto t = ws.task(TaskId(4));
  ASSERT_FALSE(t);
  EXPECT_TRUE(contains(t.error().message, "task t4 fails its checksum")) << t.error().message;
  EXPECT_TRUE(contains(t.error().message, "argus ws check")) << t.error().message;
  auto report = must(ws.verify());
  ASSERT_FALSE(report.ok());
  EXPECT_TRUE(contains(report.problems.front(), "tasks row 4")) << report.problems.front();
}

TEST_F(WorkspaceTest, ASchemaOneWorkspaceIsMigratedAndSealed) {
  {
    auto ws = openWorkspace();
    populate(ws);
  }
  const std::string before = must(dump(must(Workspace::open(dir_, {.readOnly = true}))));
  // Back to schema 1's shape: its columns, its triggers, its version number.
  const fs::path db = dir_ / "argus.db";
  ASSERT_EQ(rawSql(db,
                   "DROP INDEX versions_by_content; DROP INDEX tasks_unfinished;"
                   "DROP TRIGGER versions_sealed; DROP TRIGGER artifacts_sealed;"
                   "DROP TRIGGER version_files_sealed; DROP TRIGGER task_inputs_sealed;"
                   "DROP TRIGGER runs_sealed; DROP TRIGGER versions_immutable;"
                   "DROP TRIGGER artifacts_immutable; DROP TRIGGER version_files_immutable;"
                   "DROP TRIGGER task_inputs_immutable; DROP TRIGGER runs_immutable;"
                   "DROP TRIGGER tasks_forward_only;"
                   "ALTER TABLE versions DROP COLUMN content_key;"
                   "ALTER TABLE versions DROP COLUMN checksum; ALTER TABLE tasks DROP COLUMN owner;"
                   "ALTER TABLE tasks DROP COLUMN checksum; ALTER TABLE artifacts DROP COLUMN "
                   "checksum; ALTER TABLE version_files DROP COLUMN checksum;"
                   "ALTER TABLE task_inputs DROP COLUMN checksum; ALTER TABLE runs DROP COLUMN "
                   "checksum; UPDATE meta SET value = '1' WHERE key = 'schema_version'"),
            SQLITE_OK);
  auto old = Workspace::open(dir_, {.readOnly = true});
  ASSERT_FALSE(old);
  EXPECT_TRUE(contains(old.error().message, "schema 1")) << old.error().message;
  {
    auto ws = openWorkspace();  // writable: migrates
    auto report = must(ws.verify());
    for (const auto& p : report.problems) ADD_FAILURE() << p;
    EXPECT_GT(report.rowsChecked, 20u);
  }
  EXPECT_EQ(must(dump(must(Workspace::open(dir_, {.readOnly = true})))), before);
}

/// In a child process: opens the workspace, starts a task, writes into its scratch folder and
/// is killed (SIGKILL) before finishing.
void dieWhileRunning(const fs::path& dir) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    auto ws = Workspace::open(dir, {.syncBlobs = false});
    if (!ws) _exit(3);
    auto t = ws->createTask({.type = TaskType::collect,
                             .memoKey = hashBytes("killed"),
                             .descriptorJson = "{}",
                             .running = true});
    if (!t) _exit(4);
    std::ofstream(ws->scratchDirectory() / "partial.bin") << "half an output";
    ::kill(::getpid(), SIGKILL);
    _exit(5);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
}

TEST_F(WorkspaceTest, TasksOfAKilledProcessAreRecoveredAndItsScratchRemoved) {
  { auto ws = openWorkspace(); }
  dieWhileRunning(dir_);
  std::size_t scratchFolders = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "owners")) scratchFolders += e.is_directory();
  EXPECT_EQ(scratchFolders, 1u);  // the dead process's, with its partial output

  // A live owner in this process: its running task is never taken for stale.
  auto live = openWorkspace(OpenOptions{.recover = false});
  TaskId liveTask = must(live.createTask({.type = TaskType::collect,
                                          .memoKey = hashBytes("live"),
                                          .descriptorJson = "{}",
                                          .running = true}));
  {
    auto ws = openWorkspace(OpenOptions{.recover = false});
    auto found = must(ws.recover(false));
    ASSERT_EQ(found.staleTasks.size(), 1u);
    EXPECT_TRUE(contains(found.staleTasks[0], "t1 (owner ")) << found.staleTasks[0];
    EXPECT_EQ(found.tasksAbandoned, 0u);
    EXPECT_EQ(must(ws.task(TaskId(1))).status, TaskStatus::running);  // only found, not repaired
    auto fixed = must(ws.recover(true));
    EXPECT_EQ(fixed.tasksAbandoned, 1u);
    EXPECT_EQ(fixed.foldersRemoved, 2u);  // the scratch folder and the dead lease
    auto t = must(ws.task(TaskId(1)));
    EXPECT_EQ(t.status, TaskStatus::failed);
    EXPECT_TRUE(contains(t.error, "abandoned: the argus process that ran it")) << t.error;
    EXPECT_TRUE(t.outputs.empty());
    EXPECT_EQ(must(ws.task(liveTask)).status, TaskStatus::running);
    EXPECT_TRUE(must(ws.recover(false)).staleTasks.empty());
  }
  // Nothing of the dead process is left; the live ones keep theirs.
  for (const auto& e : fs::directory_iterator(dir_ / "owners"))
    EXPECT_FALSE(contains(e.path().filename().string(), "partial")) << e.path();
  EXPECT_TRUE(fs::is_directory(live.scratchDirectory()));
  const fs::path liveScratch = live.scratchDirectory();
  { auto moved = std::move(live); }
  EXPECT_FALSE(fs::exists(liveScratch));  // closing removes the scratch folder
}

TEST_F(WorkspaceTest, AWritableOpenRecoversByItself) {
  { auto ws = openWorkspace(); }
  dieWhileRunning(dir_);
  auto ws = openWorkspace();
  EXPECT_EQ(must(ws.task(TaskId(1))).status, TaskStatus::failed);
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "owners")) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 2u);  // only this process's lease and scratch folder
}

TEST_F(WorkspaceTest, AReadOnlyOpenWritesNothing) {
  {
    auto ws = openWorkspace();
    populate(ws);
  }
  const auto before = fs::last_write_time(dir_ / "argus.db");
  std::set<fs::path> entries;
  for (const auto& e : fs::recursive_directory_iterator(dir_)) entries.insert(e.path());
  {
    auto ws = Workspace::open(dir_, {.readOnly = true});
    ASSERT_TRUE(ws) << ws.error().text();
    EXPECT_FALSE(must(dump(*ws)).empty());
    EXPECT_TRUE(ws->scratchDirectory().empty());
    auto v = ws->fork(VersionId(1), "x");
    ASSERT_FALSE(v);
    EXPECT_TRUE(contains(v.error().message, dir_.string())) << v.error().message;
    EXPECT_TRUE(contains(v.error().message, "read-only")) << v.error().message;
    EXPECT_FALSE(ws->gc());
  }
  std::set<fs::path> after;
  for (const auto& e : fs::recursive_directory_iterator(dir_)) after.insert(e.path());
  after.erase(dir_ / "argus.db-shm");  // SQLite's shared-memory index of a WAL reader
  after.erase(dir_ / "argus.db-wal");
  EXPECT_EQ(after, entries);
  EXPECT_EQ(fs::last_write_time(dir_ / "argus.db"), before);
}

}  // namespace
}  // namespace argus::workspace
