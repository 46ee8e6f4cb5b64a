// What running a plan's workers through Slurm costs per task, with batching off and on: TASKS
// independent trivial worker tasks (a shell that writes its start time and a manifest) run by the
// runtime's Scheduler, on this machine (no launcher), as one Slurm job each (SlurmLauncher), and
// as job steps of shared allocations (SlurmLauncher with batchSlots). For each way: submission to
// start per task (from the launcher's wrap, when the scheduler hands the task to Slurm, to the
// worker's first line), and the run's wall time per task, one task at a time and two at once.
// Needs a Slurm cluster (SLURM_CONF); bench/slurm/launch_overhead.sh starts the one-node cluster
// of tests/slurm/local_cluster.sh around it.
// Usage: argus_bench_slurm [tasks] [rounds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "argus/runtime/launcher.h"
#include "argus/runtime/scheduler.h"
#include "argus/runtime/worker_process.h"
#include "argus/support/process.h"

using namespace argus::runtime;

namespace {

using SystemClock = std::chrono::system_clock;

/// A launcher that notes when each task was submitted, then hands it to `inner` (none: this
/// machine).
class TimedLauncher final : public WorkerLauncher {
 public:
  explicit TimedLauncher(WorkerLauncher* inner) : inner_(inner) {}
  argus::Result<std::vector<std::string>> wrap(const std::vector<std::string>& argv,
                                               const LaunchRequest& request) override {
    {
      std::lock_guard lock(mutex_);
      submitted_[request.taskId] = SystemClock::now();
    }
    return inner_ != nullptr ? inner_->wrap(argv, request) : argv;
  }
  bool assignsDevices() const override { return inner_ != nullptr && inner_->assignsDevices(); }
  void cleanup(const LaunchRequest& request) override {
    if (inner_ != nullptr) inner_->cleanup(request);
  }
  SystemClock::time_point submitted(const std::string& id) {
    std::lock_guard lock(mutex_);
    return submitted_.at(id);
  }

 private:
  WorkerLauncher* inner_;
  std::mutex mutex_;
  std::map<std::string, SystemClock::time_point> submitted_;
};

TaskDescriptor makeTask(const std::string& id) {
  TaskDescriptor t;
  t.id = id;
  t.executor = "stamp";
  t.outputs = {"out"};
  t.timeoutSeconds = 120;
  return t;
}

double median(std::vector<double> v) {
  std::ranges::sort(v);
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double p90(std::vector<double> v) {
  std::ranges::sort(v);
  return v.empty() ? 0.0 : v[(v.size() - 1) * 9 / 10];
}

struct Sample {
  std::vector<double> startMs;  ///< Submission to start, per task.
  std::vector<double> wallMsPerTask;
  bool ok = true;
};

/// One run of `tasks` tasks (a fresh store, so every task executes) through `inner`.
void runOnce(int tasks, std::size_t threads, WorkerLauncher* inner, const std::string& tag,
             int round, Sample& sample) {
  ExecutorRegistry registry;
  (void)registry.add(
      {"stamp", "writes its start time",
       std::make_shared<CommandExecutor>(std::vector<std::string>{
           "sh", "-c",
           "date +%s.%N > out.txt\nprintf '{\"argus_manifest\": 1, \"status\": \"ok\", "
           "\"outputs\": {\"out\": \"out.txt\"}}' > manifest.json\n"})});
  Plan plan;
  for (int i = 0; i < tasks; ++i) (void)plan.add(makeTask(fmt::format("t{}", i)));
  auto root = argus::makeTempDir("argus-bench-slurm");
  if (!root) {
    sample.ok = false;
    return;
  }
  TimedLauncher launcher(inner);
  MemoryResultStore store;
  RunOptions options;
  options.cpuThreads = threads;
  options.workRoot = *root / fmt::format("{}-{}-{}", tag, threads, round);
  options.launcher = &launcher;
  Scheduler scheduler(registry, store, options);
  const auto start = std::chrono::steady_clock::now();
  auto report = scheduler.run(plan);
  const double wall =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!report || !report->ok()) {
    std::fprintf(stderr, "%s: %s\n", tag.c_str(),
                 report ? report->toText().c_str() : report.error().text().c_str());
    sample.ok = false;
  } else {
    sample.wallMsPerTask.push_back(wall / tasks);
    for (int i = 0; i < tasks; ++i) {
      const std::string id = fmt::format("t{}", i);
      auto published = store.lookup(report->find(id)->memoKey);
      auto bytes = published->artifacts.at("out").read();
      if (!bytes) continue;
      const double began = std::strtod(std::string(bytes->begin(), bytes->end()).c_str(), nullptr);
      const double submitted =
          std::chrono::duration<double>(launcher.submitted(id).time_since_epoch()).count();
      sample.startMs.push_back((began - submitted) * 1e3);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(*root, ec);
}

}  // namespace

int main(int argc, char** argv) {
  const int tasks = argc > 1 ? std::atoi(argv[1]) : 40;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  if (auto ok = checkSlurm(SlurmOptions{}); !ok) {
    std::fprintf(stderr, "argus_bench_slurm: %s\n", ok.error().text().c_str());
    return 1;
  }
  std::printf(
      "argus_bench_slurm: %d trivial worker tasks per run, %d rounds (the ways "
      "alternate within a round)\n\n",
      tasks, rounds);
  std::printf(
      "| way | tasks at once | submission to start, median (ms) | p90 (ms) | wall per "
      "task, median (ms) | ok |\n|---|---|---|---|---|---|\n");
  for (std::size_t threads : {std::size_t{1}, std::size_t{2}}) {
    std::map<std::string, Sample> samples;
    const std::vector<std::string> ways = {"this machine", "Slurm, one job per run",
                                           "Slurm, batched (steps of one allocation)"};
    for (int round = 0; round < rounds; ++round)
      for (std::size_t w = 0; w < ways.size(); ++w) {
        const std::string& way = ways[w];
        SlurmOptions options;
        if (way.find("batched") != std::string::npos)
          options.batchSlots = static_cast<unsigned>(threads);
        SlurmLauncher slurm(options);
        runOnce(tasks, threads, w == 0 ? nullptr : &slurm, fmt::format("way{}", w), round,
                samples[way]);
      }
    for (const auto& way : ways) {
      const Sample& s = samples[way];
      std::printf("| %s | %zu | %.1f | %.1f | %.1f | %s |\n", way.c_str(), threads,
                  median(s.startMs), p90(s.startMs), median(s.wallMsPerTask), s.ok ? "yes" : "NO");
    }
  }
  return 0;
}
