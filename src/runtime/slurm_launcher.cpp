#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

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

std::vector<std::string> SlurmLauncher::wrap(const std::vector<std::string>& argv,
                                             const LaunchRequest& request) const {
  std::vector<std::string> out = {options_.srun, "--job-name=" + jobName(request),
                                  "--chdir=" + request.taskDir.string(), "--nodes=1", "--ntasks=1",
                                  // The worker's output is the task log: no srun banners in it.
                                  "--quiet",
                                  // The worker protocol's environment (ARGUS_TASK_DIR, ...).
                                  "--export=ALL"};
  if (!options_.partition.empty()) out.push_back("--partition=" + options_.partition);
  if (!options_.account.empty()) out.push_back("--account=" + options_.account);
  if (request.gpus > 0) out.push_back(fmt::format("--gres=gpu:{}", request.gpus));
  if (request.timeLimit) {
    const auto minutes = (request.timeLimit->count() + 59'999) / 60'000;
    out.push_back(fmt::format("--time={}", std::max<long long>(minutes, 1)));
  }
  out.insert(out.end(), options_.extraArgs.begin(), options_.extraArgs.end());
  out.emplace_back("--");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

void SlurmLauncher::cleanup(const LaunchRequest& request) const {
  // Idempotent: a job that ended is not there any more. srun cancels its job when it is stopped
  // with SIGTERM, but not when it is killed, which is what a deadline does.
  (void)runProcess({options_.scancel, "--quiet", "--name=" + jobName(request)},
                   {.timeout = std::chrono::seconds(30)});
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
