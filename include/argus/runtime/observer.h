// Run observers (Taskflow-style): hooks the scheduler calls around every task, which give
// progress display and tracing without touching scheduler code.
//
// Thread-safety: the scheduler calls every hook from its own thread, one at a time, in event
// order. Observers therefore need no locking against each other or the scheduler, but must not
// block for long (the scheduler dispatches nothing while a hook runs) and must not call back into
// the scheduler except Scheduler::cancel().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "argus/runtime/result_store.h"
#include "argus/runtime/task.h"

namespace argus::runtime {

using Clock = std::chrono::steady_clock;

/// Where a task ran: a CPU pool thread or a device slot.
struct Lane {
  bool gpu = false;
  std::string device;    ///< Device id for GPU lanes.
  std::size_t slot = 0;  ///< Pool thread index, or slot on the device.
  /// "cpu-3", "gpu0/1".
  [[nodiscard]] std::string name() const;
};

/// Counters over the whole run, as seen at the moment of a hook.
struct RunCounts {
  std::size_t total = 0;  ///< Tasks known so far (grows when Control tasks add branches).
  std::size_t done = 0;   ///< Succeeded + memoized.
  std::size_t memoized = 0;
  std::size_t running = 0;
  std::size_t failed = 0;   ///< Failed + timed out.
  std::size_t skipped = 0;  ///< Skipped + cancelled.
};

/// What happened to one task.
struct TaskOutcome {
  TaskState state = TaskState::Pending;
  std::string error;  ///< Why it did not succeed (empty on success).
  Lane lane;
  Clock::time_point start{};  ///< Execution start/end (equal for memoized or skipped tasks).
  Clock::time_point end{};
};

/// Hooks; every default does nothing. See the header comment for thread-safety.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void onRunStart(std::size_t /*tasks*/) {}
  /// All upstream tasks succeeded; the task is queued (or about to be memo-checked).
  virtual void onTaskReady(const TaskDescriptor&) {}
  /// The task was handed to a pool thread or device slot.
  virtual void onTaskStart(const TaskDescriptor&, const Lane&, const RunCounts&) {}
  /// The task reached a final state (also for memoized, skipped and cancelled tasks).
  virtual void onTaskFinish(const TaskDescriptor&, const TaskOutcome&, const RunCounts&) {}
  /// A Control task added tasks to the plan.
  virtual void onBranchAdded(const TaskDescriptor& /*control*/,
                             std::span<const TaskDescriptor> /*added*/) {}
  /// Called about every tick (RunOptions::tick) while the run waits; for periodic output.
  virtual void onTick(const RunCounts&) {}
  virtual void onRunFinish(const RunCounts&) {}
};

/// Progress for people on a stream (stderr by default). On a TTY it rewrites one status line
/// (done/running/failed/total and the current GPU task); otherwise it prints a plain line at most
/// every `interval` and a final summary.
class ProgressObserver final : public RunObserver {
 public:
  explicit ProgressObserver(std::FILE* out = stderr,
                            std::chrono::milliseconds interval = std::chrono::seconds(5));
  /// Forces TTY or plain mode (tests).
  void setTty(bool tty) { tty_ = tty; }

  void onRunStart(std::size_t tasks) override;
  void onTaskStart(const TaskDescriptor&, const Lane&, const RunCounts&) override;
  void onTaskFinish(const TaskDescriptor&, const TaskOutcome&, const RunCounts&) override;
  void onTick(const RunCounts&) override;
  void onRunFinish(const RunCounts&) override;

 private:
  void print(const RunCounts& counts, bool force);

  std::FILE* out_;
  std::chrono::milliseconds interval_;
  bool tty_;
  Clock::time_point last_{};
  std::string currentGpu_;
  std::size_t lastWidth_ = 0;
};

/// Records Argus's own execution as a Chrome trace ("X" events; one track per pool thread and
/// per device slot, named by thread_name metadata). Written by write() or at onRunFinish when a
/// path was given.
class ChromeTraceObserver final : public RunObserver {
 public:
  explicit ChromeTraceObserver(std::filesystem::path path = {}) : path_(std::move(path)) {}

  void onRunStart(std::size_t tasks) override;
  void onTaskFinish(const TaskDescriptor&, const TaskOutcome&, const RunCounts&) override;
  void onRunFinish(const RunCounts&) override;

  /// The trace as JSON text ({"traceEvents": [...], "displayTimeUnit": "ms"}).
  [[nodiscard]] std::string json() const;
  /// Writes json() to `path`; the error names the path.
  [[nodiscard]] Result<void> write(const std::filesystem::path& path) const;

 private:
  struct Event {
    std::string name, category, lane, state;
    double startUs, durationUs;
  };
  std::filesystem::path path_;
  Clock::time_point origin_{};
  std::vector<Event> events_;
};

}  // namespace argus::runtime
