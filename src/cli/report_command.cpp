// `argus report REF`: a report the workspace kept (every `argus query` keeps the one it prints),
// shown again as text, as JSON or as an HTML page, without asking the query again.
#include <filesystem>
#include <iostream>
#include <memory>

#include "argus/report/html.h"
#include "argus/session/workspace_ops.h"
#include "commands.h"

namespace argus::cli {
namespace {

struct ReportOptions {
  std::string ref = "last";
  std::string workspace = ".argus";
  bool json = false;
  std::string htmlOut;
};

int runReport(const ReportOptions& o) {
  if (auto ok = checkOutputFolder("report", "--html", o.htmlOut); !ok)
    return reportError(ok.error());
  auto stored = session::findReport(o.workspace, o.ref);
  if (!stored) return reportError(stored.error());
  const auto document = report::Json::parse(stored->json, nullptr, false);
  if (document.is_discarded())
    return reportError(fail("report", "report " + stored->id + " in " + o.workspace +
                                          " is not JSON; `argus ws check` verifies the "
                                          "workspace")
                           .error());
  if (o.json)
    std::cout << document.dump(2) << "\n";
  else if (o.htmlOut.empty())
    std::cout << stored->text;
  if (!o.htmlOut.empty()) {
    if (auto ok = report::writeHtml(document, std::nullopt, o.htmlOut); !ok)
      return reportError(ok.error());
    std::cerr << "argus: report: wrote " << o.htmlOut << " (report " << stored->id << " of "
              << stored->version << ")\n";
  }
  return 0;
}

}  // namespace

std::vector<Command> addReportCommands(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  auto* verb = app.add_subcommand(
      "report",
      "Show a report the workspace kept: every `argus query` keeps the report it prints, with\n"
      "its program version. REF is the report's artifact (a57, named at the end of the query's\n"
      "progress lines), a program version (v3: its latest report) or `last` (the default).\n"
      "Example: argus report last --workspace examples/tma_gemm/.argus --html report.html");
  verb->add_option("REF", o->ref, "a57 | v3 | last");
  verb->add_option("--workspace", o->workspace, "Workspace directory (default .argus)");
  auto* json = verb->add_flag("--json", o->json, "The report as JSON (schema argus.report/1)");
  verb->add_option("--html", o->htmlOut,
                   "Write the report as one self-contained HTML page (python/argus/html.py, "
                   "python3 or $ARGUS_PYTHON); without --json nothing else is printed")
      ->excludes(json);
  return {Command{verb, [o] { return runReport(*o); }}};
}

}  // namespace argus::cli
