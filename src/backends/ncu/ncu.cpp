#include "argus/backends/ncu.h"

namespace argus::backends::ncu {

std::vector<std::string> profileCommand(const NcuProfileOptions& o,
                                        const std::vector<std::string>& program) {
  std::vector<std::string> argv = {o.ncu, "--clock-control", "none"};
  for (const auto& s : o.sections) argv.insert(argv.end(), {"--section", s});
  if (!o.metrics.empty()) {
    std::string list;
    for (const auto& m : o.metrics) list += (list.empty() ? "" : ",") + m;
    argv.insert(argv.end(), {"--metrics", list});
  }
  argv.insert(argv.end(), {"--import-source", "no"});
  if (!o.kernels.empty()) {
    // One -k takes one filter; several kernels become one exact-match regex.
    if (o.kernels.size() == 1) {
      argv.insert(argv.end(), {"-k", o.kernels.front()});
    } else {
      std::string regex = "regex:^(";
      for (size_t i = 0; i < o.kernels.size(); ++i) regex += (i ? "|" : "") + o.kernels[i];
      argv.insert(argv.end(), {"-k", regex + ")$"});
    }
  }
  if (o.launchCount) argv.insert(argv.end(), {"-c", std::to_string(*o.launchCount)});
  argv.insert(argv.end(), {"-f", "-o", o.report.string()});
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

std::vector<std::string> sourceExportCommand(const std::string& ncu,
                                             const std::filesystem::path& reportFile) {
  return {ncu,    "--import", reportFile.string(), "--page", "source", "--print-source",
          "sass", "--csv"};
}

std::vector<std::string> rawExportCommand(const std::string& ncu,
                                          const std::filesystem::path& reportFile) {
  return {ncu, "--import", reportFile.string(), "--page", "raw", "--csv"};
}

}  // namespace argus::backends::ncu
