// The device's turn: how several traced processes share one GPU without their measured GPU work
// ever overlapping other GPU activity. Probe collections are separate processes; much of a
// process's life (exec, loading libcuda and CUPTI, creating the context, loading modules, the
// program's host set-up) is not the work being measured, so they start together. One lock file
// per device, two kinds of hold (flock(2)):
//   shared     set-up and teardown, which the driver may carry out on the GPU: from cuInit (the
//              context's creation, module uploads) to the first GPU work, for allocations, frees,
//              mappings and module loads made while holding nothing (they change what the GPU
//              translates), and from the exit handler to the end of the process. Many processes
//              at once.
//   exclusive  GPU work (a launch, copy or memset), the measured launch among it: taken before
//              the first such call and kept through the traced launch, so that what the process
//              did on the GPU before it (copies, and the L2 state they leave) is not disturbed
//              by another process's work; after a traced launch, let go at every synchronizing
//              call (a *Synchronize, a synchronous copy) once the context is idle, so the
//              program's host work (its check against a CPU reference) runs while another
//              process has the GPU. One process, and no process in a shared phase, at a time.
// Every sharing process follows the same rule, so a measured launch is its own execution on the
// device: no other process's kernel, copy or driver set-up runs beside it. The kernel drops a
// hold when its process ends, also after a crash. kernels.jsonl's CUPTI intervals let the join
// check the kernels afterwards.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

namespace argus::inject {

/// A process's hold on one device's turn file.
class GpuTurn {
 public:
  enum class Hold { None, Shared, Exclusive };

  GpuTurn() = default;
  GpuTurn(const GpuTurn&) = delete;
  GpuTurn& operator=(const GpuTurn&) = delete;
  ~GpuTurn() { release(); }

  /// Waits for a shared hold of `path` (created when missing). "" on success, else why not.
  std::string share(const std::string& path, bool wait = true) {
    return take(path, LOCK_SH, Hold::Shared, wait);
  }
  /// Waits for the exclusive hold (the turn), converting a shared one. "" on success.
  std::string acquire(const std::string& path, bool wait = true) {
    return take(path, LOCK_EX, Hold::Exclusive, wait);
  }

  [[nodiscard]] Hold hold() const { return hold_; }
  /// The turn (exclusive hold) is this process's.
  [[nodiscard]] bool held() const { return hold_ == Hold::Exclusive; }

  /// Lets go of the hold but keeps the file open (a later share or acquire waits again).
  void unlock() {
    if (fd_ >= 0) ::flock(fd_, LOCK_UN);
    hold_ = Hold::None;
  }

  /// Drops every hold and closes the file.
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    hold_ = Hold::None;
  }

 private:
  std::string take(const std::string& path, int operation, Hold hold, bool wait) {
    if (hold_ == hold) return "";
    if (fd_ < 0) {
      fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd_ < 0) return "cannot open the turn file " + path + ": " + std::strerror(errno);
    }
    // A conversion is not atomic: the old hold goes first, so two converting processes cannot
    // deadlock.
    int status = 0;
    do {
      status = ::flock(fd_, operation | (wait ? 0 : LOCK_NB));
    } while (status != 0 && errno == EINTR);
    if (status != 0) {
      const std::string why = std::strerror(errno);
      release();
      return "cannot take the turn " + path + ": " + why;
    }
    hold_ = hold;
    return "";
  }

  int fd_ = -1;
  Hold hold_ = Hold::None;
};

/// What a driver API entry point (by CUPTI's callback name) means for the turn.
struct DriverCallRole {
  bool work = false;  ///< Puts work on the GPU: launches, copies, memsets, stream memory ops.
  /// Set-up and teardown the driver may carry out on the GPU: allocations and frees, mappings,
  /// module loads and unloads, contexts.
  bool setup = false;
  bool sync = false;  ///< Returns with work finished: *Synchronize, synchronous copies.
};

inline DriverCallRole driverCallRole(const char* name) {
  DriverCallRole role;
  if (name == nullptr) return role;
  const std::string_view n(name);
  for (std::string_view prefix : {"cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset",
                                  "cuStreamBatchMemOp", "cuStreamWriteValue", "cuStreamWaitValue"})
    role.work = role.work || n.starts_with(prefix);
  for (std::string_view prefix :
       {"cuMemAlloc", "cuMemCreate", "cuMemHostAlloc", "cuMemHostRegister", "cuMemFree",
        "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemHostUnregister", "cuModuleLoad",
        "cuModuleUnload", "cuLibraryLoad", "cuLibraryUnload", "cuCtxCreate", "cuCtxDestroy",
        "cuDevicePrimaryCtx"})
    role.setup = role.setup || n.starts_with(prefix);
  role.sync = n.find("Synchronize") != std::string_view::npos ||
              (n.starts_with("cuMemcpy") && n.find("Async") == std::string_view::npos);
  return role;
}

}  // namespace argus::inject
