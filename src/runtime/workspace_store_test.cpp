#include "argus/runtime/workspace_store.h"

#include <gtest/gtest.h>

#include "argus/runtime/scheduler.h"
#include "argus/support/process.h"
#include "runtime_test_util.h"

namespace argus::runtime {
namespace {

namespace fs = std::filesystem;

TEST(WorkspaceResultStore, PersistsRunsAndRerunsOnlyFailedTasks) {
  fs::path dir = *makeTempDir("argus-rt-ws");
  std::atomic<bool> flaky{true};
  std::atomic<int> executions{0};
  ExecutorRegistry registry;
  ASSERT_TRUE(registry.add(
      {"cpu", "", std::make_shared<FunctionExecutor>([&](TaskContext& ctx) -> Result<TaskOutputs> {
         ++executions;
         ctx.log += "ran " + ctx.task.id + "\n";
         if (ctx.task.id == "flaky" && flaky) return fail("test", "flaked");
         TaskOutputs out;
         std::string in;
         for (const auto& [n, a] : ctx.inputs) in += *a.read();
         out.artifacts["out"] = Artifact::fromData(ctx.task.id + "(" + in + ")" +
                                                   std::string(5000, 'x'));  // a blob file
         return out;
       })}));
  Plan plan;
  ASSERT_TRUE(plan.add(test::task("a", "cpu")));
  ASSERT_TRUE(plan.add(test::task("flaky", "cpu", {"a.out"})));
  ASSERT_TRUE(plan.add(test::task("b", "cpu", {"flaky.out"})));
  RunOptions options;
  options.cpuThreads = 2;
  workspace::OpenOptions open;
  open.syncBlobs = false;
  {
    auto ws = workspace::Workspace::open(dir, open);
    ASSERT_TRUE(ws) << ws.error().text();
    WorkspaceResultStore store(*ws);
    auto report = Scheduler(registry, store, options).run(plan);
    ASSERT_TRUE(report);
    EXPECT_FALSE(store.firstError()) << store.firstError()->text();
    EXPECT_EQ(report->find("flaky")->outcome.state, TaskState::Failed);
    auto tasks = ws->tasks();
    ASSERT_TRUE(tasks);
    ASSERT_EQ(tasks->size(), 2u);
    EXPECT_EQ((*tasks)[0].status, workspace::TaskStatus::succeeded);
    EXPECT_EQ((*tasks)[1].status, workspace::TaskStatus::failed);
    EXPECT_NE((*tasks)[1].error.find("flaked"), std::string::npos);
    ASSERT_TRUE((*tasks)[1].log);
    EXPECT_EQ(*ws->readArtifact(*(*tasks)[1].log), "ran flaky\n");
  }
  EXPECT_EQ(executions.load(), 2);
  flaky = false;
  {
    // A fresh process would open the workspace again: only the failed branch runs.
    auto ws = workspace::Workspace::open(dir, open);
    ASSERT_TRUE(ws);
    WorkspaceResultStore store(*ws);
    auto report = Scheduler(registry, store, options).run(plan);
    ASSERT_TRUE(report);
    EXPECT_TRUE(report->ok()) << report->toText();
    EXPECT_EQ(report->find("a")->outcome.state, TaskState::Memoized);
    EXPECT_EQ(executions.load(), 4);
    auto tasks = ws->tasks();
    ASSERT_TRUE(tasks);
    ASSERT_EQ(tasks->size(), 4u);
    EXPECT_EQ((*tasks)[2].attempt, 2);  // the retried flaky task
    // Provenance links b's input to the artifact flaky published.
    ASSERT_EQ((*tasks)[3].inputs.size(), 1u);
    EXPECT_EQ((*tasks)[3].inputs[0], (*tasks)[2].outputs.at(0).id);
  }
  {
    auto ws = workspace::Workspace::open(dir, open);
    WorkspaceResultStore store(*ws);
    auto report = Scheduler(registry, store, options).run(plan);
    ASSERT_TRUE(report);
    EXPECT_EQ(report->counts.memoized, 3u);
    EXPECT_EQ(executions.load(), 4);
    // Memoized outputs come back byte-exact.
    EXPECT_EQ(report->find("b")->memoKey.size(), 32u);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST(WorkspaceResultStore, TasksAfterAMemoHitRecordTheReusedOutputsAsInputs) {
  // A later query reuses `a` from an earlier one and executes `b` (new) on a's output: b's
  // record names the artifact a published the first time, so provenance reaches a's task.
  fs::path dir = *makeTempDir("argus-rt-ws-lineage");
  ExecutorRegistry registry;
  ASSERT_TRUE(registry.add(
      {"cpu", "", std::make_shared<FunctionExecutor>([](TaskContext& ctx) -> Result<TaskOutputs> {
         std::string in;
         for (const auto& [n, a] : ctx.inputs) in += *a.read();
         TaskOutputs out;
         out.artifacts["out"] = Artifact::fromData(ctx.task.id + "(" + in + ")");
         return out;
       })}));
  workspace::OpenOptions open;
  open.syncBlobs = false;
  auto ws = workspace::Workspace::open(dir, open);
  ASSERT_TRUE(ws) << ws.error().text();
  {
    Plan first;
    ASSERT_TRUE(first.add(test::task("a", "cpu")));
    WorkspaceResultStore store(*ws);
    auto report = Scheduler(registry, store, {}).run(first);
    ASSERT_TRUE(report);
    ASSERT_TRUE(report->ok()) << report->toText();
  }
  Plan second;
  ASSERT_TRUE(second.add(test::task("a", "cpu")));
  ASSERT_TRUE(second.add(test::task("b", "cpu", {"a.out"})));
  ASSERT_TRUE(second.add(test::task("c", "cpu", {"b.out"})));
  WorkspaceResultStore store(*ws);
  auto report = Scheduler(registry, store, {}).run(second);
  ASSERT_TRUE(report);
  ASSERT_TRUE(report->ok()) << report->toText();
  EXPECT_FALSE(store.firstError());
  EXPECT_EQ(report->find("a")->outcome.state, TaskState::Memoized);
  EXPECT_EQ(report->find("b")->outcome.state, TaskState::Succeeded);
  auto tasks = ws->tasks();
  ASSERT_TRUE(tasks);
  ASSERT_EQ(tasks->size(), 3u);  // a once (reused, not recorded again), b, c
  const auto& a = (*tasks)[0];
  const auto& b = (*tasks)[1];
  const auto& c = (*tasks)[2];
  ASSERT_EQ(a.outputs.size(), 1u);
  ASSERT_EQ(b.inputs.size(), 1u);
  EXPECT_EQ(b.inputs[0], a.outputs[0].id);
  ASSERT_EQ(c.inputs.size(), 1u);
  EXPECT_EQ(c.inputs[0], b.outputs.at(0).id);
  auto lineage = ws->provenance(c.outputs.at(0).id);
  ASSERT_TRUE(lineage);
  ASSERT_EQ(lineage->inputs.size(), 1u);
  ASSERT_EQ(lineage->inputs[0].inputs.size(), 1u);
  ASSERT_TRUE(lineage->inputs[0].inputs[0].task);
  EXPECT_EQ(lineage->inputs[0].inputs[0].task->id, a.id);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace argus::runtime
