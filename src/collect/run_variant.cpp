#include "argus/collect/run_variant.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace argus::collect {
namespace {

namespace fs = std::filesystem;

/// `word` with every `{exe}` replaced by the executable's path.
std::string substituteExe(std::string word, const fs::path& exe) {
  const std::string path = exe.string();
  for (size_t at = word.find("{exe}"); at != std::string::npos;
       at = word.find("{exe}", at + path.size()))
    word.replace(at, 5, path);
  return word;
}

}  // namespace

std::string outputTail(const std::string& text, size_t lines) {
  size_t pos = text.size();
  for (size_t n = 0; n <= lines && pos > 0; ++n) {
    size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) return text;
    if (n < lines) pos = nl;
  }
  return text.substr(pos == text.size() ? 0 : pos + 1);
}

std::optional<std::string> userSetting(const program::ProgramSpec& spec, const char* name) {
  if (auto it = spec.run.environment.find(name); it != spec.run.environment.end())
    return it->second;
  if (const char* value = std::getenv(name)) return std::string(value);
  return std::nullopt;
}

Result<fs::path> materializeExecutable(const runtime::Artifact& artifact, const fs::path& dir) {
  if (artifact.file) return *artifact.file;
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::path path = dir / "program";
  if (auto ok = writeFile(path, artifact.data); !ok) return std::unexpected(ok.error());
  ::chmod(path.c_str(), 0755);
  return path;
}

Result<ProgramRun> runVariant(const program::ProgramSpec& spec, runtime::TaskContext& ctx,
                              const fs::path& exe,
                              std::vector<std::pair<std::string, std::string>> environment,
                              std::string_view component, const std::vector<std::string>& prefix) {
  const std::string who(component);
  ProgramRun ran;
  ran.argv = prefix;
  for (const auto& word : spec.run.command) ran.argv.push_back(substituteExe(word, exe));
  const program::RunSpec& run = spec.run;
  ProcessOptions options;
  options.workingDirectory = spec.file.parent_path();
  auto left = std::chrono::duration_cast<std::chrono::seconds>(ctx.deadline -
                                                               std::chrono::steady_clock::now());
  // A run that takes GPU turns may first wait for the others sharing the device.
  auto limit = std::chrono::seconds(static_cast<long>(
      run.timeoutSeconds * static_cast<double>(std::max<std::size_t>(1, ctx.turnSharers))));
  options.timeout = ctx.deadline == std::chrono::steady_clock::time_point::max()
                        ? limit
                        : std::min(limit, std::max(left, std::chrono::seconds(1)));
  options.environment = std::move(environment);
  runtime::WorkerLauncher* launcher = ctx.launcher;
  if (ctx.device && (launcher == nullptr || !launcher->assignsDevices()))
    options.environment.emplace_back("CUDA_VISIBLE_DEVICES", *ctx.device);
  for (const auto& [key, value] : run.environment) options.environment.emplace_back(key, value);

  // On a launcher (--executor slurm) the program runs as a job of its own, in the spec's folder,
  // with the task's GPUs and time limit; the job is cancelled after however the run ended.
  const runtime::LaunchRequest launch{
      ctx.task.id, *options.workingDirectory, runtime::devicesIn(ctx.device),
      std::chrono::duration_cast<std::chrono::milliseconds>(*options.timeout)};
  std::vector<std::string> argv = ran.argv;
  if (launcher != nullptr) {
    auto wrapped = launcher->wrap(ran.argv, launch);
    if (!wrapped) return fail(who, wrapped.error().message);
    argv = std::move(*wrapped);
  }
  auto result = runProcess(argv, options);
  // A run that was stopped (its time limit, a signal) may leave its job behind.
  if (launcher != nullptr && (!result || result->exitCode >= 128)) launcher->cleanup(launch);
  if (!result) {
    ctx.timedOut = result.error().message.find("did not finish") != std::string::npos;
    return fail(who, fmt::format("running `{}`: {}", ran.argv.front(), result.error().message));
  }
  ctx.log += fmt::format("$ {} (exit {})\n{}{}", fmt::join(ran.argv, " "), result->exitCode,
                         outputTail(result->out, 40), outputTail(result->err, 40));
  if (run.skipExitCode >= 0 && result->exitCode == run.skipExitCode)
    return fail(who, fmt::format("the program says it cannot run here (exit {}): {}",
                                 result->exitCode, outputTail(result->out + result->err, 2)));
  if (result->exitCode != run.successExitCode)
    return fail(who, fmt::format("the program failed (exit {}, expected {}); its output is in the "
                                 "task log",
                                 result->exitCode, run.successExitCode));
  if (!run.stdoutContains.empty() && result->out.find(run.stdoutContains) == std::string::npos)
    return fail(who, fmt::format("the program's output lacks `{}`, so its own correctness check "
                                 "did not pass",
                                 run.stdoutContains));

  if (!spec.check.empty()) {
    std::vector<std::string> check;
    for (const auto& word : spec.check) check.push_back(substituteExe(word, exe));
    auto checked = runProcess(check, options);
    if (!checked) return fail(who, fmt::format("correctness check: {}", checked.error().message));
    ctx.log += fmt::format("$ {} (exit {})\n{}{}", fmt::join(check, " "), checked->exitCode,
                           outputTail(checked->out, 20), outputTail(checked->err, 20));
    if (checked->exitCode != 0)
      return fail(who, fmt::format("the program's correctness check `{}` failed (exit {}); its "
                                   "output is in the task log",
                                   check.front(), checked->exitCode));
  }
  ran.result = std::move(*result);
  return ran;
}

}  // namespace argus::collect
