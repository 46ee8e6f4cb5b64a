// The narrow storage interface the scheduler uses: memo lookups and task records. The workspace
// implements it for persistent runs (WorkspaceResultStore); MemoryResultStore serves tests and
// benchmarks.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "argus/runtime/executor.h"
#include "argus/runtime/task.h"
#include "argus/support/status.h"

namespace argus::runtime {

/// Final state of a task in one run.
enum class TaskState {
  Pending,    ///< Never became ready (only seen in a report of a run that stopped early).
  Succeeded,  ///< Executed and published.
  Memoized,   ///< Not executed: an earlier successful result with the same memo key was reused.
  Failed,     ///< The executor or worker failed.
  TimedOut,   ///< Killed at its deadline.
  Skipped,    ///< Not run because an upstream task did not succeed (blocked).
  Cancelled,  ///< Not run, or stopped, because the run was cancelled.
};

/// "pending", "succeeded", "memoized", "failed", "timed_out", "skipped", "cancelled".
[[nodiscard]] std::string_view toString(TaskState state);

/// Storage for task results. The scheduler calls it from its own thread only, never
/// concurrently, so implementations need no locking for the scheduler's sake.
class ResultStore {
 public:
  virtual ~ResultStore() = default;
  /// Outputs of an earlier successful task with this memo key, if any.
  [[nodiscard]] virtual std::optional<TaskOutputs> lookup(const std::string& memoKey) = 0;
  /// Records that the task was answered by lookup(memoKey) instead of executing (a memo hit), so
  /// that the tasks reading its outputs can name the stored artifacts as their inputs. The
  /// default records nothing.
  virtual void reused(const TaskDescriptor& /*task*/, const std::string& /*memoKey*/) {}
  /// Records that the task is about to execute.
  virtual void begin(const TaskDescriptor& task, const std::string& memoKey) = 0;
  /// Records success. May move file artifacts into its own storage and return the artifacts as
  /// stored (dependents then see those); an error fails the task.
  [[nodiscard]] virtual Result<TaskOutputs> publish(const TaskDescriptor& task,
                                                    const std::string& memoKey, TaskOutputs outputs,
                                                    const std::string& log) = 0;
  /// Records a failed, timed-out or cancelled execution with its error and log.
  virtual void fail(const TaskDescriptor& task, const std::string& memoKey, TaskState state,
                    const std::string& error, const std::string& log) = 0;
};

/// In-memory store: memoizes successful outputs by key (file artifacts are read into memory so
/// task directories may be deleted) and keeps a history of records. [thread-safe]
class MemoryResultStore final : public ResultStore {
 public:
  struct Record {
    std::string taskId;
    std::string memoKey;
    TaskState state;
    std::string error;
    std::string log;
  };

  std::optional<TaskOutputs> lookup(const std::string& memoKey) override;
  void begin(const TaskDescriptor& task, const std::string& memoKey) override;
  Result<TaskOutputs> publish(const TaskDescriptor& task, const std::string& memoKey,
                              TaskOutputs outputs, const std::string& log) override;
  void fail(const TaskDescriptor& task, const std::string& memoKey, TaskState state,
            const std::string& error, const std::string& log) override;

  /// Finished records (publish and fail), in call order.
  [[nodiscard]] std::vector<Record> records() const;
  /// Number of begin() calls so far, i.e. executions.
  [[nodiscard]] std::size_t executions() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, TaskOutputs> memo_;
  std::vector<Record> records_;
  std::size_t begun_ = 0;
};

}  // namespace argus::runtime
