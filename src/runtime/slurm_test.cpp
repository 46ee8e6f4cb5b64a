// The runtime's workers as jobs of a real Slurm cluster: one node, this machine, with two counted
// GPUs (no real one: Slurm grants and accounts them), started for the suite by
// tests/slurm/local_cluster.sh (Debian's munged, slurmctld, slurmd) and stopped after.
// Tasks run a shell worker through SlurmLauncher: they must run as Slurm jobs, publish their
// outputs through the coordinator, and a job cancelled mid-run or past its deadline must fail only
// its own branch, leave no job behind, and run again alone on the next run.
#include <cstdlib>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "argus/runtime/launcher.h"
#include "argus/runtime/scheduler.h"
#include "argus/support/process.h"
#include "runtime_test_util.h"

namespace argus::runtime {
namespace {

namespace fs = std::filesystem;
using test::task;

/// The suite's cluster: started once, stopped at the end; `skip` says why when it cannot start.
class Cluster {
 public:
  static Cluster& get() {
    static Cluster cluster;
    return cluster;
  }
  ~Cluster() {
    if (!dir_.empty()) (void)runProcess({ARGUS_SLURM_CLUSTER, "stop", dir_.string()});
  }
  std::string skip;

 private:
  Cluster() {
    auto root = makeTempDir("argus-slurm");
    if (!root) {
      skip = root.error().text();
      return;
    }
    // Two counted GPUs (stand-in device files): Slurm grants and accounts GPU requests.
    auto started = runProcess({ARGUS_SLURM_CLUSTER, "start", (*root / "cluster").string(), "2"},
                              {.timeout = std::chrono::seconds(60)});
    if (!started || started->exitCode != 0) {
      skip =
          "no Slurm cluster could start here: " + (started ? started->err : started.error().text());
      return;
    }
    dir_ = *root / "cluster";
    ::setenv("SLURM_CONF", (dir_ / "slurm.conf").c_str(), 1);
  }
  fs::path dir_;
};

/// A worker: a shell script run in the task directory, which writes `out` and the manifest;
/// ARGUS_TEST_SCRIPT (before the outputs) is the test's own part.
std::shared_ptr<Executor> shellWorker(const std::string& before) {
  return std::make_shared<CommandExecutor>(std::vector<std::string>{
      "sh", "-c",
      before + "\necho \"job=$SLURM_JOB_ID\"\nprintf '%s' \"$SLURM_JOB_ID\" > out.txt\n"
               "printf '{\"argus_manifest\": 1, \"status\": \"ok\", \"outputs\": {\"out\": "
               "\"out.txt\"}}' > manifest.json\n"});
}

/// Whether a job of this process is still known to Slurm 10 s on (a cancelled job completes
/// within the cluster's KillWait of 2 s).
bool jobsLeft() {
  for (int i = 0; i < 50; ++i) {
    auto q = runProcess({"squeue", "--noheader", "--format=%j"});
    if (q && q->out.find(fmt::format("argus-{}-", ::getpid())) == std::string::npos) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return true;
}

class SlurmRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Cluster::get().skip.empty()) GTEST_SKIP() << Cluster::get().skip;
    root_ = *makeTempDir("argus-slurm-run");
  }
  void TearDown() override {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }
  RunReport run(const Plan& plan, const ExecutorRegistry& registry,
                WorkerLauncher* launcher = nullptr, std::vector<std::string> devices = {}) {
    RunOptions o;
    o.cpuThreads = 2;
    o.devices = std::move(devices);
    o.maxTasksPerDevice = 1;
    o.workRoot = root_ / fmt::format("run{}", runs_++);
    o.launcher = launcher != nullptr ? launcher : &launcher_;
    Scheduler s(registry, store_, o);
    auto r = s.run(plan);
    EXPECT_TRUE(r) << r.error().text();
    return r ? std::move(*r) : RunReport{};
  }

  fs::path root_;
  int runs_ = 0;
  MemoryResultStore store_;
  SlurmLauncher launcher_{SlurmOptions{}};
};

TEST(SlurmLauncherCommand, OneJobPerWorkerWithItsGpusAndTimeLimit) {
  SlurmOptions options;
  options.partition = "gpu";
  options.account = "kernels";
  SlurmLauncher launcher(options);
  const LaunchRequest request{"collect/p0", "/shared/t", 2, std::chrono::milliseconds(61'000)};
  const auto argv = *launcher.wrap({"worker", "--x"}, request);
  const auto has = [&](const std::string& a) {
    return std::find(argv.begin(), argv.end(), a) != argv.end();
  };
  EXPECT_EQ(argv.front(), "srun");
  EXPECT_TRUE(has(fmt::format("--job-name=argus-{}-collect_p0", ::getpid())));
  EXPECT_TRUE(has("--chdir=/shared/t"));
  EXPECT_TRUE(has("--gres=gpu:2"));
  EXPECT_TRUE(has("--time=2"));  // 61 s, in whole minutes rounded up
  EXPECT_TRUE(has("--partition=gpu"));
  EXPECT_TRUE(has("--account=kernels"));
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ((std::vector<std::string>(argv.end() - 3, argv.end())),
            (std::vector<std::string>{"--", "worker", "--x"}));
  // A CPU task asks for no GPU.
  const auto cpu = *launcher.wrap({"w"}, LaunchRequest{"t", "/d", 0, std::nullopt});
  EXPECT_EQ(std::find_if(cpu.begin(), cpu.end(),
                         [](const std::string& a) { return a.starts_with("--gres"); }),
            cpu.end());
}

TEST(SlurmLauncherCommand, AWholeDeviceTaskAsksForEachOfItsGpus) {
  EXPECT_EQ(devicesIn(std::nullopt), 0u);
  EXPECT_EQ(devicesIn(std::string("3")), 1u);
  EXPECT_EQ(devicesIn(std::string("0,1")), 2u);
}

TEST_F(SlurmRun, WorkersRunAsJobsAndTheCoordinatorPublishes) {
  ExecutorRegistry registry;
  ASSERT_TRUE(registry.add({"shell", "shell worker", shellWorker("")}));
  Plan plan;
  ASSERT_TRUE(plan.add(task("a", "shell")));
  ASSERT_TRUE(plan.add(task("b", "shell", {"in=a.out"})));
  RunReport r = run(plan, registry);
  ASSERT_TRUE(r.ok()) << r.toText();
  for (const char* id : {"a", "b"}) {
    const TaskReport* t = r.find(id);
    ASSERT_NE(t, nullptr);
    EXPECT_NE(t->log.find("job="), std::string::npos) << t->log;
    auto published = store_.lookup(t->memoKey);
    ASSERT_TRUE(published.has_value()) << id << " was not published";
    auto bytes = published->artifacts.at("out").read();
    ASSERT_TRUE(bytes) << bytes.error().text();
    EXPECT_FALSE(bytes->empty()) << id << " ran outside a Slurm job";
    EXPECT_EQ(std::string(bytes->begin(), bytes->end()).find_first_not_of("0123456789"),
              std::string::npos)
        << *bytes;
  }
  EXPECT_FALSE(jobsLeft());
}

TEST_F(SlurmRun, AJobCancelledMidRunFailsOnlyItsBranchAndRerunsAlone) {
  const fs::path flag = root_ / "started";
  const fs::path attempts = root_ / "attempts";
  // Task `slow` signals that it started and, on its first attempt, waits to be cancelled.
  const std::string slow =
      fmt::format("echo x >> '{0}'\nif [ $(wc -l < '{0}') -eq 1 ]; then touch '{1}'; sleep 120; fi",
                  attempts.string(), flag.string());
  ExecutorRegistry registry;
  ASSERT_TRUE(registry.add({"shell", "shell worker", shellWorker("")}));
  ASSERT_TRUE(registry.add({"slow", "slow worker", shellWorker(slow)}));
  Plan plan;
  ASSERT_TRUE(plan.add(task("fast", "shell")));
  ASSERT_TRUE(plan.add(task("slow", "slow")));
  ASSERT_TRUE(plan.add(task("after", "shell", {"in=slow.out"})));
  std::thread killer([&] {
    for (int i = 0; i < 600 && !fs::exists(flag); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (void)runProcess({"scancel", fmt::format("--name=argus-{}-slow", ::getpid())});
  });
  RunReport first = run(plan, registry);
  killer.join();
  EXPECT_EQ(first.find("fast")->outcome.state, TaskState::Succeeded);
  EXPECT_EQ(first.find("slow")->outcome.state, TaskState::Failed) << first.toText();
  EXPECT_NE(first.find("after")->outcome.state, TaskState::Succeeded);
  EXPECT_FALSE(store_.lookup(first.find("slow")->memoKey).has_value())
      << "a cancelled job published an output";
  EXPECT_FALSE(jobsLeft());
  // The next run executes only what did not finish.
  RunReport second = run(plan, registry);
  ASSERT_TRUE(second.ok()) << second.toText();
  EXPECT_FALSE(second.find("fast")->executed);
  EXPECT_TRUE(second.find("slow")->executed);
  EXPECT_TRUE(second.find("after")->executed);
}

TEST_F(SlurmRun, AJobPastItsDeadlineIsCancelledInSlurmToo) {
  ExecutorRegistry registry;
  ASSERT_TRUE(registry.add({"sleepy", "sleeping worker", shellWorker("sleep 120")}));
  Plan plan;
  TaskDescriptor t = task("sleepy", "sleepy");
  t.timeoutSeconds = 3;
  ASSERT_TRUE(plan.add(t));
  const auto start = std::chrono::steady_clock::now();
  RunReport r = run(plan, registry);
  EXPECT_EQ(r.find("sleepy")->outcome.state, TaskState::TimedOut) << r.toText();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  EXPECT_FALSE(jobsLeft()) << "the job outlived its worker";
}

/// Options with batching: `slots` runs per allocation, of `minutes` each.
SlurmOptions batching(unsigned slots, int minutes = 60) {
  SlurmOptions o;
  o.batchSlots = slots;
  o.batchTime = std::chrono::minutes(minutes);
  return o;
}

/// The job ids the outputs of `ids` name (the worker writes its SLURM_JOB_ID).
std::vector<std::string> jobsOf(const RunReport& r, MemoryResultStore& store,
                                const std::vector<std::string>& ids) {
  std::vector<std::string> jobs;
  for (const auto& id : ids) {
    const TaskReport* t = r.find(id);
    if (t == nullptr) return {};
    auto published = store.lookup(t->memoKey);
    if (!published) return {};
    auto bytes = published->artifacts.at("out").read();
    if (!bytes) return {};
    jobs.emplace_back(bytes->begin(), bytes->end());
  }
  return jobs;
}

TEST_F(SlurmRun, BatchedWorkersAreStepsOfOneAllocation) {
  ExecutorRegistry registry;
  ASSERT_TRUE(registry.add({"shell", "shell worker", shellWorker("")}));
  Plan plan;
  for (const char* id : {"a", "b", "c"}) ASSERT_TRUE(plan.add(task(id, "shell")));
  ASSERT_TRUE(plan.add(task("d", "shell", {"in=a.out"})));
  {
    SlurmLauncher batched(batching(2));
    RunReport r = run(plan, registry, &batched);
    ASSERT_TRUE(r.ok()) << r.toText();
    const auto allocations = batched.allocations();
    ASSERT_EQ(allocations.size(), 1u);
    for (const auto& job : jobsOf(r, store_, {"a", "b", "c", "d"}))
      EXPECT_EQ(job, allocations.front()) << "a batched run ran outside the shared allocation";
    // The allocation outlives its steps; it is the launcher's until the launcher goes.
    auto q = runProcess({"squeue", "--noheader", "--format=%j", "--jobs=" + allocations.front()});
    ASSERT_TRUE(q);
    EXPECT_NE(q->out.find(fmt::format("argus-{}-batch-g0", ::getpid())), std::string::npos)
        << q->out;
  }
  EXPECT_FALSE(jobsLeft()) << "the launcher left its allocation behind";
}

TEST_F(SlurmRun, ARunThatDoesNotFitWhatIsLeftOfItsAllocationGetsANewOne) {
  ExecutorRegistry registry;
  ASSERT_TRUE(registry.add({"shell", "shell worker", shellWorker("")}));
  Plan first, second;
  ASSERT_TRUE(first.add(task("one", "shell")));
  ASSERT_TRUE(second.add(task("two", "shell")));
  {
    // A one-minute allocation keeps less than the minute a run needs to start in it.
    SlurmLauncher batched(batching(1, 1));
    RunReport r1 = run(first, registry, &batched);
    RunReport r2 = run(second, registry, &batched);
    ASSERT_TRUE(r1.ok() && r2.ok()) << r1.toText() << r2.toText();
    const auto allocations = batched.allocations();
    ASSERT_EQ(allocations.size(), 2u);
    EXPECT_EQ(jobsOf(r1, store_, {"one"}), std::vector<std::string>{allocations[0]});
    EXPECT_EQ(jobsOf(r2, store_, {"two"}), std::vector<std::string>{allocations[1]});
  }
  EXPECT_FALSE(jobsLeft());
}

TEST_F(SlurmRun, ABatchedRunPastItsDeadlineIsCancelledAndTheAllocationGoesOn) {
  ExecutorRegistry registry;
  ASSERT_TRUE(registry.add({"sleepy", "sleeping worker", shellWorker("sleep 120")}));
  ASSERT_TRUE(registry.add({"shell", "shell worker", shellWorker("")}));
  Plan slow, fast;
  TaskDescriptor t = task("sleepy", "sleepy");
  t.timeoutSeconds = 3;
  ASSERT_TRUE(slow.add(t));
  ASSERT_TRUE(fast.add(task("fast", "shell")));
  {
    SlurmLauncher batched(batching(2));
    const auto start = std::chrono::steady_clock::now();
    RunReport r = run(slow, registry, &batched);
    EXPECT_EQ(r.find("sleepy")->outcome.state, TaskState::TimedOut) << r.toText();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
    ASSERT_EQ(batched.allocations().size(), 1u);
    const std::string job = batched.allocations().front();
    // The step is gone from Slurm, the allocation is not, and the next run uses it.
    bool stepLeft = true;
    for (int i = 0; i < 50 && stepLeft; ++i) {
      auto steps = runProcess({"squeue", "--steps", "--noheader", "--format=%j", "--jobs=" + job});
      stepLeft = !steps || steps->out.find("sleepy") != std::string::npos;
      if (stepLeft) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_FALSE(stepLeft) << "the step outlived its worker";
    RunReport next = run(fast, registry, &batched);
    ASSERT_TRUE(next.ok()) << next.toText();
    EXPECT_EQ(jobsOf(next, store_, {"fast"}), std::vector<std::string>{job});
  }
  EXPECT_FALSE(jobsLeft());
}

TEST_F(SlurmRun, AnAllocationSlurmCannotGrantFailsTheRunsWithTheReason) {
  ExecutorRegistry registry;
  ASSERT_TRUE(registry.add({"shell", "shell worker", shellWorker("")}));
  Plan plan;
  TaskDescriptor t = task("a", "shell");
  t.timeoutSeconds = 5;  // also how long it may wait for its allocation
  ASSERT_TRUE(plan.add(t));
  {
    // More tasks at once than the one node has CPUs: the request stays pending.
    SlurmLauncher batched(batching(4096));
    RunReport r = run(plan, registry, &batched);
    EXPECT_EQ(r.find("a")->outcome.state, TaskState::Failed) << r.toText();
    EXPECT_NE(r.toText().find("did not grant an allocation"), std::string::npos) << r.toText();
    EXPECT_NE(r.toText().find("--slurm-batch"), std::string::npos) << r.toText();
    EXPECT_TRUE(batched.allocations().empty());
  }
  EXPECT_FALSE(jobsLeft());
}

TEST(SlurmGres, CountsTheGpusOfANode) {
  EXPECT_EQ(gpusInGres("gpu:2"), 2u);
  EXPECT_EQ(gpusInGres("gpu:h200:8(S:0-1)"), 8u);
  EXPECT_EQ(gpusInGres("gpu:a100:4(S:0-1),gpu:h100:2(S:1),nvme:1"), 6u);
  EXPECT_EQ(gpusInGres("nvme:1,mps:200"), 0u);
  EXPECT_EQ(gpusInGres("(null)"), 0u);
  EXPECT_EQ(gpusInGres(""), 0u);
  EXPECT_EQ(gpusInGres("gpu:h200:eight"), 0u);
}

TEST_F(SlurmRun, TheClustersGpusAreTheDeviceSlotsAndSlurmGrantsThem) {
  // A coordinator without a GPU (this machine) plans on the partition's GPUs.
  auto gpus = slurmDevices(SlurmOptions{});
  ASSERT_TRUE(gpus) << gpus.error().text();
  EXPECT_EQ(gpus->devices, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(gpus->largestNode, 2u);
  const auto* devices = &gpus->devices;
  // Each GPU run is a job (or step) of one GPU that Slurm gave it: SLURM_GPUS_ON_NODE is Slurm's
  // own, and the runtime sets no CUDA_VISIBLE_DEVICES of its own.
  ExecutorRegistry registry;
  ASSERT_TRUE(registry.add({"gpu", "GPU stand-in",
                            shellWorker("echo \"gpus=$SLURM_GPUS_ON_NODE "
                                        "cvd=$CUDA_VISIBLE_DEVICES\"")}));
  for (unsigned slots : {0u, 2u}) {
    // Tasks of their own per round: the same ones would be memoized.
    Plan plan;
    const std::vector<std::string> ids = {fmt::format("g0b{}", slots), fmt::format("g1b{}", slots),
                                          fmt::format("g2b{}", slots)};
    for (const auto& id : ids) ASSERT_TRUE(plan.add(test::gpuTask(id, "gpu")));
    SlurmLauncher launcher(batching(slots));
    RunReport r = run(plan, registry, &launcher, *devices);
    ASSERT_TRUE(r.ok()) << r.toText();
    for (const auto& id : ids) {
      const std::string& log = r.find(id)->log;
      EXPECT_NE(log.find("gpus=1 cvd="), std::string::npos)
          << id << " (batch " << slots << ") was not granted one GPU by Slurm: " << log;
      EXPECT_EQ(log.find("cvd= "), std::string::npos) << log;
    }
    if (slots > 0) {
      ASSERT_EQ(launcher.allocations().size(), 1u);
      auto q = runProcess(
          {"squeue", "--noheader", "--format=%j", "--jobs=" + launcher.allocations()[0]});
      ASSERT_TRUE(q);
      EXPECT_NE(q->out.find("batch-g1"), std::string::npos) << q->out;
    }
  }
  EXPECT_FALSE(jobsLeft());
}

TEST(SlurmCheck, SaysWhatIsMissing) {
  SlurmOptions absent;
  absent.srun = "/nonexistent/srun";
  auto missing = checkSlurm(absent);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().text().find("Debian: slurm-client"), std::string::npos)
      << missing.error().text();
  if (!Cluster::get().skip.empty()) GTEST_SKIP() << Cluster::get().skip;
  auto ok = checkSlurm(SlurmOptions{});
  EXPECT_TRUE(ok) << (ok ? "" : ok.error().text());
  SlurmOptions other;
  other.partition = "nosuchpartition";
  auto unknown = checkSlurm(other);
  EXPECT_FALSE(unknown);
}

}  // namespace
}  // namespace argus::runtime
