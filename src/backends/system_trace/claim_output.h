// Which file a traced process writes. A program may run several processes that each start CUDA
// (one per GPU: NCCL, torchrun), and all of them inherit ARGUS_SYSTEM_TRACE_OUT: the first to
// start tracing takes that file, every other one writes `<file>.<pid>`, so no two processes
// write one file. A file that is older than this process is a previous run's: it is replaced.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace argus::inject {

/// The output this process should write for `path` (creating it when this process takes it).
inline std::string claimTraceOutput(const std::string& path) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      ::close(fd);
      return path;
    }
    if (errno != EEXIST) return path;  // the caller's open reports the real problem
    // /proc/self's time is this process's start; a sibling created the file after that.
    struct stat file {};
    struct stat self {};
    if (::stat(path.c_str(), &file) != 0 || ::stat("/proc/self", &self) != 0) break;
    if (file.st_mtime + 1 >= self.st_mtime) break;  // a sibling's: not ours to replace
    // A previous run's file: move it aside (only one process wins the rename), then retry.
    const std::string aside = path + ".stale." + std::to_string(::getpid());
    if (std::rename(path.c_str(), aside.c_str()) == 0) std::remove(aside.c_str());
  }
  return path + "." + std::to_string(::getpid());
}

}  // namespace argus::inject
