#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "argus/runtime/launcher.h"
#include "argus/support/process.h"

namespace argus::runtime {

unsigned devicesIn(const std::optional<std::string>& device) {
  if (!device || device->empty()) return 0;
  return static_cast<unsigned>(std::count(device->begin(), device->end(), ',')) + 1;
}

std::string SlurmLauncher::jobName(const LaunchRequest& request) {
  // Slurm job names are free text; keep them to characters every shell and squeue shows as is.
  std::string task;
  for (char c : request.taskId)
    task += std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' ? c : '_';
  return fmt::format("argus-{}-{}", ::getpid(), task);
}

namespace {

using Clock = std::chrono::steady_clock;

/// How long Slurm's word that an allocation runs is trusted before it is asked again: an
/// allocation rarely ends early (an administrator, a node failure), and asking costs ~10 ms.
constexpr auto kRecheck = std::chrono::seconds(10);

/// `--time` in whole minutes, rounded up, at least 1.
std::string minutesArg(std::chrono::milliseconds limit) {
  return fmt::format("--time={}", std::max<long long>((limit.count() + 59'999) / 60'000, 1));
}

}  // namespace

SlurmLauncher::~SlurmLauncher() {
  const auto ids = allocations();
  if (ids.empty()) return;
  scancel(ids);
}

std::vector<std::string> SlurmLauncher::allocations() const {
  std::vector<std::string> ids;
  std::lock_guard lock(mutex_);
  for (const auto& [gpus, pool] : pools_) {
    std::lock_guard poolLock(pool->mutex);
    for (const auto& a : pool->allocations) ids.push_back(a.jobId);
  }
  return ids;
}

Result<std::vector<std::string>> SlurmLauncher::wrap(const std::vector<std::string>& argv,
                                                     const LaunchRequest& request) {
  std::vector<std::string> out = {options_.srun};
  if (options_.batchSlots > 0) {
    auto job = allocationFor(request);
    if (!job) return std::unexpected(job.error());
    // A step of one task on one CPU of the allocation (--exact), so that steps run side by side.
    out.insert(out.end(), {"--jobid=" + *job, "--exact"});
  }
  out.insert(out.end(), {"--job-name=" + jobName(request), "--chdir=" + request.taskDir.string(),
                         "--nodes=1", "--ntasks=1",
                         // The worker's output is the task log: no srun banners in it.
                         "--quiet",
                         // The worker protocol's environment (ARGUS_TASK_DIR, ...).
                         "--export=ALL"});
  if (options_.batchSlots == 0) {
    if (!options_.partition.empty()) out.push_back("--partition=" + options_.partition);
    if (!options_.account.empty()) out.push_back("--account=" + options_.account);
  }
  if (request.gpus > 0) out.push_back(fmt::format("--gres=gpu:{}", request.gpus));
  if (request.timeLimit) out.push_back(minutesArg(*request.timeLimit));
  if (options_.batchSlots == 0)
    out.insert(out.end(), options_.extraArgs.begin(), options_.extraArgs.end());
  out.emplace_back("--");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

Result<std::string> SlurmLauncher::allocationFor(const LaunchRequest& request) {
  Pool* pool = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto& slot = pools_[request.gpus];
    if (!slot) slot = std::make_unique<Pool>();
    pool = slot.get();
  }
  std::lock_guard lock(pool->mutex);
  const auto now = Clock::now();
  // What the run needs of the allocation's time: its own limit, and a minute for the step's start.
  const auto needed =
      request.timeLimit.value_or(std::chrono::milliseconds(0)) + std::chrono::minutes(1);
  if (!pool->allocations.empty()) {
    Allocation& current = pool->allocations.back();
    if (current.ends - now >= needed) {
      if (now - current.checked < kRecheck) return current.jobId;
      if (running(current.jobId)) {
        current.checked = now;
        return current.jobId;
      }
    }
  }
  const auto time = std::max(options_.batchTime, std::chrono::ceil<std::chrono::minutes>(needed));
  auto made = allocate(request.gpus, time, request.timeLimit);
  if (!made) return std::unexpected(made.error());
  pool->allocations.push_back(*made);
  return made->jobId;
}

Result<SlurmLauncher::Allocation> SlurmLauncher::allocate(
    unsigned gpus, std::chrono::minutes time, std::optional<std::chrono::milliseconds> wait) const {
  const std::string name = fmt::format("argus-{}-batch-g{}", ::getpid(), gpus);
  std::vector<std::string> argv = {options_.salloc,
                                   "--no-shell",
                                   "--job-name=" + name,
                                   "--nodes=1",
                                   fmt::format("--ntasks={}", options_.batchSlots),
                                   fmt::format("--time={}", time.count())};
  if (gpus > 0) argv.push_back(fmt::format("--gres=gpu:{}", gpus * options_.batchSlots));
  if (!options_.partition.empty()) argv.push_back("--partition=" + options_.partition);
  if (!options_.account.empty()) argv.push_back("--account=" + options_.account);
  // A run with a time limit waits no longer than that for its allocation (a pending request
  // is withdrawn); one without waits for as long as the cluster's queue takes.
  ProcessOptions waiting;
  if (wait) {
    const auto seconds =
        std::max<long long>(std::chrono::duration_cast<std::chrono::seconds>(*wait).count(), 1);
    argv.push_back(fmt::format("--immediate={}", seconds));
    waiting.timeout = std::chrono::seconds(seconds + 30);
  }
  argv.insert(argv.end(), options_.extraArgs.begin(), options_.extraArgs.end());
  const auto start = Clock::now();
  auto granted = runProcess(argv, waiting);
  // salloc says "Granted job allocation <id>" on stderr once the allocation runs.
  static const std::regex kGranted(R"(Granted job allocation (\d+))");
  std::smatch m;
  const std::string said = granted ? granted->err + granted->out : granted.error().text();
  if (!granted || granted->exitCode != 0 || !std::regex_search(said, m, kGranted)) {
    // Nothing of a refused or interrupted request may stay queued.
    scancel({"--name=" + name});
    return fail("slurm",
                fmt::format("Slurm did not grant an allocation for batched runs ({} tasks{} for "
                            "{} min, `{}`): {}; ask for fewer slots (--slurm-batch), a shorter "
                            "--slurm-batch-minutes, or run without batching (--slurm-batch 0)",
                            options_.batchSlots,
                            gpus > 0 ? fmt::format(" of {} GPUs", gpus) : std::string(),
                            time.count(), fmt::join(argv, " "), said));
  }
  return Allocation{m[1].str(), start + time, Clock::now()};
}

void SlurmLauncher::scancel(const std::vector<std::string>& what) const {
  std::vector<std::string> argv = {options_.scancel, "--quiet"};
  argv.insert(argv.end(), what.begin(), what.end());
  (void)runProcess(argv, {.timeout = std::chrono::seconds(30)});
}

bool SlurmLauncher::running(const std::string& jobId) const {
  auto q = runProcess({options_.squeue, "--noheader", "--format=%T", "--jobs=" + jobId},
                      {.timeout = std::chrono::seconds(30)});
  return q && q->exitCode == 0 && q->out.find("RUNNING") != std::string::npos;
}

void SlurmLauncher::cleanup(const LaunchRequest& request) {
  // Idempotent: a job that ended is not there any more. srun cancels its job when it is stopped
  // with SIGTERM, but not when it is killed, which is what a deadline does.
  if (options_.batchSlots == 0) {
    scancel({"--name=" + jobName(request)});
    return;
  }
  // A step: scancel --name finds jobs only, so find the step by its name in the allocations.
  const auto ids = allocations();
  if (ids.empty()) return;
  auto steps = runProcess({options_.squeue, "--steps", "--noheader", "--format=%i %j",
                           fmt::format("--jobs={}", fmt::join(ids, ","))},
                          {.timeout = std::chrono::seconds(30)});
  if (!steps) return;
  const std::string name = jobName(request);
  std::istringstream lines(steps->out);
  for (std::string id, stepName; lines >> id >> stepName;)
    if (stepName == name) scancel({id});
}

namespace {

/// Whether `tool` runs: a path, or a name found on PATH.
bool onPath(const std::string& tool) {
  if (tool.find('/') != std::string::npos) return ::access(tool.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  for (std::string_view dirs = path != nullptr ? path : ""; !dirs.empty();) {
    const auto colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    if (!dir.empty() && ::access((dir + "/" + tool).c_str(), X_OK) == 0) return true;
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
  }
  return false;
}

}  // namespace

unsigned gpusInGres(std::string_view gres) {
  unsigned gpus = 0;
  while (!gres.empty()) {
    // Items are separated by commas outside parentheses: "gpu:a100:4(S:0-1),gpu:h100:2(S:1)".
    size_t end = 0;
    for (int depth = 0; end < gres.size() && (depth > 0 || gres[end] != ','); ++end)
      depth += gres[end] == '(' ? 1 : gres[end] == ')' ? -1 : 0;
    std::string_view item = gres.substr(0, end);
    gres.remove_prefix(std::min(end + 1, gres.size()));
    if (const auto paren = item.find('('); paren != std::string_view::npos)
      item = item.substr(0, paren);
    if (!item.starts_with("gpu:")) continue;
    // name[:type]:count; a count may carry a unit suffix Slurm never uses for GPUs.
    const std::string count(item.substr(item.rfind(':') + 1));
    char* rest = nullptr;
    const unsigned long n = std::strtoul(count.c_str(), &rest, 10);
    if (rest != count.c_str() && *rest == '\0') gpus += static_cast<unsigned>(n);
  }
  return gpus;
}

Result<SlurmGpus> slurmDevices(const SlurmOptions& options) {
  std::vector<std::string> sinfo = {"sinfo", "--noheader", "--Node", "--format=%N %G"};
  if (!options.partition.empty()) sinfo.push_back("--partition=" + options.partition);
  auto info = runProcess(sinfo, {.timeout = std::chrono::seconds(15)});
  if (!info || info->exitCode != 0)
    return fail("slurm", fmt::format("`{}` failed: {}", fmt::join(sinfo, " "),
                                     info ? info->err : info.error().message));
  // One line per node and partition; a node in two partitions counts once.
  std::map<std::string, unsigned> nodes;
  std::istringstream lines(info->out);
  for (std::string node, gres; lines >> node >> gres;) nodes[node] = gpusInGres(gres);
  SlurmGpus out;
  unsigned total = 0;
  for (const auto& [node, gpus] : nodes) {
    total += gpus;
    out.largestNode = std::max(out.largestNode, gpus);
  }
  for (unsigned i = 0; i < total; ++i) out.devices.push_back(std::to_string(i));
  return out;
}

Result<void> checkSlurm(const SlurmOptions& options) {
  const char* conf = std::getenv("SLURM_CONF");
  const std::string where = fmt::format(
      "Argus finds the cluster as Slurm's commands do (SLURM_CONF{}, else /etc/slurm/slurm.conf)",
      conf != nullptr ? fmt::format(" = {}", conf) : std::string());
  for (const std::string& tool : {options.srun, options.scancel, std::string("sinfo")})
    if (!onPath(tool))
      return fail("slurm", fmt::format("`{}` is not installed or not on PATH; install Slurm's "
                                       "client commands (Debian: slurm-client)",
                                       tool));
  std::vector<std::string> sinfo = {"sinfo", "--noheader", "--format=%P %a"};
  if (!options.partition.empty()) sinfo.push_back("--partition=" + options.partition);
  auto info = runProcess(sinfo, {.timeout = std::chrono::seconds(15)});
  if (!info || info->exitCode != 0)
    return fail("slurm", fmt::format("no Slurm controller answered `sinfo`: {}; {}",
                                     info ? info->err : info.error().message, where));
  if (info->out.find_first_not_of(" \n") == std::string::npos)
    return fail(
        "slurm",
        fmt::format("Slurm has no partition{}; {}",
                    options.partition.empty() ? "" : " `" + options.partition + "`", where));
  return {};
}

}  // namespace argus::runtime
