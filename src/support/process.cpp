#include "argus/support/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>

extern char** environ;

namespace argus {
namespace fs = std::filesystem;

namespace {

struct Pipe {
  int fds[2] = {-1, -1};
  ~Pipe() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
  void closeEnd(int i) {
    if (fds[i] >= 0) ::close(fds[i]);
    fds[i] = -1;
  }
};

}  // namespace

Result<ProcessResult> runProcess(const std::vector<std::string>& argv,
                                 const ProcessOptions& options) {
  if (argv.empty()) return fail("process", "empty command line");
  Pipe outPipe, errPipe;
  if (::pipe2(outPipe.fds, O_CLOEXEC) != 0 || ::pipe2(errPipe.fds, O_CLOEXEC) != 0)
    return fail("process", fmt::format("cannot create pipes: {}", std::strerror(errno)));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, outPipe.fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, errPipe.fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (options.workingDirectory)
    posix_spawn_file_actions_addchdir_np(&actions, options.workingDirectory->c_str());

  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  // The child's environment: ours, with the requested variables set or replaced. A variable
  // requested twice takes its last value (a program spec's run.env after Argus's defaults): the
  // child sees one entry, since getenv would return the first of several.
  std::vector<std::string> envStrings;
  const auto requested = [&](std::string_view name) {
    return std::any_of(options.environment.begin(), options.environment.end(),
                       [&](const auto& setting) { return setting.first == name; });
  };
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (!requested(entry.substr(0, entry.find('=')))) envStrings.emplace_back(entry);
  }
  for (std::size_t i = 0; i < options.environment.size(); ++i) {
    const auto& [key, value] = options.environment[i];
    const bool setLater = std::any_of(
        options.environment.begin() + static_cast<std::ptrdiff_t>(i) + 1, options.environment.end(),
        [&](const auto& later) { return later.first == key; });
    if (!setLater) envStrings.push_back(key + "=" + value);
  }
  std::vector<char*> cenv;
  cenv.reserve(envStrings.size() + 1);
  for (auto& e : envStrings) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data());
  // ETXTBSY: the executable is still open for writing somewhere, e.g. in a process another thread
  // started while a tool (not ours) was writing it and that has not reached exec yet. That window
  // is short; wait for it a little (up to about 2 s) before failing.
  for (int attempt = 0; rc == ETXTBSY && attempt < 40; ++attempt) {
    ::usleep(50'000);
    rc = ::posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data());
  }
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    return fail("process", fmt::format("cannot start `{}`: {}", argv[0], std::strerror(rc)));
  outPipe.closeEnd(1);
  errPipe.closeEnd(1);

  ProcessResult result;
  std::array<pollfd, 2> pfds{pollfd{outPipe.fds[0], POLLIN, 0}, pollfd{errPipe.fds[0], POLLIN, 0}};
  std::array<std::string*, 2> sinks{&result.out, &result.err};
  const auto deadline = options.timeout ? std::chrono::steady_clock::now() + *options.timeout
                                        : std::chrono::steady_clock::time_point::max();
  bool timedOut = false;
  int open = 2;
  char buffer[65536];
  while (open > 0) {
    int waitMs = -1;
    if (options.timeout) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timedOut = true;
        break;
      }
      waitMs = static_cast<int>(left.count());
    }
    int n = ::poll(pfds.data(), pfds.size(), waitMs);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (size_t i = 0; i < pfds.size(); ++i) {
      if (pfds[i].fd < 0 || pfds[i].revents == 0) continue;
      ssize_t got = ::read(pfds[i].fd, buffer, sizeof buffer);
      if (got > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        pfds[i].fd = -1;
        --open;
      }
    }
  }
  if (timedOut) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timedOut)
    return fail("process", fmt::format("`{}` did not finish within {} s and was killed", argv[0],
                                       options.timeout->count()));
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

Result<fs::path> findTool(const std::string& name) {
  std::string envName = "ARGUS_";
  for (char c : name) envName += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  if (const char* explicitPath = std::getenv(envName.c_str()); explicitPath && *explicitPath) {
    if (::access(explicitPath, X_OK) == 0) return fs::path(explicitPath);
    return fail("tools", fmt::format("${} points to `{}`, which is not an executable", envName,
                                     explicitPath));
  }
  std::vector<fs::path> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string dir; std::getline(ss, dir, ':');)
      if (!dir.empty()) dirs.emplace_back(dir);
  }
  if (const char* cudaHome = std::getenv("CUDA_HOME"))
    dirs.emplace_back(fs::path(cudaHome) / "bin");
  dirs.emplace_back("/usr/local/cuda/bin");
#ifdef ARGUS_VENV_DIR
  std::error_code ec;
  fs::path lib = fs::path(ARGUS_VENV_DIR) / "lib";
  if (fs::is_directory(lib, ec))
    for (const auto& entry : fs::directory_iterator(lib, ec))
      dirs.push_back(entry.path() / "site-packages" / "nvidia" / "cu13" / "bin");
#endif
  for (const auto& dir : dirs) {
    fs::path candidate = dir / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return fail("tools", fmt::format("`{}` not found on PATH, in /usr/local/cuda/bin or in the "
                                   "project's .venv; run scripts/setup.sh or set ${}",
                                   name, envName));
}

namespace {

constexpr std::string_view kOwnerPrefix = "argus-owner-";

/// Removes what dead Argus processes left in `tmp`: each process that makes temporary folders
/// holds an flock on argus-owner-<token>.lock for its lifetime and puts its token in every
/// folder's name (<prefix>-<token>-XXXXXX); a lock that can be taken belongs to a dead process
/// (a kill -9 removes nothing), so its folders and lock go.
void sweepDeadOwners(const fs::path& tmp) {
  std::error_code ec;
  std::set<std::string> live, dead;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(kOwnerPrefix)) continue;
    const bool pending = name.ends_with(".lock.new");
    if (!pending && !name.ends_with(".lock")) continue;
    const std::string token =
        name.substr(kOwnerPrefix.size(), name.size() - kOwnerPrefix.size() - (pending ? 9 : 5));
    int fd = ::open(it->path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (!free) {
      live.insert(token);
    } else if (!pending) {
      dead.insert(token);
    } else {  // a process killed between making and locking it, a minute ago or more
      std::error_code timeEc;
      auto age = fs::file_time_type::clock::now() - fs::last_write_time(it->path(), timeEc);
      if (!timeEc && age > std::chrono::minutes(1))
        ::unlink(it->path().c_str());
      else
        live.insert(token);
    }
    ::close(fd);
  }
  // A folder's owner is the second-to-last part of its name (p<pid>.<hex>); one whose owner
  // holds no lock is dead, also when its lock is gone already (swept, while a child the owner
  // left running still wrote there).
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("argus") || name.starts_with(kOwnerPrefix)) continue;
    const std::size_t last = name.rfind('-');
    if (last == std::string::npos || last == 0) continue;
    const std::size_t before = name.rfind('-', last - 1);
    if (before == std::string::npos) continue;
    const std::string token = name.substr(before + 1, last - before - 1);
    if (token.size() < 3 || token[0] != 'p' || token.find('.') == std::string::npos ||
        live.contains(token))
      continue;
    // An owner that started after the first pass listed the locks: its lock (made and locked
    // before any of its folders) says it lives. Only a lock that is free or gone now is dead.
    if (!dead.contains(token)) {
      int fd = ::open((tmp / fmt::format("{}{}.lock", kOwnerPrefix, token)).c_str(),
                      O_RDONLY | O_CLOEXEC);
      const bool held = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0;
      if (fd >= 0) ::close(fd);
      if (held) {
        live.insert(token);
        continue;
      }
    }
    std::error_code removeEc;
    fs::remove_all(it->path(), removeEc);
  }
  for (const auto& token : dead)
    ::unlink((tmp / fmt::format("{}{}.lock", kOwnerPrefix, token)).c_str());
}

/// This process's lock on its temporary folders, taken (and dead owners swept) when made;
/// removed when the process exits normally (a forked child that exits normally leaves its
/// parent's alone).
class TempOwner {
 public:
  explicit TempOwner(const fs::path& tmp) {
    sweepDeadOwners(tmp);
    std::random_device random;
    const std::string t = fmt::format("p{}.{:08x}", ::getpid(), random());
    const fs::path pending = tmp / fmt::format("{}{}.lock.new", kOwnerPrefix, t);
    const fs::path lock = tmp / fmt::format("{}{}.lock", kOwnerPrefix, t);
    // Locked before it is visible under its final name, so no sweep takes a live one for dead.
    int fd = ::open(pending.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0 && ::flock(fd, LOCK_EX) == 0 && ::rename(pending.c_str(), lock.c_str()) == 0) {
      token_ = t;
      lock_ = lock;
      fd_ = fd;  // stays open (and locked) while the process runs
    } else if (fd >= 0) {
      ::unlink(pending.c_str());
      ::close(fd);
    }
  }
  TempOwner(const TempOwner&) = delete;
  TempOwner& operator=(const TempOwner&) = delete;
  ~TempOwner() {
    if (fd_ < 0 || ::getpid() != pid_) return;
    ::unlink(lock_.c_str());
    ::close(fd_);
  }
  [[nodiscard]] const std::string& token() const { return token_; }

 private:
  std::string token_ = "unowned";  // folders are still made, only not swept after a crash
  fs::path lock_;
  pid_t pid_ = ::getpid();
  int fd_ = -1;
};

const std::string& tempOwnerToken(const fs::path& tmp) {
  static const TempOwner owner(tmp);
  return owner.token();
}

}  // namespace

Result<fs::path> makeTempDir(const std::string& prefix) {
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec)
    return fail("tools", fmt::format("cannot find the temporary directory: {}; set TMPDIR to a "
                                     "writable directory",
                                     ec.message()));
  std::string pattern = (tmp / (prefix + "-" + tempOwnerToken(tmp) + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return fail("tools", fmt::format("cannot create a temporary directory in {}: {}; check that "
                                     "it is writable and not full",
                                     tmp.string(), std::strerror(errno)));
  return fs::path(pattern);
}

Result<std::string> readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail("io", fmt::format("cannot read `{}`: {}", path.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<void> writeFile(const fs::path& path, std::string_view text) {
  // O_CLOEXEC: a process another thread starts meanwhile must not inherit the descriptor. If it
  // did, it would hold the file open for writing for its whole life, and running the file (an
  // executable written here) would fail with ETXTBSY until that process exits.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail("io", fmt::format("cannot write `{}`: {}", path.string(), std::strerror(errno)));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      return fail("io", fmt::format("short write to `{}`: {}", path.string(),
                                    n < 0 ? std::strerror(error) : "no progress"));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0)
    return fail("io", fmt::format("cannot write `{}`: {}", path.string(), std::strerror(errno)));
  return {};
}

}  // namespace argus
