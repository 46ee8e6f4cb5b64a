// `argus compare A B`: two program versions queried alike, their region durations compared.
#include <iostream>
#include <memory>

#include "argus/report/compare.h"
#include "argus/session/compare.h"
#include "commands.h"

namespace argus::cli {
namespace {

struct CompareOptions {
  session::CompareRequest request;
  bool json = false;
};

int runCompare(const CompareOptions& o) {
  session::RunSettings settings;
  settings.progress = !o.json;
  auto doc = session::compareVersions(o.request, settings);
  if (!doc) return reportError(doc.error());
  if (o.json)
    std::cout << doc->dump(2) << "\n";
  else
    std::cout << report::compareText(*doc);
  return 0;
}

}  // namespace

std::vector<Command> addCompareCommands(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  auto* verb = app.add_subcommand(
      "compare",
      "Compare two program versions of a workspace region by region: both are queried alike\n"
      "(results reused from the workspace when they exist), and per region the median\n"
      "occurrence duration of B is set against A's with a bootstrap interval; a change whose\n"
      "interval holds 0 is marked `within noise`. Example (v1 the baseline, v2 a fork):\n"
      "  argus compare v1 v2 --workspace .argus --region mainloop");
  verb->add_option("A", o->request.a, "The baseline version (v1)")->required();
  verb->add_option("B", o->request.b, "The candidate version (v2)")->required();
  verb->add_option("--workspace", o->request.workspace, "The workspace holding both")->required();
  verb->add_option("--kernel", o->request.kernel, "Kernel name (default: the only kernel)");
  verb->add_option("--region", o->request.region, "Region path; covers its subtree");
  verb->add_option("--scope", o->request.scope, "Occurrences to compare, as for a query");
  verb->add_option("--signals", o->request.signals, "What to compare: duration (the default)")
      ->capture_default_str();
  verb->add_option("--derive", o->request.derive,
                   "Regions derived into both (docs/regions-file.md)");
  verb->add_option("--regions-file", o->request.regionsFile, "A region file for both");
  verb->add_option("--resamples", o->request.options.resamples, "Bootstrap resamples")
      ->capture_default_str();
  verb->add_option("--confidence", o->request.options.confidence, "Two-sided level of the interval")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 0.999));
  verb->add_flag("--json", o->json, "Machine-readable output (schema argus.compare/1)");
  return {Command{verb, [o] { return runCompare(*o); }}};
}

}  // namespace argus::cli
