#include "argus/runtime/scheduler.h"

#include <signal.h>

#include <condition_variable>
#include <set>

#include <gtest/gtest.h>

#include "argus/support/process.h"
#include "runtime_test_util.h"

namespace argus::runtime {
namespace {

namespace fs = std::filesystem;
using test::gpuTask;
using test::task;
using test::Timeline;
using SteadyClock = std::chrono::steady_clock;

// N parties meet; arrive() returns false when the others do not all come within 5 s, which is
// what happens when the scheduler fails to run them at the same time.
class Rendezvous {
 public:
  explicit Rendezvous(int parties) : parties_(parties) {}
  bool arrive() {
    std::unique_lock lock(mutex_);
    if (++arrived_ == parties_) cv_.notify_all();
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return arrived_ >= parties_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int parties_;
  int arrived_ = 0;
};

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = *makeTempDir("argus-sched-test"); }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void registerExecutor(const std::string& name, std::shared_ptr<Executor> e) {
    ASSERT_TRUE(registry_.add({name, "test executor", std::move(e)}));
  }
  RunOptions options(std::size_t threads = 4) {
    RunOptions o;
    o.cpuThreads = threads;
    o.workRoot = root_ / ("run" + std::to_string(runs_++));
    return o;
  }
  RunReport run(const Plan& plan, RunOptions o) {
    Scheduler s(registry_, store_, std::move(o));
    auto r = s.run(plan);
    EXPECT_TRUE(r) << r.error().text();
    return r ? std::move(*r) : RunReport{};
  }
  TaskState state(const RunReport& r, const std::string& id) {
    const TaskReport* t = r.find(id);
    EXPECT_NE(t, nullptr) << id;
    return t ? t->outcome.state : TaskState::Pending;
  }

  fs::path root_;
  int runs_ = 0;
  ExecutorRegistry registry_;
  MemoryResultStore store_;
  Timeline timeline_;
};

// An executor's version is part of its tasks' memo keys: a store filled by an older version of
// an executor (another lowering, say) is not reused by a newer one, and is by the same one.
TEST(SchedulerMemo, AnExecutorsVersionIsPartOfItsTasksKeys) {
  auto root = makeTempDir("argus-sched-version");
  ASSERT_TRUE(root.has_value());
  MemoryResultStore store;
  int executed = 0;
  const auto counting = [&](const std::string& version) {
    ExecutorRegistry registry;
    EXPECT_TRUE(
        registry.add({"cpu", "test executor", std::make_shared<FunctionExecutor>([&](TaskContext&) {
                        ++executed;
                        TaskOutputs out;
                        out.artifacts["out"] = Artifact::fromData("x");
                        return Result<TaskOutputs>(std::move(out));
                      }),
                      version}));
    return registry;
  };
  Plan plan;
  ASSERT_TRUE(plan.add(task("a", "cpu")));
  const auto runWith = [&](const std::string& version) {
    ExecutorRegistry registry = counting(version);
    RunOptions o;
    o.workRoot = *root / ("run-" + version + std::to_string(executed));
    Scheduler s(registry, store, o);
    auto r = s.run(plan);
    EXPECT_TRUE(r && r->ok()) << (r ? r->toText() : r.error().text());
  };
  runWith("1");
  runWith("1");
  EXPECT_EQ(executed, 1) << "the same version reuses the output";
  runWith("2");
  EXPECT_EQ(executed, 2) << "another version runs the task again";
  TaskDescriptor t;
  t.id = "a";
  EXPECT_EQ(memoKey(t, {}), memoKey(t, {}, ""))
      << "no version keeps the key executors had before versions";
  EXPECT_NE(memoKey(t, {}, "1"), memoKey(t, {}, "2"));
  std::error_code ec;
  fs::remove_all(*root, ec);
}

TEST_F(SchedulerTest, TasksNeverStartBeforeTheirInputs) {
  registerExecutor("cpu", test::recordingExecutor(timeline_, [](TaskContext&) -> Result<void> {
                     std::this_thread::sleep_for(std::chrono::milliseconds(2));
                     return {};
                   }));
  Plan p;
  // Two diamonds joined by a chain, with an ordering-only dependency.
  ASSERT_TRUE(p.add(task("a", "cpu")));
  ASSERT_TRUE(p.add(task("b1", "cpu", {"a.out"})));
  ASSERT_TRUE(p.add(task("b2", "cpu", {"a.out"})));
  ASSERT_TRUE(p.add(task("c", "cpu", {"x=b1.out", "y=b2.out"})));
  ASSERT_TRUE(p.add(task("d", "cpu", {"c.out"})));
  auto e = task("e", "cpu");
  e.dependencies = {"d"};
  ASSERT_TRUE(p.add(e));
  ASSERT_TRUE(p.add(task("f", "cpu", {"e.out", "b1.out"})));
  auto report = run(p, options());
  ASSERT_TRUE(report.ok()) << report.toText();
  auto spans = timeline_.spans();
  ASSERT_EQ(spans.size(), p.size());
  for (const auto& t : p.tasks())
    for (const auto& up : t.upstream())
      EXPECT_LE(spans[up].end, spans[t.id].start) << up << " -> " << t.id;
}

TEST_F(SchedulerTest, InputsArriveByBindingName) {
  std::mutex m;
  std::map<std::string, std::string> seen;
  registerExecutor("cpu",
                   std::make_shared<FunctionExecutor>([&](TaskContext& ctx) -> Result<TaskOutputs> {
                     std::string text = ctx.task.id;
                     for (const auto& [name, a] : ctx.inputs) text += "," + name + "=" + *a.read();
                     std::lock_guard lock(m);
                     seen[ctx.task.id] = text;
                     TaskOutputs o;
                     o.artifacts["out"] = Artifact::fromData(ctx.task.id + "!");
                     return o;
                   }));
  Plan p;
  ASSERT_TRUE(p.add(task("a", "cpu")));
  ASSERT_TRUE(p.add(task("b", "cpu")));
  ASSERT_TRUE(p.add(task("c", "cpu", {"left=a.out", "right=b.out"})));
  auto report = run(p, options());
  ASSERT_TRUE(report.ok()) << report.toText();
  EXPECT_EQ(seen["c"], "c,left=a!,right=b!");
}

TEST_F(SchedulerTest, WideLevelsRunInParallel) {
  constexpr int kWidth = 4;
  Rendezvous meet(kWidth);
  registerExecutor("cpu", test::recordingExecutor(timeline_, [&](TaskContext&) -> Result<void> {
                     if (!meet.arrive()) return fail("test", "the other tasks never ran alongside");
                     return {};
                   }));
  Plan p;
  for (int i = 0; i < kWidth; ++i) ASSERT_TRUE(p.add(task("w" + std::to_string(i), "cpu")));
  auto report = run(p, options(kWidth));
  ASSERT_TRUE(report.ok()) << report.toText();
  auto spans = timeline_.spans();
  auto latestStart = SteadyClock::time_point::min();
  auto earliestEnd = SteadyClock::time_point::max();
  for (const auto& [id, s] : spans) {
    latestStart = std::max(latestStart, s.start);
    earliestEnd = std::min(earliestEnd, s.end);
  }
  EXPECT_LT(latestStart, earliestEnd) << "all tasks were running at one moment";
  std::set<std::string> lanes;
  for (const auto& t : report.tasks) lanes.insert(t.outcome.lane.name());
  EXPECT_EQ(lanes.size(), static_cast<std::size_t>(kWidth));
}

TEST_F(SchedulerTest, CpuWorkOverlapsGpuWork) {
  Rendezvous meet(2);
  auto meetAndRecord = test::recordingExecutor(timeline_, [&](TaskContext&) -> Result<void> {
    if (!meet.arrive()) return fail("test", "CPU and GPU work did not overlap");
    return {};
  });
  registerExecutor("cpu", meetAndRecord);
  registerExecutor("gpu", meetAndRecord);
  Plan p;
  ASSERT_TRUE(p.add(task("parse", "cpu")));
  ASSERT_TRUE(p.add(gpuTask("collect", "gpu")));
  auto o = options(1);
  o.devices = {"0"};
  auto report = run(p, o);
  ASSERT_TRUE(report.ok()) << report.toText();
  EXPECT_TRUE(report.find("collect")->outcome.lane.gpu);
  EXPECT_FALSE(report.find("parse")->outcome.lane.gpu);
}

// A discovery task materializes one transform -> collect branch per discovered op; the synthesis
// task that depends on discovery waits for every branch and sees their evidence.
TEST_F(SchedulerTest, ControlTasksAddBranchesThatSynthesisWaitsFor) {
  std::atomic<int> discoveries{0};
  registerExecutor(
      "discover", std::make_shared<FunctionExecutor>([&](TaskContext& ctx) -> Result<TaskOutputs> {
        ++discoveries;
        TaskOutputs out;
        out.artifacts["ops"] = Artifact::fromData("op0,op1,op2");
        for (int op = 0; op < 3; ++op) {
          std::string n = std::to_string(op);
          out.branches.push_back(task("probe" + n, "cpu", {"ptx=" + ctx.task.id + ".ops"}));
          auto c = gpuTask("collect" + n, "gpu", {"bin=probe" + n + ".out"}, {"evidence"});
          c.isolation.exclusiveDevice = true;
          out.branches.push_back(c);
        }
        return out;
      }));
  registerExecutor("cpu", test::recordingExecutor(timeline_));
  registerExecutor("gpu", test::recordingExecutor(timeline_, [](TaskContext&) -> Result<void> {
                     std::this_thread::sleep_for(std::chrono::milliseconds(5));
                     return {};
                   }));
  std::mutex m;
  std::vector<std::string> evidenceSeen;
  registerExecutor("synth",
                   test::recordingExecutor(timeline_, [&](TaskContext& ctx) -> Result<void> {
                     std::lock_guard lock(m);
                     for (const auto& [key, a] : ctx.evidence) evidenceSeen.push_back(key);
                     return {};
                   }));
  Plan p;
  ASSERT_TRUE(p.add(task("discover", "discover", {}, {"ops"}, TaskType::Control)));
  ASSERT_TRUE(
      p.add(task("report", "synth", {"ops=discover.ops"}, {"report"}, TaskType::Synthesize)));
  auto o = options();
  o.devices = {"0", "1"};
  auto report = run(p, o);
  ASSERT_TRUE(report.ok()) << report.toText();
  EXPECT_EQ(report.plan.size(), 8u);
  EXPECT_EQ(report.counts.total, 8u);
  auto spans = timeline_.spans();
  for (int op = 0; op < 3; ++op) {
    std::string c = "collect" + std::to_string(op);
    ASSERT_TRUE(spans.contains(c));
    EXPECT_LE(spans[c].end, spans["report"].start) << "synthesis started before " << c;
    EXPECT_NE(std::find(evidenceSeen.begin(), evidenceSeen.end(), c + "/evidence"),
              evidenceSeen.end());
  }
  // The final plan prints with its branches.
  EXPECT_NE(report.plan.toDot().find("\"probe1\" -> \"collect1\""), std::string::npos);

  // Rerun: everything is memoized, and the memoized discovery re-creates the same branches.
  auto again = run(p, options());
  EXPECT_TRUE(again.ok()) << again.toText();
  EXPECT_EQ(again.counts.memoized, 8u) << again.toJson().dump(1);
  EXPECT_EQ(again.plan.size(), 8u);
  EXPECT_EQ(discoveries.load(), 1);
}

TEST_F(SchedulerTest, FailedBranchSkipsOnlyItsDependents) {
  registerExecutor("cpu", test::recordingExecutor(timeline_));
  registerExecutor("bad", test::recordingExecutor(timeline_, [](TaskContext& ctx) -> Result<void> {
                     ctx.log += "compiler said: syntax error\n";
                     return fail("test", "compile failed");
                   }));
  Plan p;
  ASSERT_TRUE(p.add(task("a", "cpu")));
  ASSERT_TRUE(p.add(task("broken", "bad", {"a.out"})));
  ASSERT_TRUE(p.add(task("after", "cpu", {"broken.out"})));
  ASSERT_TRUE(p.add(task("after2", "cpu", {"after.out", "a.out"})));
  ASSERT_TRUE(p.add(task("fine", "cpu", {"a.out"})));
  auto report = run(p, options());
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(state(report, "broken"), TaskState::Failed);
  EXPECT_EQ(state(report, "after"), TaskState::Skipped);
  EXPECT_EQ(state(report, "after2"), TaskState::Skipped);
  EXPECT_EQ(state(report, "fine"), TaskState::Succeeded);
  EXPECT_NE(report.find("after2")->outcome.error.find("blocked"), std::string::npos);
  ASSERT_EQ(report.failures().size(), 1u);
  EXPECT_EQ(report.failures()[0]->log, "compiler said: syntax error\n");
  EXPECT_NE(report.toText().find("compiler said: syntax error"), std::string::npos);
  EXPECT_FALSE(timeline_.spans().contains("after"));
}

// A synthesis with config.partial_branches runs with the branches that succeeded; without it,
// one failed branch blocks it (the probe join uses the former to answer for the other probes).
TEST_F(SchedulerTest, PartialBranchesLetSynthesisRunWithTheBranchesThatSucceeded) {
  registerExecutor(
      "discover", std::make_shared<FunctionExecutor>([&](TaskContext& ctx) -> Result<TaskOutputs> {
        TaskOutputs out;
        out.artifacts["ops"] = Artifact::fromData("op0,op1,op2");
        for (int op = 0; op < 3; ++op) {
          std::string n = std::to_string(op);
          out.branches.push_back(
              task("probe" + n, op == 1 ? "bad" : "cpu", {"ptx=" + ctx.task.id + ".ops"}));
          out.branches.push_back(
              task("collect" + n, "cpu", {"bin=probe" + n + ".out"}, {"evidence"}));
        }
        return out;
      }));
  registerExecutor("cpu", test::recordingExecutor(timeline_));
  registerExecutor("bad", test::recordingExecutor(timeline_, [](TaskContext&) -> Result<void> {
                     return fail("test", "probe build failed");
                   }));
  std::mutex m;
  std::vector<std::string> evidenceSeen;
  registerExecutor("synth",
                   test::recordingExecutor(timeline_, [&](TaskContext& ctx) -> Result<void> {
                     std::lock_guard lock(m);
                     for (const auto& [key, a] : ctx.evidence) evidenceSeen.push_back(key);
                     return {};
                   }));
  for (bool partial : {true, false}) {
    evidenceSeen.clear();
    Plan p;
    ASSERT_TRUE(p.add(task("discover", "discover", {}, {"ops"}, TaskType::Control)));
    auto join = task("join", "synth", {"ops=discover.ops"}, {"report"}, TaskType::Synthesize);
    if (partial) join.config["partial_branches"] = true;
    ASSERT_TRUE(p.add(join));
    auto o = options();
    o.workRoot = root_ / (partial ? "partial" : "strict");
    auto report = run(p, o);
    EXPECT_EQ(state(report, "probe1"), TaskState::Failed);
    EXPECT_EQ(state(report, "collect1"), TaskState::Skipped);
    EXPECT_TRUE(state(report, "collect0") == TaskState::Succeeded ||
                state(report, "collect0") == TaskState::Memoized);  // memoized on the 2nd run
    if (!partial) {
      EXPECT_EQ(state(report, "join"), TaskState::Skipped);
      continue;
    }
    ASSERT_EQ(state(report, "join"), TaskState::Succeeded) << report.toText();
    auto seen = [&](const std::string& key) {
      return std::find(evidenceSeen.begin(), evidenceSeen.end(), key) != evidenceSeen.end();
    };
    EXPECT_TRUE(seen("collect0/evidence"));
    EXPECT_TRUE(seen("collect2/evidence"));
    EXPECT_FALSE(seen("collect1/evidence"));
  }
}

// Stand-in GPU workers that abort, hang and write garbage each fail only their own branch.
TEST_F(SchedulerTest, CrashingHangingAndGarbageWorkersAreContained) {
  registerExecutor("ok", std::make_shared<test::ScriptExecutor>("ok"));
  registerExecutor("abort", std::make_shared<test::ScriptExecutor>("abort"));
  registerExecutor("hang", std::make_shared<test::ScriptExecutor>("hang"));
  registerExecutor("garbage", std::make_shared<test::ScriptExecutor>("garbage"));
  registerExecutor("cpu", test::recordingExecutor(timeline_));
  Plan p;
  ASSERT_TRUE(p.add(task("compile", "cpu")));
  for (std::string mode : {"ok", "abort", "hang", "garbage"}) {
    auto c = gpuTask("collect-" + mode, mode, {"bin=compile.out"});
    if (mode == "hang") c.timeoutSeconds = 0.3;
    ASSERT_TRUE(p.add(c));
    ASSERT_TRUE(p.add(task("parse-" + mode, "cpu", {"collect-" + mode + ".out"})));
  }
  auto o = options();
  o.devices = {"0", "1"};
  auto start = SteadyClock::now();
  auto report = run(p, o);
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(state(report, "collect-ok"), TaskState::Succeeded);
  EXPECT_EQ(state(report, "parse-ok"), TaskState::Succeeded);
  EXPECT_EQ(state(report, "collect-abort"), TaskState::Failed);
  EXPECT_EQ(state(report, "collect-hang"), TaskState::TimedOut);
  EXPECT_EQ(state(report, "collect-garbage"), TaskState::Failed);
  for (std::string mode : {"abort", "hang", "garbage"})
    EXPECT_EQ(state(report, "parse-" + mode), TaskState::Skipped) << mode;
  EXPECT_NE(report.find("collect-abort")->outcome.error.find("SIGABRT"), std::string::npos)
      << report.find("collect-abort")->outcome.error;
  EXPECT_NE(report.find("collect-abort")->log.find("about to abort"), std::string::npos);
  EXPECT_NE(report.find("collect-hang")->outcome.error.find("timeout"), std::string::npos);
  EXPECT_NE(report.find("collect-hang")->log.find("hanging"), std::string::npos);
  EXPECT_NE(report.find("collect-garbage")->outcome.error.find("not JSON"), std::string::npos)
      << report.find("collect-garbage")->outcome.error;
  EXPECT_EQ(report.failures().size(), 3u);
  // The store saw the failures with their logs.
  std::size_t failedRecords = 0;
  for (const auto& r : store_.records())
    if (r.state != TaskState::Succeeded) {
      ++failedRecords;
      EXPECT_FALSE(r.log.empty()) << r.taskId;
    }
  EXPECT_EQ(failedRecords, 3u);
}

TEST_F(SchedulerTest, DefaultTimeoutAppliesAndLateInProcessResultsAreDiscarded) {
  registerExecutor("slow", test::recordingExecutor(timeline_, [](TaskContext&) -> Result<void> {
                     std::this_thread::sleep_for(std::chrono::milliseconds(150));
                     return {};
                   }));
  registerExecutor("hang", std::make_shared<test::ScriptExecutor>("hang"));
  Plan p;
  ASSERT_TRUE(p.add(task("slow", "slow")));
  ASSERT_TRUE(p.add(task("hang", "hang")));  // a worker process on the CPU side
  auto o = options();
  o.defaultTimeout = std::chrono::milliseconds(50);
  auto report = run(p, o);
  EXPECT_EQ(state(report, "slow"), TaskState::TimedOut);
  EXPECT_EQ(state(report, "hang"), TaskState::TimedOut);
}

TEST_F(SchedulerTest, IncompatibleCollectionsAreSerializedPerDevice) {
  fs::path locks = root_ / "locks";
  fs::create_directories(locks);
  // Exclusive probes take a per-device lock in the worker itself and fail if it is held.
  registerExecutor("exclusive",
                   std::make_shared<test::ScriptExecutor>("exclusive", locks.string()));
  registerExecutor("ok", std::make_shared<test::ScriptExecutor>("ok"));
  Plan p;
  for (int i = 0; i < 8; ++i) {
    auto c = gpuTask("probe" + std::to_string(i), "exclusive");
    c.isolation.exclusiveDevice = true;
    ASSERT_TRUE(p.add(c));
  }
  // Incompatible groups: timing runs never share a device with patching runs.
  for (int i = 0; i < 3; ++i) {
    auto timing = gpuTask("timing" + std::to_string(i), "ok");
    timing.isolation.group = "timing";
    timing.isolation.incompatibleWith = {"patching"};
    timing.config["i"] = i;
    ASSERT_TRUE(p.add(timing));
    auto patching = gpuTask("patching" + std::to_string(i), "ok");
    patching.isolation.group = "patching";
    patching.config["i"] = i;
    ASSERT_TRUE(p.add(patching));
  }
  auto o = options();
  o.devices = {"0", "1"};
  auto report = run(p, o);
  ASSERT_TRUE(report.ok()) << report.toText();
  std::map<std::string, std::vector<const TaskReport*>> byDevice;
  for (const auto& t : report.tasks) byDevice[t.outcome.lane.device].push_back(&t);
  EXPECT_EQ(byDevice.size(), 2u) << "both devices were used";
  auto mustSeparate = [&](const TaskReport* a, const TaskReport* b) {
    const auto& ia = report.plan.find(a->id)->isolation;
    const auto& ib = report.plan.find(b->id)->isolation;
    return ia.exclusiveDevice || ib.exclusiveDevice || ia.group != ib.group;
  };
  std::size_t checkedPairs = 0;
  for (const auto& [device, tasks] : byDevice)
    for (const auto* a : tasks)
      for (const auto* b : tasks) {
        if (a == b || !mustSeparate(a, b)) continue;
        ++checkedPairs;
        bool overlap = a->outcome.start < b->outcome.end && b->outcome.start < a->outcome.end;
        EXPECT_FALSE(overlap) << a->id << " and " << b->id << " overlapped on device " << device;
      }
  EXPECT_GT(checkedPairs, 20u);
}

// Probe collections that take GPU turns start together on one device, up to the limit, but
// never beside a task that does not take turns.
TEST_F(SchedulerTest, TurnTakingTasksShareADeviceOnlyWithEachOther) {
  registerExecutor("gpu", test::recordingExecutor(timeline_, [](TaskContext&) -> Result<void> {
                     std::this_thread::sleep_for(std::chrono::milliseconds(60));
                     return {};
                   }));
  Plan p;
  for (int i = 0; i < 6; ++i) {
    auto c = gpuTask("probe" + std::to_string(i), "gpu");
    c.isolation.gpuTurns = true;
    c.isolation.group = c.id;
    ASSERT_TRUE(p.add(c));
  }
  for (int i = 0; i < 2; ++i) {
    auto c = gpuTask("timing" + std::to_string(i), "gpu");
    c.config["i"] = i;
    ASSERT_TRUE(p.add(c));
  }
  auto o = options();
  o.devices = {"0"};
  o.maxTasksPerDevice = 1;
  o.maxTurnTasksPerDevice = 3;
  auto report = run(p, o);
  ASSERT_TRUE(report.ok()) << report.toText();
  const auto& plan = report.plan;
  std::size_t mostAtOnce = 0;  // tasks running at the moment one of them starts
  for (const auto& a : report.tasks) {
    std::size_t atOnce = 0;
    for (const auto& b : report.tasks) {
      atOnce += b.outcome.start <= a.outcome.start && a.outcome.start < b.outcome.end;
      const bool overlap = a.outcome.start < b.outcome.end && b.outcome.start < a.outcome.end;
      if (overlap && &a != &b) {
        EXPECT_TRUE(plan.find(a.id)->isolation.gpuTurns && plan.find(b.id)->isolation.gpuTurns)
            << a.id << " and " << b.id << " shared the device";
      }
    }
    mostAtOnce = std::max(mostAtOnce, atOnce);
  }
  EXPECT_GE(mostAtOnce, 2u) << "turn-taking tasks never ran together";
  EXPECT_LE(mostAtOnce, 3u) << "more turn-taking tasks at once than maxTurnTasksPerDevice";
}

// A multi-GPU program's collection holds every device it asked for, alone, and names them all in
// its lane (CUDA_VISIBLE_DEVICES); one that asks for more than the machine has fails at once.
TEST_F(SchedulerTest, MultiGpuTasksHoldWholeDevices) {
  registerExecutor("ok", std::make_shared<test::ScriptExecutor>("ok"));
  Plan p;
  for (int i = 0; i < 4; ++i) {
    auto single = gpuTask("single" + std::to_string(i), "ok");
    single.config["i"] = i;
    ASSERT_TRUE(p.add(single));
  }
  auto both = gpuTask("both", "ok");
  both.gpus = 2;
  ASSERT_TRUE(p.add(both));
  auto all = gpuTask("all", "ok");
  all.gpus = 0;
  all.config["all"] = true;
  ASSERT_TRUE(p.add(all));
  auto o = options();
  o.devices = {"0", "1"};
  auto report = run(p, o);
  ASSERT_TRUE(report.ok()) << report.toText();
  std::map<std::string, const TaskReport*> byId;
  for (const auto& t : report.tasks) byId[t.id] = &t;
  for (const char* id : {"both", "all"}) {
    const TaskReport* multi = byId.at(id);
    EXPECT_EQ(multi->outcome.lane.device, "0,1") << id;
    for (const auto& t : report.tasks) {
      if (t.id == id) continue;
      const bool overlap =
          t.outcome.start < multi->outcome.end && multi->outcome.start < t.outcome.end;
      EXPECT_FALSE(overlap) << t.id << " ran beside " << id;
    }
  }

  Plan tooMany;
  auto three = gpuTask("three", "ok");
  three.gpus = 3;
  ASSERT_TRUE(tooMany.add(three));
  auto failed = run(tooMany, o);
  EXPECT_EQ(state(failed, "three"), TaskState::Failed);
  EXPECT_NE(failed.toText().find("needs 3 GPUs at once and this machine has 2"), std::string::npos)
      << failed.toText();
}

// Devices of several machines (a Slurm partition's): a run of `all` GPUs holds one machine's
// worth, and one that asks for more than a machine has fails with that reason.
TEST_F(SchedulerTest, ARunOfAllGpusHoldsOneNodesWorth) {
  registerExecutor("ok", std::make_shared<test::ScriptExecutor>("ok"));
  Plan p;
  auto all = gpuTask("all", "ok");
  all.gpus = 0;
  ASSERT_TRUE(p.add(all));
  auto o = options();
  o.devices = {"0", "1", "2", "3"};  // two nodes of two
  o.maxDevicesPerTask = 2;
  auto report = run(p, o);
  ASSERT_TRUE(report.ok()) << report.toText();
  EXPECT_EQ(report.tasks.front().outcome.lane.device, "0,1");

  Plan tooMany;
  auto three = gpuTask("three", "ok");
  three.gpus = 3;
  ASSERT_TRUE(tooMany.add(three));
  auto failed = run(tooMany, o);
  EXPECT_EQ(state(failed, "three"), TaskState::Failed);
  EXPECT_NE(failed.toText().find("needs 3 GPUs at once and one node has at most 2"),
            std::string::npos)
      << failed.toText();
}

TEST_F(SchedulerTest, CompatibleCollectionsShareADevice) {
  fs::path meet = root_ / "meet";
  fs::create_directories(meet);
  registerExecutor("meet",
                   std::make_shared<test::ScriptExecutor>("rendezvous", meet.string() + ":2"));
  Plan p;
  for (int i = 0; i < 2; ++i) {
    auto c = gpuTask("trace" + std::to_string(i), "meet");
    c.isolation.group = "timing";
    ASSERT_TRUE(p.add(c));
  }
  auto o = options();
  o.devices = {"0"};
  o.maxTasksPerDevice = 2;
  auto report = run(p, o);
  ASSERT_TRUE(report.ok()) << report.toText();
  EXPECT_EQ(report.tasks[0].outcome.lane.device, "0");
  EXPECT_NE(report.tasks[0].outcome.lane.slot, report.tasks[1].outcome.lane.slot);
}

TEST_F(SchedulerTest, RerunExecutesOnlyWhatFailed) {
  std::atomic<bool> flaky{true};
  std::mutex m;
  std::multiset<std::string> executed;
  auto recordingBody = [&](TaskContext& ctx) -> Result<void> {
    std::lock_guard lock(m);
    executed.insert(ctx.task.id);
    if (ctx.task.id == "c" && flaky.load()) return fail("test", "transient failure");
    return {};
  };
  registerExecutor("cpu", test::recordingExecutor(timeline_, recordingBody));
  Plan p;
  ASSERT_TRUE(p.add(task("a", "cpu")));
  ASSERT_TRUE(p.add(task("b", "cpu", {"a.out"})));
  ASSERT_TRUE(p.add(task("c", "cpu", {"a.out"})));
  ASSERT_TRUE(p.add(task("d", "cpu", {"c.out"})));
  ASSERT_TRUE(p.add(task("e", "cpu", {"b.out", "d.out"})));
  auto first = run(p, options());
  EXPECT_EQ(state(first, "c"), TaskState::Failed);
  EXPECT_EQ(state(first, "d"), TaskState::Skipped);
  EXPECT_EQ(state(first, "e"), TaskState::Skipped);
  EXPECT_EQ(executed, (std::multiset<std::string>{"a", "b", "c"}));

  executed.clear();
  flaky = false;
  auto second = run(p, options());
  ASSERT_TRUE(second.ok()) << second.toText();
  EXPECT_EQ(executed, (std::multiset<std::string>{"c", "d", "e"}));
  EXPECT_EQ(state(second, "a"), TaskState::Memoized);
  EXPECT_EQ(state(second, "b"), TaskState::Memoized);
  EXPECT_FALSE(second.find("a")->executed);
  EXPECT_TRUE(second.find("c")->executed);

  executed.clear();
  auto third = run(p, options());
  EXPECT_TRUE(third.ok());
  EXPECT_TRUE(executed.empty());
  EXPECT_EQ(third.counts.memoized, 5u);
}

// Ctrl-C: the real SIGINT handler raises the flag; no new dispatches, the running worker is
// terminated, everything unfinished is recorded as cancelled.
class CancelOnStart final : public RunObserver {
 public:
  explicit CancelOnStart(std::string id) : id_(std::move(id)) {}
  void onTaskStart(const TaskDescriptor& t, const Lane&, const RunCounts&) override {
    if (t.id == id_) ::raise(SIGINT);
  }

 private:
  std::string id_;
};

TEST_F(SchedulerTest, SigintCancelsTheRunCleanly) {
  registerExecutor("hang", std::make_shared<test::ScriptExecutor>("hang"));
  registerExecutor("cpu", test::recordingExecutor(timeline_));
  Plan p;
  ASSERT_TRUE(p.add(gpuTask("collect", "hang")));
  ASSERT_TRUE(p.add(task("parse", "cpu", {"collect.out"})));
  auto queued = gpuTask("collect2", "hang");
  queued.isolation.exclusiveDevice = true;
  ASSERT_TRUE(p.add(queued));
  resetInterruptFlag();
  installInterruptHandler();
  CancelOnStart observer("collect");
  auto o = options();
  o.devices = {"0"};
  o.cancelFlag = interruptFlag();
  o.observers = {&observer};
  auto start = SteadyClock::now();
  auto report = run(p, o);
  ::signal(SIGINT, SIG_DFL);
  resetInterruptFlag();
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(report.cancelled);
  EXPECT_EQ(state(report, "collect"), TaskState::Cancelled);
  EXPECT_TRUE(report.find("collect")->executed);
  EXPECT_EQ(state(report, "parse"), TaskState::Cancelled);
  EXPECT_EQ(state(report, "collect2"), TaskState::Cancelled);
  EXPECT_FALSE(report.find("collect2")->executed);
  EXPECT_TRUE(timeline_.spans().empty());
  EXPECT_EQ(report.toJson()["cancelled"], true);
}

TEST_F(SchedulerTest, CancelMethodStopsInProcessWork) {
  Scheduler* current = nullptr;
  registerExecutor("cpu",
                   std::make_shared<FunctionExecutor>([&](TaskContext& ctx) -> Result<TaskOutputs> {
                     current->cancel();
                     while (!ctx.cancelled())
                       std::this_thread::sleep_for(std::chrono::milliseconds(1));
                     return fail("test", "stopped");
                   }));
  Plan p;
  ASSERT_TRUE(p.add(task("a", "cpu")));
  ASSERT_TRUE(p.add(task("b", "cpu", {"a.out"})));
  Scheduler s(registry_, store_, options());
  current = &s;
  auto r = s.run(p);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->cancelled);
  EXPECT_EQ(state(*r, "a"), TaskState::Cancelled);
  EXPECT_EQ(state(*r, "b"), TaskState::Cancelled);
}

TEST_F(SchedulerTest, ConfigurationProblemsFailTheTaskWithAReason) {
  registerExecutor("cpu", test::recordingExecutor(timeline_));
  Plan p;
  ASSERT_TRUE(p.add(task("a", "nvbit")));
  ASSERT_TRUE(p.add(gpuTask("g", "cpu")));
  ASSERT_TRUE(p.add(task("ok", "cpu")));
  auto report = run(p, options());  // no devices
  EXPECT_NE(report.find("a")->outcome.error.find("no executor `nvbit`"), std::string::npos);
  EXPECT_NE(report.find("g")->outcome.error.find("no devices"), std::string::npos);
  EXPECT_EQ(state(report, "ok"), TaskState::Succeeded);

  Plan invalid;
  ASSERT_TRUE(invalid.add(task("x", "cpu", {"ghost.out"})));
  Scheduler s(registry_, store_, options());
  EXPECT_FALSE(s.run(invalid));
}

TEST_F(SchedulerTest, InvalidBranchesFailTheControlTask) {
  registerExecutor("cpu", test::recordingExecutor(timeline_));
  registerExecutor(
      "control", std::make_shared<FunctionExecutor>([](TaskContext&) -> Result<TaskOutputs> {
        TaskOutputs out;
        out.branches.push_back(task("loop", "cpu", {"report.out"}));  // waits for its own waiter
        return out;
      }));
  Plan p;
  ASSERT_TRUE(p.add(task("discover", "control", {}, {}, TaskType::Control)));
  auto waiter = task("report", "cpu", {}, {"out"});
  waiter.dependencies = {"discover"};
  ASSERT_TRUE(p.add(waiter));
  ASSERT_TRUE(p.add(task("free", "cpu")));
  auto report = run(p, options());
  EXPECT_EQ(state(report, "discover"), TaskState::Failed);
  EXPECT_NE(report.find("discover")->outcome.error.find("cycle"), std::string::npos)
      << report.find("discover")->outcome.error;
  EXPECT_EQ(state(report, "report"), TaskState::Skipped);
  EXPECT_EQ(state(report, "free"), TaskState::Succeeded);
}

}  // namespace
}  // namespace argus::runtime
