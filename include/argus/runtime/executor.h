// Executors: the code that actually runs a task. The scheduler only knows this interface and a
// registry keyed by name (TaskDescriptor::executor), so adding a backend touches no scheduler code.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "argus/runtime/launcher.h"
#include "argus/runtime/task.h"
#include "argus/support/status.h"

namespace argus::runtime {

/// One published output: its content hash plus the bytes inline or a file that holds them.
struct Artifact {
  std::string hash;                           ///< contentHash of the bytes.
  std::string data;                           ///< Inline bytes (empty when `file` is set).
  std::optional<std::filesystem::path> file;  ///< File holding the bytes, when not inline.

  /// An inline artifact; computes the hash.
  [[nodiscard]] static Artifact fromData(std::string bytes);
  /// A file artifact; reads the file once to hash it. The error names the path.
  [[nodiscard]] static Result<Artifact> fromFile(const std::filesystem::path& path);
  /// The bytes, inline or read from the file.
  [[nodiscard]] Result<std::string> read() const;
  friend bool operator==(const Artifact&, const Artifact&) = default;
};

/// Reserved output name under which a Control task's materialized branches are stored, so that a
/// memoized Control task re-expands the same branches on a later run.
inline constexpr const char* kBranchesOutput = "argus.branches";

/// What an executor returns on success.
struct TaskOutputs {
  std::map<std::string, Artifact> artifacts;  ///< Must cover TaskDescriptor::outputs.
  std::vector<TaskDescriptor> branches;       ///< Control tasks only: tasks to add to the plan.
};

/// Everything an executor may use while running one task. Owned by the runtime; valid during
/// execute() only.
struct TaskContext {
  TaskContext(const TaskDescriptor& t, std::filesystem::path dir)
      : task(t), taskDir(std::move(dir)) {}

  const TaskDescriptor& task;
  /// Explicit inputs by binding name.
  std::map<std::string, Artifact> inputs;
  /// Every output of every upstream task (including branches a Control task added), keyed
  /// "taskId/outputName". Synthesis tasks read late-arriving evidence here.
  std::map<std::string, Artifact> evidence;
  std::optional<std::string> device;  ///< Set for GPU tasks: the device id the task is bound to.
  /// Tasks that take GPU turns (Isolation::gpuTurns): how many may share the device at once. A
  /// run may wait for that many others' turns, so its time limits scale by it.
  std::size_t turnSharers = 1;
  std::filesystem::path taskDir;  ///< Private scratch directory; created on first use.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* cancelFlag = nullptr;
  /// Where a worker process runs (RunOptions::launcher); null = this machine.
  WorkerLauncher* launcher = nullptr;

  std::string log;        ///< Text kept as the task log (worker stdout/stderr, messages).
  bool timedOut = false;  ///< Set by an executor that stopped the task at its deadline.

  /// True once the run is being cancelled; long executors should stop and return an error.
  [[nodiscard]] bool cancelled() const {
    return cancelFlag != nullptr && cancelFlag->load(std::memory_order_relaxed);
  }
  /// True once the deadline has passed.
  [[nodiscard]] bool expired() const { return std::chrono::steady_clock::now() >= deadline; }
  /// The bytes of input `name`; an error naming the task (as `component`) when it has none.
  [[nodiscard]] Result<std::string> readInput(std::string_view name,
                                              std::string_view component) const;
};

/// Runs tasks of one backend. One instance serves many tasks at once: execute() is called
/// concurrently from pool and device threads and must be thread-safe. In-process executors cannot
/// be killed; they should poll ctx.cancelled()/ctx.expired() when they run long. Executors that
/// need isolation run a worker process (see WorkerProcessExecutor).
class Executor {
 public:
  virtual ~Executor() = default;
  /// Executes ctx.task. On failure, put details in ctx.log and return the error.
  [[nodiscard]] virtual Result<TaskOutputs> execute(TaskContext& ctx) = 0;
};

/// An in-process executor made from a function (CPU backends, tests, benchmarks).
class FunctionExecutor final : public Executor {
 public:
  using Function = std::function<Result<TaskOutputs>(TaskContext&)>;
  explicit FunctionExecutor(Function fn) : fn_(std::move(fn)) {}
  [[nodiscard]] Result<TaskOutputs> execute(TaskContext& ctx) override { return fn_(ctx); }

 private:
  Function fn_;
};

/// Registration record of one executor (Caliper-style: name, description, instance).
struct ExecutorRecord {
  std::string name;
  std::string description;
  std::shared_ptr<Executor> executor;
  /// What the outputs depend on beyond the task and its inputs, when that changes between Argus
  /// versions (e.g. the PTX passes' lowering): part of the task's memo key, so that a workspace
  /// made by an older Argus does not hand back an older lowering's output. Empty: none.
  std::string version = {};
};

/// Executors by name. Fill it before a run; lookups during a run are read-only and thread-safe.
class ExecutorRegistry {
 public:
  /// Registers an executor; fails when the name is taken or the executor is null.
  [[nodiscard]] Result<void> add(ExecutorRecord record);
  /// The executor registered as `name`, or nullptr. [thread-safe with other finds]
  [[nodiscard]] Executor* find(const std::string& name) const;
  /// The version of the executor registered as `name` (ExecutorRecord::version), empty when it
  /// has none or is not registered. [thread-safe with other finds]
  [[nodiscard]] std::string_view version(const std::string& name) const;
  /// All records, sorted by name (for `argus recipes`-style listings).
  [[nodiscard]] std::vector<const ExecutorRecord*> records() const;

 private:
  std::map<std::string, ExecutorRecord> records_;
};

}  // namespace argus::runtime
