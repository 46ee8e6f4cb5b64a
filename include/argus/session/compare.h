// `argus compare`: two program versions of a workspace queried alike, and their region timings
// compared (argus/synthesis/compare.h). The queries run (or are reused from the workspace) as
// `argus query --version` would run them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "argus/session/query.h"
#include "argus/support/status.h"
#include "argus/synthesis/compare.h"

namespace argus::session {

struct CompareRequest {
  std::string workspace;
  std::string a, b;  ///< Version ids (v3).
  std::string kernel, region, scope;
  std::string signals = "duration";  ///< Only `duration` compares so far.
  std::string derive, regionsFile;   ///< As for a query: regions derived into both versions.
  std::string recipes;
  synthesis::CompareOptions options;
};

/// The `argus.compare/1` document: the two queries' versions and reports' provenance, and per
/// region the change of the median duration from A to B with its interval. Errors: a version
/// that does not exist, a signal that cannot be compared, a side whose duration was not collected
/// (with the reason, e.g. no GPU here).
[[nodiscard]] Result<nlohmann::json> compareVersions(const CompareRequest& request,
                                                     const RunSettings& settings);

}  // namespace argus::session
