// Where worker processes run: on this machine (no launcher, the default) or as jobs of a Slurm
// cluster (SlurmLauncher). A launcher only rewrites the worker's command line and cleans up after
// it; the worker protocol (worker_process.h) is unchanged, so the task directory must be on a
// file system the cluster's nodes share with this process, and this process stays the only
// writer of the workspace: it reads each worker's manifest and hashes its outputs itself.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "argus/support/status.h"

namespace argus::runtime {

/// One worker to launch.
struct LaunchRequest {
  std::string taskId;
  std::filesystem::path taskDir;
  /// GPUs the task needs (0 = a CPU task).
  unsigned gpus = 0;
  /// Time the task may take, when it has a limit.
  std::optional<std::chrono::milliseconds> timeLimit;
};

/// GPUs a task bound to `device` uses: the ids in it ("0,1" for a whole-device task of two);
/// 0 for a CPU task.
[[nodiscard]] unsigned devicesIn(const std::optional<std::string>& device);

class WorkerLauncher {
 public:
  virtual ~WorkerLauncher() = default;
  /// The command line that runs `argv` for `request` (the worker protocol's environment is
  /// passed on by the launcher). [thread-safe]
  [[nodiscard]] virtual std::vector<std::string> wrap(const std::vector<std::string>& argv,
                                                      const LaunchRequest& request) const = 0;
  /// Whether the launcher assigns GPUs itself (the runtime then sets no CUDA_VISIBLE_DEVICES).
  [[nodiscard]] virtual bool assignsDevices() const = 0;
  /// After the wrapped command ended (or was killed): whatever it may have left running.
  /// [thread-safe]
  virtual void cleanup(const LaunchRequest& request) const = 0;
};

/// Slurm (`--executor slurm`): each worker is one job, run by `srun` in the task directory, with
/// `--gres=gpu:N` for a task of N GPUs, `--time` from its time limit (whole minutes, rounded
/// up), the partition and account given, and the job named `argus-<pid>-<task>` so that a
/// worker killed at its deadline or on cancel is also cancelled in Slurm (`scancel --name`).
struct SlurmOptions {
  std::string partition;               ///< `--partition`; empty = the cluster's default.
  std::string account;                 ///< `--account`; empty = none.
  std::vector<std::string> extraArgs;  ///< More srun options, passed as given.
  std::string srun = "srun";
  std::string scancel = "scancel";
};

class SlurmLauncher final : public WorkerLauncher {
 public:
  explicit SlurmLauncher(SlurmOptions options) : options_(std::move(options)) {}
  [[nodiscard]] std::vector<std::string> wrap(const std::vector<std::string>& argv,
                                              const LaunchRequest& request) const override;
  [[nodiscard]] bool assignsDevices() const override { return true; }
  void cleanup(const LaunchRequest& request) const override;
  /// The job name of `request`'s worker.
  [[nodiscard]] static std::string jobName(const LaunchRequest& request);

 private:
  SlurmOptions options_;
};

/// Checks that Slurm's client commands are there and a controller answers (`srun --version`,
/// `sinfo`); the error says what is missing and how Argus looks for the cluster (SLURM_CONF).
[[nodiscard]] Result<void> checkSlurm(const SlurmOptions& options);

}  // namespace argus::runtime
