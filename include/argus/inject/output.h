// What every Argus injection library writes without CUDA: JSON text, lines appended to its files,
// its problems (stderr and errors.txt), its numeric settings, and kernels.jsonl's lines.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace argus::inject {

/// JSON string literal (with quotes) for `text`.
[[nodiscard]] std::string jsonString(std::string_view text);

/// One kernel's GPU interval from CUPTI's kernel activity: a kernels.jsonl line of the injection
/// libraries (kernel_activity.h reads it from CUPTI's record).
struct KernelActivity {
  std::int64_t seq = -1;  ///< The launch's number in launches.jsonl, -1 when not known.
  std::uint32_t correlation = 0;
  std::string kernel;
  std::uint64_t startNs = 0, endNs = 0;  ///< CUPTI's clock.
  std::uint32_t context = 0, stream = 0;
};
/// kernels.jsonl's line for `k` (with the newline): seq, correlation, kernel, start_ns, end_ns,
/// duration_ns, context, stream.
[[nodiscard]] std::string kernelsLine(const KernelActivity& k);

/// Appends `line` and a newline to `file`.
void appendLine(const std::filesystem::path& file, const std::string& line);

/// An injection library's problem: "<prefix>: <message>" on stderr and, when `dir` is not empty,
/// appended to dir/errors.txt.
void reportTo(std::string_view prefix, const std::filesystem::path& dir,
              const std::string& message);

/// Reads an environment variable as an unsigned number, decimal or with a 0x prefix hexadecimal
/// (a leading 0 is not octal: "08" is 8); `fallback` when unset or malformed.
[[nodiscard]] std::uint64_t envNumber(const char* name, std::uint64_t fallback);

}  // namespace argus::inject
