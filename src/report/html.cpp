// report::writeHtml (argus/report/html.h): the report's JSON handed to python/argus/html.py.
#include "argus/report/html.h"

#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "argus/support/process.h"

namespace argus::report {

namespace fs = std::filesystem;

Result<void> writeHtml(const QueryReport& report, const std::optional<fs::path>& timeline,
                       const fs::path& out) {
  return writeHtml(toJson(report), timeline, out);
}

Result<void> writeHtml(const Json& document, const std::optional<fs::path>& timeline,
                       const fs::path& out) {
  auto refuse = [&](const std::string& why) {
    return fail("report", fmt::format("--html {}: {}", out.string(), why));
  };
  const char* chosen = std::getenv("ARGUS_PYTHON");
  const std::string python = chosen != nullptr && *chosen != '\0' ? chosen : "python3";
  auto dir = makeTempDir("argus-html");
  if (!dir) return std::unexpected(dir.error());
  const fs::path json = *dir / "report.json";
  std::vector<std::string> argv{python, "-m", "argus.html", json.string()};
  std::error_code ec;
  if (timeline && fs::is_regular_file(*timeline, ec))
    argv.insert(argv.end(), {"--timeline", timeline->string()});
  argv.insert(argv.end(), {"-o", out.string()});
  ProcessOptions options;
  options.timeout = std::chrono::seconds(300);
  std::string pythonPath = ARGUS_PYTHON_DIR;
  if (const char* inherited = std::getenv("PYTHONPATH"); inherited != nullptr && *inherited)
    pythonPath += std::string(":") + inherited;
  options.environment = {{"PYTHONPATH", pythonPath}};
  if (auto written = writeFile(json, document.dump()); !written) {
    fs::remove_all(*dir, ec);
    return std::unexpected(written.error());
  }
  auto run = runProcess(argv, options);
  fs::remove_all(*dir, ec);
  if (!run)
    return refuse(
        fmt::format("cannot run the renderer `{} -m argus.html` ({}); install python3 "
                    "or point $ARGUS_PYTHON at an interpreter",
                    python, run.error().message));
  if (run->exitCode != 0)
    return refuse(fmt::format("the renderer (`{} -m argus.html`, {}) exited with {}: {}", python,
                              ARGUS_PYTHON_DIR, run->exitCode, run->err));
  return {};
}

}  // namespace argus::report
