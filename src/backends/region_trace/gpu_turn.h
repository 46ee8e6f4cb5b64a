// The device's turn: how several traced processes share one GPU without their measured GPU work
// ever overlapping other GPU activity. Probe collections are separate processes; much of a
// process's life (exec, loading libcuda and CUPTI, creating the context, loading modules, the
// program's host set-up) is not the work being measured, so they start together. One lock file
// per device, two kinds of hold (flock(2)):
//   shared     from cuInit until the first GPU work (a launch, copy or memset), and again from the
//              exit handler to the end of the process: context creation, module uploads, memory
//              set-up and teardown, which the driver may carry out on the GPU. Many at once.
//   exclusive  from the first GPU work until the exit handler has synchronized the context: the
//              program's own work, the measured launch among it. One process, and no process in
//              its shared phase, at a time. With ARGUS_GPU_TURN_IDLE_MS the process gives it up
//              (holding nothing) while it is idle after its measured launch, and its next driver
//              call, whatever it is, waits for it again.
// Every sharing process follows the same rule, so a measured launch is its own execution on the
// device: no other process's kernel, copy or driver set-up runs beside it. The kernel drops a
// hold when its process ends, also after a crash. kernels.jsonl's CUPTI intervals let the join
// check the kernels afterwards.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

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

  /// Drops every hold (a later share or acquire waits again).
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    hold_ = Hold::None;
  }

 private:
  std::string take(const std::string& path, int operation, Hold hold, bool wait) {
    if (hold_ == hold) return "";
    if (fd_ < 0) {
      // Read-only is enough for flock. Everyone may open the file; where the kernel forbids
      // O_CREAT on another user's file in /tmp (fs.protected_regular), it is opened as it is.
      fd_ = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0666);
      if (fd_ >= 0) {
        (void)::fchmod(fd_, 0666);
      } else if (errno == EACCES || errno == EPERM) {
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      }
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

/// Whether an ancestor of this process holds a lock on `path` (from /proc/locks). A program's
/// child processes inherit ARGUS_GPU_TURN but not the lock (its descriptor closes on exec): a
/// child that waited for the turn while its parent held the file, shared or exclusive, would wait
/// for a parent that waits for it. Its GPU work runs under the ancestor's hold instead.
inline bool ancestorHoldsLock(const std::string& path) {
  struct stat file {};
  if (::stat(path.c_str(), &file) != 0) return false;
  std::set<long> holders;
  if (std::FILE* locks = std::fopen("/proc/locks", "re")) {
    char line[256];
    while (std::fgets(line, sizeof line, locks) != nullptr) {
      // "1: FLOCK  ADVISORY  READ  1234 08:01:5678 0 EOF" (device numbers in hex)
      char kind[16], mode[16], access[16];
      long pid = 0;
      unsigned devMajor = 0, devMinor = 0;
      unsigned long long inode = 0;
      if (std::sscanf(line, "%*d: %15s %15s %15s %ld %x:%x:%llu", kind, mode, access, &pid,
                      &devMajor, &devMinor, &inode) == 7 &&
          std::strcmp(kind, "FLOCK") == 0 && devMajor == major(file.st_dev) &&
          devMinor == minor(file.st_dev) && inode == file.st_ino)
        holders.insert(pid);
    }
    std::fclose(locks);
  }
  for (long pid = static_cast<long>(::getppid()); pid > 1;) {
    if (holders.contains(pid)) return true;
    // /proc/PID/stat: "PID (comm) S PPID ..."; comm may hold spaces and parentheses.
    std::FILE* stat = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "re");
    if (stat == nullptr) break;
    char text[512] = {};
    const std::size_t n = std::fread(text, 1, sizeof text - 1, stat);
    std::fclose(stat);
    const char* close = std::strrchr(text, ')');
    long parent = 0;
    if (n == 0 || close == nullptr || std::sscanf(close + 1, " %*c %ld", &parent) != 1) break;
    pid = parent;
  }
  return false;
}

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
