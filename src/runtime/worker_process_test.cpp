#include "argus/runtime/worker_process.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "argus/support/process.h"
#include "runtime_test_util.h"

namespace argus::runtime {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class TempDir {
 public:
  TempDir() : path_(*makeTempDir("argus-rt-test")) {}
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(RunWorker, MergesOutputAndSetsEnvironment) {
  WorkerOptions o;
  o.environment["CUDA_VISIBLE_DEVICES"] = "7";
  auto r = runWorker({"/bin/sh", "-c", "echo out $CUDA_VISIBLE_DEVICES; echo err >&2; exit 5"}, o);
  ASSERT_TRUE(r) << r.error().text();
  EXPECT_EQ(r->exitCode, 5);
  EXPECT_NE(r->output.find("out 7"), std::string::npos);
  EXPECT_NE(r->output.find("err"), std::string::npos);
}

TEST(RunWorker, AFloodOfOutputIsCappedAndTheWorkerNeverBlocks) {
  WorkerOptions o;
  o.maxOutputBytes = 1 << 20;
  o.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  // 64 MiB: a worker that floods its log. Its first and last lines are kept, the middle cut.
  auto r = runWorker(
      {"/bin/sh", "-c", "echo FIRST; head -c 67108864 /dev/zero | tr '\\0' x; echo; echo LAST"}, o);
  ASSERT_TRUE(r) << r.error().text();
  EXPECT_EQ(r->exitCode, 0);
  EXPECT_FALSE(r->timedOut);
  EXPECT_LE(r->output.size(), (1u << 20) + 200u);
  EXPECT_EQ(r->output.rfind("FIRST\n", 0), 0u);
  EXPECT_TRUE(r->output.ends_with("LAST\n")) << r->output.substr(r->output.size() - 40);
  EXPECT_EQ(r->outputDropped, 6u + 67108864u + 1u + 5u - (1u << 20));
  EXPECT_NE(r->output.find("bytes of output cut here"), std::string::npos);
  // Below the cap nothing is cut.
  auto small = runWorker({"/bin/sh", "-c", "echo small"}, o);
  ASSERT_TRUE(small);
  EXPECT_EQ(small->output, "small\n");
  EXPECT_EQ(small->outputDropped, 0u);
}

TEST(RunWorker, ReportsSignals) {
  auto r = runWorker({"/bin/sh", "-c", "kill -ABRT $$"}, {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->signal, SIGABRT);
  EXPECT_EQ(r->exitCode, 128 + SIGABRT);
}

TEST(RunWorker, DeadlineKillsTheWholeProcessGroup) {
  TempDir dir;
  fs::path marker = dir.path() / "grandchild-survived";
  WorkerOptions o;
  o.deadline = Clock::now() + std::chrono::milliseconds(200);
  // The grandchild would write the marker after 0.4 s unless the group kill reaches it.
  auto start = Clock::now();
  auto r = runWorker(
      {"/bin/sh", "-c", "(sleep 0.4; touch " + marker.string() + ") & echo started; sleep 30"}, o);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timedOut);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(r->output.find("started"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_FALSE(fs::exists(marker)) << "the worker's background child outlived the timeout";
}

TEST(RunWorker, CancelFlagTerminates) {
  std::atomic<bool> cancel{true};
  WorkerOptions o;
  o.cancelFlag = &cancel;
  auto r = runWorker({"/bin/sh", "-c", "sleep 30"}, o);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->cancelled);
  EXPECT_NE(r->signal, 0);
}

TEST(RunWorker, MissingProgramIsAnError) {
  auto r = runWorker({"/nonexistent/argus-worker"}, {});
  EXPECT_FALSE(r);
}

class Manifest : public ::testing::Test {
 protected:
  TaskDescriptor task_ = test::task("t", "w", {}, {"evidence"});
  TempDir dir_;
};

TEST_F(Manifest, AcceptsValidManifest) {
  ASSERT_TRUE(writeFile(dir_.path() / "ev.bin", "bytes"));
  auto r =
      readManifest(task_, dir_.path(),
                   R"({"argus_manifest": 1, "status": "ok", "outputs": {"evidence": "ev.bin"}})");
  ASSERT_TRUE(r) << r.error().text();
  EXPECT_EQ(r->artifacts.at("evidence").hash, contentHash("bytes"));
}

TEST_F(Manifest, RejectsGarbage) {
  auto expectError = [&](std::string_view text, std::string_view needle) {
    auto r = readManifest(task_, dir_.path(), text);
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  };
  ASSERT_TRUE(writeFile(dir_.path() / "ev.bin", "bytes"));
  expectError("this is not json", "not JSON");
  expectError("[1,2]", "not a JSON object");
  expectError(R"({"status": "ok"})", "argus_manifest");
  expectError(R"({"argus_manifest": 1, "status": "maybe"})", "status");
  expectError(R"({"argus_manifest": 1, "status": "ok", "outputs": {}})", "`evidence` is missing");
  expectError(R"({"argus_manifest": 1, "status": "ok", "outputs": {"evidence": "nope.bin"}})",
              "does not exist");
  expectError(
      R"({"argus_manifest": 1, "status": "ok", "outputs": {"evidence": "../../etc/passwd"}})",
      "outside the task directory");
  expectError(R"({"argus_manifest": 1, "status": "failed", "error": "no GPU"})", "no GPU");
  expectError(
      R"({"argus_manifest": 1, "status": "ok", "outputs": {"evidence": "ev.bin"}, "branches": []})",
      "only Control");
}

TEST_F(Manifest, ControlTasksReturnBranches) {
  task_.type = TaskType::Control;
  task_.outputs = {};
  auto r = readManifest(task_, dir_.path(),
                        R"({"argus_manifest": 1, "status": "ok",
                            "branches": [{"id": "probe0", "type": "collect", "executor": "w"}]})");
  ASSERT_TRUE(r) << r.error().text();
  ASSERT_EQ(r->branches.size(), 1u);
  EXPECT_EQ(r->branches[0].id, "probe0");
  EXPECT_EQ(r->branches[0].type, TaskType::Collect);
}

TEST(WorkerProcessExecutor, RunsTheProtocol) {
  TempDir dir;
  TaskDescriptor t = test::gpuTask("collect", "w", {}, {"trace", "stats"});
  test::ScriptExecutor executor("ok");
  TaskContext ctx(t, dir.path() / "collect");
  ctx.inputs = {{"bin", Artifact::fromData("cubin")}};
  ctx.device = "3";
  auto r = executor.execute(ctx);
  ASSERT_TRUE(r) << r.error().text() << "\n" << ctx.log;
  EXPECT_EQ(r->artifacts.size(), 2u);
  EXPECT_NE(ctx.log.find("device=3"), std::string::npos) << ctx.log;
  // The descriptor handed to the worker names the task and its inputs.
  auto descriptor = nlohmann::json::parse(*readFile(dir.path() / "collect" / "descriptor.json"));
  EXPECT_EQ(descriptor["task"]["id"], "collect");
  EXPECT_EQ(descriptor["device"], "3");
  EXPECT_EQ(descriptor["inputs"]["bin"]["hash"], contentHash("cubin"));
  EXPECT_EQ(*readFile(descriptor["inputs"]["bin"]["path"].get<std::string>()), "cubin");
  EXPECT_TRUE(fs::exists(dir.path() / "collect" / "worker.log"));
}

}  // namespace
}  // namespace argus::runtime
