// Several processes on one workspace, and processes killed while publishing.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "argus/workspace/workspace.h"
#include "workspace_test_util.h"

namespace fs = std::filesystem;

namespace argus::workspace {
namespace {

using testing::must;
using testing::randomBytes;
using testing::repetitiveText;
using testing::WorkspaceTest;

/// Publishes `count` versions, artifacts and tasks as `writer`; forever when count < 0.
/// Returns false on the first error (printed).
bool publishLoop(const fs::path& dir, int writer, int count, std::size_t blobSize, bool syncBlobs) {
  auto ws = Workspace::open(dir, OpenOptions{.syncBlobs = syncBlobs});
  if (!ws) {
    std::fprintf(stderr, "writer %d: %s\n", writer, ws.error().text().c_str());
    return false;
  }
  auto report = [&](const Error& e, int i) {
    std::fprintf(stderr, "writer %d step %d: %s\n", writer, i, e.text().c_str());
    return false;
  };
  NewVersion program;
  program.label = "writer " + std::to_string(writer);
  program.files = {{"kernel.cu", "cuda_source", repetitiveText(2000, "int x;\n")}};
  auto v = ws->addVersion(program);
  if (!v) return report(v.error(), -1);
  for (int i = 0; count < 0 || i < count; ++i) {
    // Shared content across writers exercises dedup under concurrency.
    std::string shared = "shared content " + std::to_string(i % 17);
    auto input = ws->publishArtifact({"ptx", "in.ptx", "", *v, shared});
    if (!input) return report(input.error(), i);
    nlohmann::json d = {{"writer", writer}, {"i", i}};
    ContentHash key = memoKey(TaskType::collect, d, std::vector{input->hash});
    auto t = ws->createTask({TaskType::collect, key, d.dump(), {input->id}, *v});
    if (!t) return report(t.error(), i);
    if (auto ok = ws->startTask(*t); !ok) return report(ok.error(), i);
    TaskResult r{*t,
                 TaskStatus::succeeded,
                 {{"region_trace",
                   "trace.bin",
                   "iter=" + std::to_string(i),
                   {},
                   randomBytes(blobSize, static_cast<std::uint64_t>(writer * 1'000'000 + i))},
                  {"json", "summary.json", "", {}, d.dump()}},
                 "",
                 "log " + std::to_string(i),
                 NewRun{"test", "{}", "{}"}};
    if (auto ok = ws->finishTask(r); !ok) return report(ok.error(), i);
    if (i % 10 == 0) {
      auto f = ws->fork(*v, "fork " + std::to_string(i));
      if (!f) return report(f.error(), i);
    }
  }
  return true;
}

pid_t spawnWriter(const fs::path& dir, int writer, int count, std::size_t blobSize,
                  bool syncBlobs = true) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) _exit(publishLoop(dir, writer, count, blobSize, syncBlobs) ? 0 : 1);
  return pid;
}

int waitExit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(WorkspaceTest, TwoProcessesPublishConcurrently) {
  constexpr int kPerWriter = 300;
  { auto ws = openWorkspace(); }
  // Without blob fsyncs (this test is about the database; fsync only makes it slower).
  pid_t a = spawnWriter(dir_, 1, kPerWriter, 2000, false);
  pid_t b = spawnWriter(dir_, 2, kPerWriter, 2000, false);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  EXPECT_EQ(waitExit(a), 0);
  EXPECT_EQ(waitExit(b), 0);

  auto ws = openWorkspace();
  auto report = must(ws.verify());
  for (const auto& p : report.problems) ADD_FAILURE() << p;
  EXPECT_EQ(report.strayTempFiles, 0u);
  auto tasks = must(ws.tasks());
  EXPECT_EQ(tasks.size(), 2u * kPerWriter);
  for (int writer : {1, 2}) {
    for (int i = 0; i < kPerWriter; ++i) {
      nlohmann::json d = {{"writer", writer}, {"i", i}};
      ContentHash key = memoKey(TaskType::collect, d,
                                std::vector{hashBytes("shared content " + std::to_string(i % 17))});
      auto hit = must(ws.findSucceededTask(key));
      ASSERT_TRUE(hit) << "writer " << writer << " task " << i;
      ASSERT_EQ(hit->outputs.size(), 2u);
      EXPECT_EQ(must(ws.readArtifact(hit->outputs[1].id)), d.dump());
    }
  }
  // 2 programs + 30 forks each.
  EXPECT_EQ(must(ws.versions()).size(), 2u + 2u * (kPerWriter / 10));
}

TEST_F(WorkspaceTest, GcWhilePublishingNeverLosesABlob) {
  { auto ws = openWorkspace(); }
  pid_t writer = spawnWriter(dir_, 1, 150, 4000, false);
  ASSERT_GT(writer, 0);
  auto ws = openWorkspace();
  int status = 0;
  int collections = 0;
  while (::waitpid(writer, &status, WNOHANG) == 0) {
    must(ws.gc());
    ++collections;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GT(collections, 1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto report = must(ws.verify());
  for (const auto& p : report.problems) ADD_FAILURE() << p;
  EXPECT_EQ(must(ws.tasks()).size(), 150u);
}

TEST_F(WorkspaceTest, KillNineWhilePublishingLeavesAConsistentWorkspace) {
  { auto ws = openWorkspace(); }
  std::mt19937 rng(12345);
  std::uint64_t tasksBefore = 0;
  for (int round = 0; round < 8; ++round) {
    pid_t child = spawnWriter(dir_, round, -1, 256 * 1024);
    ASSERT_GT(child, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 150));
    ::kill(child, SIGKILL);
    EXPECT_EQ(waitExit(child), 128 + SIGKILL);

    auto ws = Workspace::open(dir_);
    ASSERT_TRUE(ws) << ws.error().text();
    auto report = must(ws->verify());
    for (const auto& p : report.problems) ADD_FAILURE() << "round " << round << ": " << p;
    // Every published output reads back; a task is either finished with all its outputs or not.
    auto tasks = must(ws->tasks());
    EXPECT_GE(tasks.size(), tasksBefore);
    tasksBefore = tasks.size();
    for (const auto& t : tasks) {
      if (t.status == TaskStatus::succeeded) {
        EXPECT_EQ(t.outputs.size(), 2u);
        EXPECT_TRUE(t.log);
      } else {
        EXPECT_TRUE(t.outputs.empty());
      }
      for (const auto& o : t.outputs) EXPECT_TRUE(ws->readArtifact(o.id)) << o.id.text();
    }
  }
  auto ws = openWorkspace();
  auto gc = must(ws.gc());
  std::printf("after 8 kills: gc removed %llu blobs and %llu temp files, %llu bytes\n",
              static_cast<unsigned long long>(gc.blobsRemoved),
              static_cast<unsigned long long>(gc.tempFilesRemoved),
              static_cast<unsigned long long>(gc.bytesFreed));
  auto after = must(ws.verify());
  EXPECT_TRUE(after.ok());
  EXPECT_EQ(after.strayTempFiles, 0u);
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp"));
}

TEST_F(WorkspaceTest, AVersionWithAContentKeyIsMadeOnce) {
  { auto ws = openWorkspace(); }
  NewVersion program;
  program.label = "k";
  program.files = {{"kernel.cu", "cuda_source", "__global__ void k() {}\n"}};
  program.contentKey = "program 1234";
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  std::fflush(nullptr);
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      auto ws = Workspace::open(dir_, {.syncBlobs = false});
      if (!ws) _exit(3);
      for (int k = 0; k < 20; ++k)
        if (!ws->addVersion(program)) _exit(4);
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  auto ws = openWorkspace();
  EXPECT_EQ(must(ws.versions()).size(), 1u);
  EXPECT_EQ(must(ws.addVersion(program)), VersionId(1));
  program.contentKey = "program 5678";
  EXPECT_EQ(must(ws.addVersion(program)), VersionId(2));
}

TEST_F(WorkspaceTest, RecoveryNeverTakesALiveProcesssTasksForStale) {
  { auto ws = openWorkspace(); }
  constexpr int kTasks = 150;
  std::fflush(nullptr);
  pid_t child = ::fork();
  if (child == 0) {
    // Tasks created running and finished a moment later, while the parent recovers.
    auto ws = Workspace::open(dir_, {.syncBlobs = false});
    if (!ws) _exit(3);
    for (int i = 0; i < kTasks; ++i) {
      auto t = ws->createTask({.type = TaskType::collect,
                               .memoKey = hashBytes("live " + std::to_string(i)),
                               .descriptorJson = "{}",
                               .running = true});
      if (!t) _exit(4);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      TaskResult r;
      r.task = *t;
      r.outputs = {{"json", "out.json", "", {}, std::to_string(i)}};
      if (!ws->finishTask(r)) _exit(5);  // fails if recovery marked it abandoned
    }
    _exit(0);
  }
  ASSERT_GT(child, 0);
  int recoveries = 0;
  int status = 0;
  while (::waitpid(child, &status, WNOHANG) == 0) {
    auto ws = Workspace::open(dir_, {.syncBlobs = false});  // recovers on open
    ASSERT_TRUE(ws) << ws.error().text();
    auto found = must(ws->recover(true));
    for (const auto& t : found.staleTasks) ADD_FAILURE() << "live task taken for stale: " << t;
    ++recoveries;
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_GT(recoveries, 5);
  auto ws = openWorkspace();
  auto tasks = must(ws.tasks());
  ASSERT_EQ(tasks.size(), static_cast<std::size_t>(kTasks));
  for (const auto& t : tasks) EXPECT_EQ(t.status, TaskStatus::succeeded) << t.id.text() << t.error;
}

}  // namespace
}  // namespace argus::workspace
