#include "argus/runtime/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/support/process.h"

extern char** environ;

namespace argus::runtime {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string signalName(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

/// A worker's output within a bound: its first half and a sliding last half, and how much was
/// dropped between them. Appending is amortized O(bytes), however much the worker writes.
class CappedOutput {
 public:
  explicit CappedOutput(std::size_t limit) : half_(std::max<std::size_t>(limit / 2, 1)) {}
  void append(const char* data, std::size_t n) {
    if (head_.size() < half_) {
      const std::size_t take = std::min(n, half_ - head_.size());
      head_.append(data, take);
      data += take;
      n -= take;
    }
    if (n == 0) return;
    tail_.append(data, n);
    if (tail_.size() > 2 * half_) trimTail();
  }
  /// The kept output, with the cut marked; leaves this empty.
  std::string take(std::uint64_t& dropped) {
    trimTail();
    dropped = dropped_;
    std::string out = std::move(head_);
    if (dropped_ > 0)
      out += fmt::format(
          "\n[argus: {} bytes of output cut here; the worker wrote {} bytes, more than the {} "
          "kept (the first and last {})]\n",
          dropped_, dropped_ + out.size() + tail_.size(), 2 * half_, half_);
    out += tail_;
    return out;
  }

 private:
  void trimTail() {
    if (tail_.size() <= half_) return;
    const std::size_t cut = tail_.size() - half_;
    dropped_ += cut;
    tail_.erase(0, cut);
  }
  std::size_t half_;
  std::string head_, tail_;
  std::uint64_t dropped_ = 0;
};

// Drains whatever the pipe holds right now without blocking.
void drain(int fd, CappedOutput& sink) {
  char buffer[65536];
  for (;;) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      sink.append(buffer, static_cast<size_t>(got));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    return;
  }
}

}  // namespace

Result<WorkerExit> runWorker(const std::vector<std::string>& argv, const WorkerOptions& options) {
  if (argv.empty()) return fail("worker", "empty worker command line");
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0)
    return fail("worker", fmt::format("cannot create a pipe: {}", std::strerror(errno)));

  // Environment: Argus's own, with the options' entries replacing or adding.
  std::vector<std::string> envStrings;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string_view::npos &&
        options.environment.contains(std::string(entry.substr(0, eq))))
      continue;
    envStrings.emplace_back(entry);
  }
  for (const auto& [k, v] : options.environment) envStrings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : envStrings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (!options.workingDirectory.empty())
    posix_spawn_file_actions_addchdir_np(&actions, options.workingDirectory.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group, so a timeout or cancel kills the worker and everything it started;
  // default signal dispositions and an empty mask, so Argus's SIGINT handler is not inherited.
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, static_cast<short>(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                                     POSIX_SPAWN_SETSIGMASK));
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pipeFds[1]);
  if (rc != 0) {
    ::close(pipeFds[0]);
    return fail("worker", fmt::format("cannot start `{}`: {}", argv[0], std::strerror(rc)));
  }
  ::fcntl(pipeFds[0], F_SETFL, ::fcntl(pipeFds[0], F_GETFL) | O_NONBLOCK);

  WorkerExit exit;
  CappedOutput output(options.maxOutputBytes);
  int status = 0;
  bool reaped = false;
  bool pipeOpen = true;
  auto killAt = std::chrono::steady_clock::time_point::max();  // SIGKILL after SIGTERM
  constexpr int kPollMs = 10;
  while (!reaped) {
    if (pipeOpen) {
      pollfd pfd{pipeFds[0], POLLIN, 0};
      int n = ::poll(&pfd, 1, kPollMs);
      if (n > 0) {
        char buffer[65536];
        ssize_t got = ::read(pipeFds[0], buffer, sizeof buffer);
        if (got > 0)
          output.append(buffer, static_cast<size_t>(got));
        else if (got == 0)
          pipeOpen = false;
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
    }
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      reaped = true;
      break;
    }
    auto now = std::chrono::steady_clock::now();
    if (!exit.timedOut && !exit.cancelled) {
      if (now >= options.deadline) {
        exit.timedOut = true;
        ::kill(-pid, SIGKILL);
      } else if (options.cancelFlag && options.cancelFlag->load()) {
        exit.cancelled = true;
        ::kill(-pid, SIGTERM);
        killAt = now + options.terminateGrace;
      }
    } else if (now >= killAt) {
      ::kill(-pid, SIGKILL);
      killAt = std::chrono::steady_clock::time_point::max();
    }
  }
  // Anything the worker left running in its group goes too: a worker owns nothing after exit.
  ::kill(-pid, SIGKILL);
  drain(pipeFds[0], output);
  ::close(pipeFds[0]);
  exit.output = output.take(exit.outputDropped);
  if (WIFEXITED(status)) {
    exit.exitCode = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
    exit.exitCode = 128 + exit.signal;
  }
  return exit;
}

Result<TaskOutputs> readManifest(const TaskDescriptor& task, const fs::path& taskDir,
                                 std::string_view manifestText) {
  auto bad = [&](const std::string& why) {
    return fail("worker", fmt::format("task `{}`: invalid manifest.json: {}", task.id, why));
  };
  json m = json::parse(manifestText, nullptr, false);
  if (m.is_discarded()) {
    std::string head(manifestText.substr(0, 60));
    for (char& c : head)
      if (c == '\n') c = ' ';
    return bad(
        fmt::format("not JSON (starts with `{}`); the worker must write a JSON object", head));
  }
  if (!m.is_object()) return bad("not a JSON object");
  if (!m.contains("argus_manifest") || m["argus_manifest"] != 1)
    return bad("missing `\"argus_manifest\": 1`");
  std::string status = m.value("status", "");
  if (status == "failed")
    return fail("worker", fmt::format("task `{}`: worker reported failure: {}", task.id,
                                      m.value("error", std::string("(no error given)"))));
  if (status != "ok") return bad("`status` must be \"ok\" or \"failed\"");
  TaskOutputs out;
  const json outputs = m.value("outputs", json::object());
  if (!outputs.is_object()) return bad("`outputs` must map output names to file paths");
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(taskDir, ec);
  for (const auto& [name, pathJson] : outputs.items()) {
    if (!pathJson.is_string()) return bad(fmt::format("output `{}` is not a path string", name));
    fs::path p = fs::weakly_canonical(taskDir / pathJson.get<std::string>(), ec);
    auto rel = p.lexically_relative(root);
    if (rel.empty() || rel.native().starts_with(".."))
      return bad(fmt::format("output `{}` (`{}`) lies outside the task directory", name,
                             pathJson.get<std::string>()));
    if (!fs::is_regular_file(p, ec))
      return bad(fmt::format("output `{}` names `{}`, which does not exist", name,
                             pathJson.get<std::string>()));
    auto artifact = Artifact::fromFile(p);
    if (!artifact) return std::unexpected(artifact.error());
    out.artifacts.emplace(name, std::move(*artifact));
  }
  for (const auto& name : task.outputs)
    if (!out.artifacts.contains(name))
      return bad(fmt::format("declared output `{}` is missing", name));
  if (auto it = m.find("branches"); it != m.end() && !it->is_null()) {
    if (task.type != TaskType::Control) return bad("only Control tasks may return `branches`");
    if (!it->is_array()) return bad("`branches` must be a list of task descriptors");
    for (const auto& b : *it) {
      auto t = taskFromJson(b);
      if (!t) return bad("branch: " + t.error().message);
      out.branches.push_back(std::move(*t));
    }
  }
  return out;
}

namespace {

Result<json> artifactRefs(const std::map<std::string, Artifact>& artifacts, const fs::path& dir) {
  json refs = json::object();
  std::error_code ec;
  for (const auto& [name, artifact] : artifacts) {
    fs::path path;
    if (artifact.file) {
      path = *artifact.file;
    } else {
      fs::create_directories(dir, ec);
      std::string fileName = name;
      for (char& c : fileName)
        if (c == '/') c = '~';
      path = dir / fileName;
      if (auto w = writeFile(path, artifact.data); !w) return std::unexpected(w.error());
    }
    refs[name] = {{"path", path.string()}, {"hash", artifact.hash}};
  }
  return refs;
}

}  // namespace

Result<TaskOutputs> WorkerProcessExecutor::execute(TaskContext& ctx) {
  const fs::path dir = ctx.taskDir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return fail("worker",
                fmt::format("cannot create task directory `{}`: {}", dir.string(), ec.message()));
  fs::remove(dir / "manifest.json", ec);  // a stale manifest from an earlier run must not count
  auto inputs = artifactRefs(ctx.inputs, dir / "inputs");
  if (!inputs) return std::unexpected(inputs.error());
  auto evidence = artifactRefs(ctx.evidence, dir / "evidence");
  if (!evidence) return std::unexpected(evidence.error());
  json descriptor{{"argus_worker_protocol", 1},
                  {"task", toJson(ctx.task)},
                  {"device", ctx.device ? json(*ctx.device) : json(nullptr)},
                  {"task_dir", dir.string()},
                  {"inputs", std::move(*inputs)},
                  {"evidence", std::move(*evidence)}};
  if (auto w = writeFile(dir / "descriptor.json", descriptor.dump(2)); !w)
    return std::unexpected(w.error());

  WorkerOptions options;
  options.workingDirectory = dir;
  options.environment = environment(ctx);
  options.environment["ARGUS_TASK_DIR"] = dir.string();
  if (ctx.device && (ctx.launcher == nullptr || !ctx.launcher->assignsDevices()))
    options.environment["CUDA_VISIBLE_DEVICES"] = *ctx.device;
  options.deadline = ctx.deadline;
  options.cancelFlag = ctx.cancelFlag;
  auto argv = command(ctx);
  LaunchRequest launch{ctx.task.id, dir, devicesIn(ctx.device), {}};
  if (ctx.deadline != std::chrono::steady_clock::time_point::max())
    launch.timeLimit = std::chrono::duration_cast<std::chrono::milliseconds>(
        ctx.deadline - std::chrono::steady_clock::now());
  // On a launcher (a Slurm job): stopped with SIGTERM first (srun then cancels its job), and
  // the job cancelled after when the worker did not end by itself.
  if (ctx.launcher != nullptr) options.terminateGrace = std::chrono::seconds(5);
  auto launched = argv;
  if (ctx.launcher != nullptr) {
    auto wrapped = ctx.launcher->wrap(argv, launch);
    if (!wrapped)
      return fail("worker", fmt::format("task `{}`: {}", ctx.task.id, wrapped.error().message));
    launched = std::move(*wrapped);
  }
  auto exit = runWorker(launched, options);
  if (ctx.launcher != nullptr &&
      (!exit || exit->timedOut || exit->cancelled || exit->signal != 0 || exit->exitCode >= 128))
    ctx.launcher->cleanup(launch);
  if (!exit) return std::unexpected(exit.error());
  ctx.log += exit->output;
  (void)writeFile(dir / "worker.log", exit->output);

  const std::string who = argv.empty() ? "worker" : fs::path(argv[0]).filename().string();
  if (exit->timedOut) {
    ctx.timedOut = true;
    return fail("worker", fmt::format("task `{}`: worker `{}` exceeded its timeout and was "
                                      "killed with its process group",
                                      ctx.task.id, who));
  }
  if (exit->cancelled)
    return fail("worker", fmt::format("task `{}`: worker `{}` was stopped because the run was "
                                      "cancelled",
                                      ctx.task.id, who));
  if (exit->signal != 0)
    return fail("worker", fmt::format("task `{}`: worker `{}` crashed ({}); see the task log",
                                      ctx.task.id, who, signalName(exit->signal)));
  if (exit->exitCode != 0)
    return fail("worker", fmt::format("task `{}`: worker `{}` exited with status {}; see the "
                                      "task log",
                                      ctx.task.id, who, exit->exitCode));
  auto manifest = readFile(dir / "manifest.json");
  if (!manifest)
    return fail("worker", fmt::format("task `{}`: worker `{}` exited without writing "
                                      "manifest.json",
                                      ctx.task.id, who));
  return readManifest(ctx.task, dir, *manifest);
}

std::vector<std::string> CommandExecutor::command(const TaskContext& ctx) const {
  std::vector<std::string> argv = argv_;
  auto replace = [](std::string& s, std::string_view from, const std::string& to) {
    for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
      s.replace(pos, from.size(), to);
  };
  for (auto& a : argv) {
    replace(a, "{task_dir}", ctx.taskDir.string());
    replace(a, "{device}", ctx.device.value_or(""));
  }
  return argv;
}

}  // namespace argus::runtime
