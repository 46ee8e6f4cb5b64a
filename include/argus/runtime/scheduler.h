// The central scheduler: runs a Plan as a dynamic DAG.
//
// A task is dispatched as soon as every upstream task has published. CPU tasks run in a thread
// pool; tasks that need a GPU run on a device slot (one of RunOptions::devices) under the
// isolation rules: an exclusive task runs alone on its device, tasks whose groups are
// incompatible never share a device at the same time, compatible ones may (up to
// maxTasksPerDevice). Control tasks may add branches while the plan runs; a task that depends on
// a Control task also waits for every task that Control task added (transitively), and sees their
// outputs as evidence. A failure fails only its branch: dependents are skipped with the reason,
// independent tasks still run. Successful tasks are memoized in the ResultStore, so running the
// same plan again executes only what did not succeed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/runtime/executor.h"
#include "argus/runtime/launcher.h"
#include "argus/runtime/observer.h"
#include "argus/runtime/plan.h"
#include "argus/runtime/result_store.h"
#include "argus/support/status.h"

namespace argus::runtime {

/// How a run uses the machine.
struct RunOptions {
  /// CPU pool size; 0 = std::thread::hardware_concurrency().
  std::size_t cpuThreads = 0;
  /// Device ids for GPU tasks ("0", "1", ...); any strings work (tests use fake ids).
  std::vector<std::string> devices;
  /// Most GPU tasks running on one device at once (isolation rules still apply).
  std::size_t maxTasksPerDevice = 4;
  /// Most devices one task can hold: a multi-GPU program's run must fit on one machine, and a
  /// Slurm partition's devices are those of several (its largest node's count); 0 = all of
  /// `devices`. A task of `all` GPUs (TaskDescriptor::gpus 0) holds this many.
  std::size_t maxDevicesPerTask = 0;
  /// Most tasks that take GPU turns (Isolation::gpuTurns) running on one device at once.
  std::size_t maxTurnTasksPerDevice = 8;
  /// Timeout for tasks whose descriptor has none; nullopt = no limit.
  std::optional<std::chrono::milliseconds> defaultTimeout;
  /// Root under which every task gets <root>/<task id> as its directory; empty = a fresh
  /// temporary directory, removed after the run unless keepTaskDirs.
  std::filesystem::path workRoot;
  bool keepTaskDirs = false;
  /// Observers, called as documented in observer.h. Not owned.
  std::vector<RunObserver*> observers;
  /// Cancellation flag checked while the run waits (e.g. interruptFlag()). Not owned.
  const std::atomic<bool>* cancelFlag = nullptr;
  /// Where worker processes run (launcher.h): null = this machine; a SlurmLauncher makes each
  /// worker a Slurm job. Not owned.
  WorkerLauncher* launcher = nullptr;
  /// How often the scheduler wakes up to check cancellation and call onTick.
  std::chrono::milliseconds tick{20};
};

/// One task's line in the run report.
struct TaskReport {
  std::string id;
  TaskType type = TaskType::Transform;
  TaskOutcome outcome;
  std::string memoKey;    ///< Empty when the task never became ready.
  std::string log;        ///< Worker output or executor messages.
  bool executed = false;  ///< An executor ran (false for memoized/skipped/cancelled).
};

/// Result of Scheduler::run.
struct RunReport {
  Plan plan;                      ///< The final plan, including tasks added by Control tasks.
  std::vector<TaskReport> tasks;  ///< In plan order.
  RunCounts counts;
  bool cancelled = false;
  Clock::duration elapsed{};

  /// True when every task succeeded or was memoized.
  [[nodiscard]] bool ok() const;
  /// Tasks that failed or timed out (the ones to look at; their logs are in the report).
  [[nodiscard]] std::vector<const TaskReport*> failures() const;
  [[nodiscard]] const TaskReport* find(const std::string& id) const;
  /// Machine-readable report (states, errors, logs, timings relative to the run start).
  [[nodiscard]] nlohmann::json toJson() const;
  /// Summary for people: counts, then each failure with its error and the log's last lines.
  [[nodiscard]] std::string toText() const;
};

/// Runs plans. One run at a time per Scheduler; run() blocks the calling thread, which becomes
/// the scheduler thread.
class Scheduler {
 public:
  Scheduler(const ExecutorRegistry& executors, ResultStore& store, RunOptions options = {});

  /// Validates and runs the plan to completion (or cancellation). Fails only when the plan is
  /// invalid or the work directory cannot be made; task failures are in the report.
  [[nodiscard]] Result<RunReport> run(const Plan& plan);

  /// Stops the current run: no new dispatches, running workers are terminated, unfinished tasks
  /// are recorded as cancelled. [thread-safe]
  void cancel() { cancelled_.store(true); }

 private:
  const ExecutorRegistry& executors_;
  ResultStore& store_;
  RunOptions options_;
  std::atomic<bool> cancelled_{false};
};

/// A process-wide flag raised by SIGINT or SIGTERM once installInterruptHandler() was called;
/// pass it as RunOptions::cancelFlag so Ctrl-C or `kill` stops a run cleanly (its workers
/// terminated, its scratch removed). [thread-safe, async-signal-safe]
[[nodiscard]] const std::atomic<bool>* interruptFlag();
/// Installs a SIGINT and SIGTERM handler that raises interruptFlag() (a second signal restores
/// the default handlers, so a third one kills the process). Call once from main.
void installInterruptHandler();
/// Lowers the flag (between runs, and in tests).
void resetInterruptFlag();

}  // namespace argus::runtime
