// The device's turn: how several traced processes share one GPU without their GPU work ever
// overlapping. Probe collections are separate processes; most of a process's life (exec, loading
// libcuda and CUPTI, creating the context, the program's host set-up) uses no GPU, so they start
// together. Each takes the device's turn, an exclusive flock(2) on one file per device, before
// its first GPU work (a launch, copy or memset) and holds it until it exits: the injection
// library releases it from an exit handler once the process's work has finished on the GPU
// (cuCtxSynchronize), else the kernel releases it with the process (also after a crash). Every
// sharing process follows the same rule, so from the first GPU work of one to its exit no other
// submits any: each launch is its own execution on the device. kernels.jsonl's CUPTI intervals let
// the join check that afterwards.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace argus::inject {

/// The turn of one device, held from acquire() to process exit (or the destructor, in tests).
class GpuTurn {
 public:
  GpuTurn() = default;
  GpuTurn(const GpuTurn&) = delete;
  GpuTurn& operator=(const GpuTurn&) = delete;
  ~GpuTurn() {
    if (fd_ >= 0) ::close(fd_);
  }

  /// Blocks until this process has the turn of `path` (created when missing). "" on success,
  /// else why not (the caller goes on without it and says so).
  std::string acquire(const std::string& path, bool wait = true) {
    if (fd_ >= 0) return "";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return "cannot open the turn file " + path + ": " + std::strerror(errno);
    int status = 0;
    do {
      status = ::flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB));
    } while (status != 0 && errno == EINTR);
    if (status != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return "cannot take the turn " + path + ": " + why;
    }
    fd_ = fd;
    return "";
  }

  [[nodiscard]] bool held() const { return fd_ >= 0; }

  /// Gives the turn back (a later acquire() waits for it again).
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

/// Whether a driver API entry point (by CUPTI's callback name) puts work on the GPU: launches,
/// graph launches, copies, memsets and stream memory operations.
inline bool submitsGpuWork(const char* name) {
  if (name == nullptr) return false;
  for (const char* prefix : {"cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset",
                             "cuStreamBatchMemOp", "cuStreamWriteValue", "cuStreamWaitValue"}) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

}  // namespace argus::inject
