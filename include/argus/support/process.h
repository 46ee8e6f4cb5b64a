// Running external tools (nvcc, ptxas, nvdisasm, cuobjdump) and finding them on this machine.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "argus/support/status.h"

namespace argus {

/// What a finished child process left behind.
struct ProcessResult {
  int exitCode = 0;  ///< Exit status; 128+N when killed by signal N.
  std::string out;   ///< Everything written to stdout.
  std::string err;   ///< Everything written to stderr.
};

/// Options for runProcess.
struct ProcessOptions {
  std::optional<std::filesystem::path> workingDirectory = {};
  std::optional<std::chrono::seconds> timeout = {};  ///< Killed (SIGKILL) when exceeded.
  /// Variables set (or replaced) in the child's environment, the last of several settings of one
  /// variable winning; the rest is inherited.
  std::vector<std::pair<std::string, std::string>> environment = {};
};

/// Runs argv[0] (looked up on PATH when it has no '/') with the given arguments and waits for it.
/// Fails only when the process cannot be started or times out; a non-zero exit is a result.
/// [thread-safe]
[[nodiscard]] Result<ProcessResult> runProcess(const std::vector<std::string>& argv,
                                               const ProcessOptions& options = {});

/// Locates an NVIDIA tool by name: $ARGUS_<NAME> (upper case), then PATH, then
/// $CUDA_HOME/bin and /usr/local/cuda/bin, then the wheels that scripts/setup.sh installs in
/// the project's .venv. The error says how to install the tool. [thread-safe]
[[nodiscard]] Result<std::filesystem::path> findTool(const std::string& name);

/// Creates a fresh private temporary directory, <TMPDIR>/<prefix>-<owner>-XXXXXX, removed by the
/// caller when done. <owner> names this process's lock (<TMPDIR>/argus-owner-<owner>.lock, held
/// while it runs): the first call of a process removes the folders of owners that died without
/// removing theirs (a kill -9). [thread-safe]
[[nodiscard]] Result<std::filesystem::path> makeTempDir(const std::string& prefix);

/// Reads a whole file; the error names the path.
[[nodiscard]] Result<std::string> readFile(const std::filesystem::path& path);

/// Writes a whole file (truncating); the error names the path.
[[nodiscard]] Result<void> writeFile(const std::filesystem::path& path, std::string_view text);

}  // namespace argus
