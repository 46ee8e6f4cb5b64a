// Isolated worker processes: how GPU collections (and any other task that must not share the
// Argus process) run.
//
// Worker protocol (version 1):
//   1. The runtime writes <taskDir>/descriptor.json:
//        {"argus_worker_protocol": 1, "task": <descriptor>, "device": "0" | null,
//         "task_dir": "...", "inputs": {name: {"path": ..., "hash": ...}},
//         "evidence": {"task/output": {"path": ..., "hash": ...}}}
//      Inline inputs are first written under <taskDir>/inputs/.
//   2. It starts the executor's command line in its own process group, cwd = taskDir,
//      stdin = /dev/null, stdout and stderr merged into the task log (also saved as worker.log;
//      kept to WorkerOptions::maxOutputBytes, its first and last halves, so that a worker that
//      floods its output cannot exhaust Argus's memory or the workspace),
//      environment = Argus's plus CUDA_VISIBLE_DEVICES=<device> for GPU tasks and
//      ARGUS_TASK_DIR=<taskDir>.
//   3. The worker writes its outputs and then <taskDir>/manifest.json:
//        {"argus_manifest": 1, "status": "ok" | "failed", "error": "...",
//         "outputs": {name: "relative/path"}, "branches": [<descriptor>...]}
//      and exits 0. "branches" is for Control tasks only.
//   4. The runtime validates the manifest: it must parse, have version 1, status "ok", name a
//      file inside taskDir for every declared output. Anything else fails the task with a message
//      that says what was wrong. Past the deadline or on cancel, the whole process group is
//      killed (SIGKILL; on cancel SIGTERM first, then SIGKILL after a short grace period).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "argus/runtime/executor.h"
#include "argus/support/status.h"

namespace argus::runtime {

/// How a worker process ended.
struct WorkerExit {
  int exitCode = 0;        ///< Exit status; 128+N when killed by signal N.
  int signal = 0;          ///< Terminating signal, 0 if it exited.
  bool timedOut = false;   ///< Killed at the deadline.
  bool cancelled = false;  ///< Killed because the cancel flag was raised.
  std::string output;      ///< stdout and stderr, interleaved as written (capped, see below).
  std::uint64_t outputDropped = 0;  ///< Bytes cut from the middle of `output` (it says where).
};

/// Options for runWorker.
struct WorkerOptions {
  std::filesystem::path workingDirectory;
  std::map<std::string, std::string> environment;  ///< Added to (or replacing in) Argus's own.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* cancelFlag = nullptr;
  std::chrono::milliseconds terminateGrace{200};  ///< SIGTERM -> SIGKILL delay on cancel.
  /// Most output kept: the first and the last half of it, with a line saying how much was cut
  /// between them. The worker is never blocked: the rest is read and dropped.
  std::size_t maxOutputBytes = 8u << 20;
};

/// Starts argv in a new process group and waits for it, enforcing the deadline and the cancel
/// flag by killing the whole group. Fails only when the process cannot be started. [thread-safe]
[[nodiscard]] Result<WorkerExit> runWorker(const std::vector<std::string>& argv,
                                           const WorkerOptions& options);

/// Base for executors whose tasks run in a worker process. Subclasses only say which command
/// runs a task; this class implements the protocol above.
class WorkerProcessExecutor : public Executor {
 public:
  /// The worker's command line for ctx.task (argv[0] looked up on PATH when it has no '/').
  [[nodiscard]] virtual std::vector<std::string> command(const TaskContext& ctx) const = 0;
  /// Extra environment for the worker (CUDA_VISIBLE_DEVICES and ARGUS_TASK_DIR are set anyway).
  [[nodiscard]] virtual std::map<std::string, std::string> environment(const TaskContext&) const {
    return {};
  }
  [[nodiscard]] Result<TaskOutputs> execute(TaskContext& ctx) final;
};

/// A WorkerProcessExecutor with a fixed command line; "{task_dir}" and "{device}" in arguments
/// are replaced per task. Handy for backends that are a script, and for tests.
class CommandExecutor final : public WorkerProcessExecutor {
 public:
  explicit CommandExecutor(std::vector<std::string> argv) : argv_(std::move(argv)) {}
  [[nodiscard]] std::vector<std::string> command(const TaskContext& ctx) const override;

 private:
  std::vector<std::string> argv_;
};

/// Checks a worker's manifest text against the task; returns its outputs (file artifacts,
/// hashed) and branches. The error says what is wrong with the manifest.
[[nodiscard]] Result<TaskOutputs> readManifest(const TaskDescriptor& task,
                                               const std::filesystem::path& taskDir,
                                               std::string_view manifestText);

}  // namespace argus::runtime
