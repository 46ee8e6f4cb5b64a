// The static PC-to-region map as JSON and text (argus/report/inspect.h).
#include <filesystem>
#include <iterator>

#include <fmt/format.h>

#include "argus/program/program.h"
#include "argus/report/inspect.h"

namespace argus::report {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

json pcmapJson(const PcMap& map) {
  json all = json::array();
  for (const auto& e : map.entries) {
    all.push_back({{"kernel", e.function},
                   {"pc", e.pc},
                   {"opcode", e.opcode},
                   {"regions", e.regions},
                   {"source", {{"file", e.sourceFile}, {"line", e.sourceLine}}},
                   {"ptx", {{"function", e.ptxFunction}, {"opcode", e.ptxOpcode}}},
                   {"instruction", e.instruction}});
  }
  return json{{"schema", "argus.pcmap/1"},
              {"target", map.target},
              {"painted_sass_equals_reference", map.paintedEqualsReference},
              {"entries", all},
              {"static_instructions_per_region", map.perRegion},
              {"static_instructions_per_source_file", map.perFile}};
}

std::string pcmapText(const PcMap& map, bool summary) {
  std::string text;
  auto out = std::back_inserter(text);
  if (!summary) {
    fmt::format_to(out, "{:<28} {:>7}  {:<30} {:<32} {}\n", "kernel", "pc", "opcode", "regions",
                   "source");
    for (const auto& e : map.entries) {
      std::string regions;
      for (const auto& r : e.regions) regions += (regions.empty() ? "" : "|") + r;
      fmt::format_to(
          out, "{:<28} {:>#7x}  {:<30} {:<32} {}:{}\n", program::demangle(e.function).substr(0, 28),
          e.pc, e.opcode.substr(0, 30), regions.empty() ? "-" : regions,
          e.sourceFile.empty() ? "?" : fs::path(e.sourceFile).filename().string(), e.sourceLine);
    }
    fmt::format_to(out, "\n");
  }
  for (const auto& [function, counts] : map.perRegion) {
    fmt::format_to(out, "{}: static SASS instructions per region\n", program::demangle(function));
    for (const auto& [region, n] : counts) fmt::format_to(out, "  {:<40} {:>7}\n", region, n);
    fmt::format_to(out, "  per source file:\n");
    if (auto files = map.perFile.find(function); files != map.perFile.end())
      for (const auto& [file, n] : files->second) fmt::format_to(out, "  {:<40} {:>7}\n", file, n);
  }
  return text;
}

}  // namespace argus::report
