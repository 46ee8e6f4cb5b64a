#include "argus/backends/trace_dir.h"

#include <sstream>
#include <string>

#include <fmt/format.h>

#include "argus/support/process.h"

namespace argus::backends {

namespace fs = std::filesystem;
using json = nlohmann::json;
using evidence::BundleLaunch;

Result<std::vector<BundleLaunch>> readTraceDir(const fs::path& dir) {
  auto index = readFile(dir / "launches.jsonl");
  if (!index)
    return fail("region_trace",
                fmt::format("{} has no launches.jsonl: the injection library did not run (set "
                            "CUDA_INJECTION64_PATH to libargus_inject.so and ARGUS_TRACE_DIR to "
                            "this directory)",
                            dir.string()));
  std::vector<BundleLaunch> launches;
  std::istringstream lines(*index);
  size_t lineNo = 0;
  for (std::string line; std::getline(lines, line);) {
    ++lineNo;
    if (line.empty()) continue;
    json info = json::parse(line, nullptr, false);
    if (info.is_discarded())
      return fail("region_trace", fmt::format("{}:{}: launch index line is not JSON: `{}`",
                                              (dir / "launches.jsonl").string(), lineNo, line));
    BundleLaunch launch{info, {}};
    if (info.contains("file") && info["file"].is_string() &&
        !info["file"].get<std::string>().empty()) {
      fs::path file = info["file"].get<std::string>();
      if (file.is_relative()) file = dir / file;
      auto bytes = readFile(file);
      if (!bytes) return std::unexpected(bytes.error());
      launch.buffer = std::move(*bytes);
    }
    launches.push_back(std::move(launch));
  }
  return launches;
}

}  // namespace argus::backends
