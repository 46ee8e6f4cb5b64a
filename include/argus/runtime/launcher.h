// Where worker processes run: on this machine (no launcher, the default) or as jobs of a Slurm
// cluster (SlurmLauncher). A launcher only rewrites the worker's command line and cleans up after
// it; the worker protocol (worker_process.h) is unchanged, so the task directory must be on a
// file system the cluster's nodes share with this process, and this process stays the only
// writer of the workspace: it reads each worker's manifest and hashes its outputs itself.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
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
  /// passed on by the launcher); an error when the resources it needs cannot be had (a Slurm
  /// allocation refused). [thread-safe]
  [[nodiscard]] virtual Result<std::vector<std::string>> wrap(const std::vector<std::string>& argv,
                                                              const LaunchRequest& request) = 0;
  /// Whether the launcher assigns GPUs itself (the runtime then sets no CUDA_VISIBLE_DEVICES).
  [[nodiscard]] virtual bool assignsDevices() const = 0;
  /// After the wrapped command was stopped (killed at its deadline, cancelled, or by a signal),
  /// rather than ending by itself: whatever it may have left running. [thread-safe]
  virtual void cleanup(const LaunchRequest& request) = 0;
};

/// Slurm (`--executor slurm`). Without batching each worker is one job, run by `srun` in the task
/// directory, with `--gres=gpu:N` for a task of N GPUs, `--time` from its time limit (whole
/// minutes, rounded up), the partition and account given, and the job named `argus-<pid>-<task>`
/// so that a worker killed at its deadline or on cancel is also cancelled in Slurm
/// (`scancel --name`).
///
/// With batching (`batchSlots` > 0) workers of the same GPU count share one job: an allocation
/// (`salloc --no-shell`, named `argus-<pid>-batch-g<N>`) of `batchSlots` tasks, each with N GPUs,
/// made when the first such worker comes, and every worker is one job step in it
/// (`srun --jobid --exact`), which Slurm starts in a few milliseconds instead of scheduling a
/// job. Slurm queues the steps beyond the allocation's slots. A worker whose time limit does not
/// fit in what is left of the allocation (or whose allocation ended) gets a new one, waiting for
/// it no longer than its own time limit; the launcher cancels its allocations when it is
/// destroyed.
struct SlurmOptions {
  std::string partition;  ///< `--partition`; empty = the cluster's default.
  std::string account;    ///< `--account`; empty = none.
  /// More options for what makes the job (srun without batching, salloc with), passed as given.
  std::vector<std::string> extraArgs;
  /// Runs one allocation holds at once; 0 = no batching (one job per run).
  unsigned batchSlots = 0;
  /// An allocation's time limit, or longer when a run's own limit needs it.
  std::chrono::minutes batchTime{60};
  std::string srun = "srun";
  std::string salloc = "salloc";
  std::string scancel = "scancel";
  std::string squeue = "squeue";
};

class SlurmLauncher final : public WorkerLauncher {
 public:
  explicit SlurmLauncher(SlurmOptions options) : options_(std::move(options)) {}
  /// Cancels the allocations it made.
  ~SlurmLauncher() override;
  SlurmLauncher(const SlurmLauncher&) = delete;
  SlurmLauncher& operator=(const SlurmLauncher&) = delete;

  [[nodiscard]] Result<std::vector<std::string>> wrap(const std::vector<std::string>& argv,
                                                      const LaunchRequest& request) override;
  [[nodiscard]] bool assignsDevices() const override { return true; }
  void cleanup(const LaunchRequest& request) override;
  /// The job (or, batched, job step) name of `request`'s worker.
  [[nodiscard]] static std::string jobName(const LaunchRequest& request);
  /// The job ids of the allocations made so far (batching), oldest first.
  [[nodiscard]] std::vector<std::string> allocations() const;

 private:
  /// One allocation that steps run in.
  struct Allocation {
    std::string jobId;
    std::chrono::steady_clock::time_point ends;     ///< When its time limit runs out.
    std::chrono::steady_clock::time_point checked;  ///< When Slurm last said it was running.
  };
  /// The allocations of one GPU count: the current one last. Its mutex is held while an
  /// allocation is made, so that workers of other GPU counts need not wait for it.
  struct Pool {
    std::mutex mutex;
    std::vector<Allocation> allocations;
  };
  [[nodiscard]] Result<std::string> allocationFor(const LaunchRequest& request);
  /// A new allocation for runs of `gpus` GPUs, waited for no longer than `wait` when given.
  [[nodiscard]] Result<Allocation> allocate(unsigned gpus, std::chrono::minutes time,
                                            std::optional<std::chrono::milliseconds> wait) const;
  [[nodiscard]] bool running(const std::string& jobId) const;
  /// `scancel --quiet WHAT...`: idempotent, its failure ignored (what it cancels may have ended).
  void scancel(const std::vector<std::string>& what) const;

  SlurmOptions options_;
  mutable std::mutex mutex_;  ///< Guards pools_ (the map; each pool has its own mutex).
  std::map<unsigned, std::unique_ptr<Pool>> pools_;
};

/// The GPUs of a Slurm partition, for a coordinator without a GPU (a login node) to plan GPU
/// collections on.
struct SlurmGpus {
  /// The runtime's device slots, "0" .. "N-1": N = the `gpu` GRES of the partition's nodes,
  /// summed (`sinfo`). Slurm picks the real devices of each run.
  std::vector<std::string> devices;
  /// The largest node's GPUs: the most one run can hold (RunOptions::maxDevicesPerTask), since a
  /// run's GPUs are on one node.
  unsigned largestNode = 0;
};
[[nodiscard]] Result<SlurmGpus> slurmDevices(const SlurmOptions& options);

/// The number of GPUs in one node's GRES as `sinfo` prints it ("gpu:h200:8(S:0-1),nvme:1" -> 8;
/// "(null)" -> 0).
[[nodiscard]] unsigned gpusInGres(std::string_view gres);

/// Checks that Slurm's client commands are there and a controller answers (`srun --version`,
/// `sinfo`); the error says what is missing and how Argus looks for the cluster (SLURM_CONF).
[[nodiscard]] Result<void> checkSlurm(const SlurmOptions& options);

}  // namespace argus::runtime
