// The `argus` command line: one subcommand per verb (docs/architecture.md, "Interface names").
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "Argus measures GPU kernels around semantic regions marked with ARGUS_REGION_* in\n"
      "CUDA C++ (include/argus/region.cuh). Every verb takes --json.\n\n"
      "Examples:\n"
      "  argus regions examples/nested_regions/kernel.cu     region tree of each kernel\n"
      "  argus ptx print kernel.ptx -o roundtrip.ptx          parse and print PTX back\n",
      "argus"};
  app.set_version_flag("--version", std::string("argus ") + ARGUS_VERSION);
  app.require_subcommand(1);

  std::vector<argus::cli::Command> commands;
  for (auto&& add :
       {argus::cli::addRegionsCommands, argus::cli::addPtxCommands, argus::cli::addRecipesCommands,
        argus::cli::addPlanCommands, argus::cli::addQueryCommands, argus::cli::addBuildCommands,
        argus::cli::addPcmapCommands, argus::cli::addWorkspaceCommands,
        argus::cli::addTraceCommands, argus::cli::addCompareCommands,
        argus::cli::addReportCommands})
    for (auto& command : add(app)) commands.push_back(std::move(command));

  CLI11_PARSE(app, argc, argv);
  for (const auto& command : commands)
    if (command.verb->parsed()) return command.run();
  return 0;
}
