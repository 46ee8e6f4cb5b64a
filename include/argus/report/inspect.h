// What the inspection verbs show (`argus regions`, `argus ptx discover`, `argus pcmap`): their
// models, filled by the session (argus/session/inspect.h), and their JSON and text renderers.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/analysis/discover.h"
#include "argus/ptx/regions.h"
#include "argus/sass/pcmap.h"

namespace argus::report {

/// The region tree of every function of one file.
struct RegionTree {
  std::string source;          ///< The target as given.
  std::string representation;  ///< "ptx", or "ttgir" (lines and operations are TTGIR's).
  std::vector<ptx::FunctionRegions> functions;
};

/// The tree as argus.regions/1 JSON.
[[nodiscard]] nlohmann::ordered_json regionsJson(const RegionTree& tree);

/// The tree as text: `out` for stdout, and one line per region warning for stderr.
struct RegionsText {
  std::string out;
  std::vector<std::string> warnings;
};
[[nodiscard]] RegionsText regionsText(const RegionTree& tree);

/// Discovery's async op sites as JSON (analysis::toJson: sites with their completion conditions).
[[nodiscard]] nlohmann::json opSitesJson(const std::vector<analysis::OpSite>& sites);

/// Discovery's async op sites as a table (op id, kind, line, region, completion) and a count.
[[nodiscard]] std::string opSitesTable(const std::vector<analysis::OpSite>& sites);

/// The static PC-to-region map of every kernel of a target.
struct PcMap {
  std::string target;
  /// Whether painting changed no SASS, so that the map holds for the reference build too.
  bool paintedEqualsReference = false;
  std::string mismatch;  ///< Why not, when it does not.
  std::vector<sass::PcEntry> entries;
  /// Static SASS instructions per kernel and region, and per kernel and source file.
  std::map<std::string, std::map<std::string, std::size_t>> perRegion, perFile;
};

/// The map as argus.pcmap/1 JSON.
[[nodiscard]] nlohmann::ordered_json pcmapJson(const PcMap& map);

/// The map as text: every entry (unless `summary`), then the per-region and per-file counts.
[[nodiscard]] std::string pcmapText(const PcMap& map, bool summary);

}  // namespace argus::report
