// The HTML form of a query's report: one self-contained page (no network, no script at view
// time) with the region tree and its durations, attributed metrics with their ambiguity, probe
// latencies per iteration, a timeline per SM and warp, and every number's qualification and
// provenance. The page is drawn by the project's renderer, python/argus/html.py (`python -m
// argus.html`, standard library only), which the Python client and the MCP server share; this
// writes the report's JSON for it and runs it.
#pragma once

#include <filesystem>
#include <optional>

#include "argus/report/report.h"
#include "argus/support/status.h"

namespace argus::report {

/// Writes `report` as an HTML page to `out`, with the query's Chrome timeline (`argus query
/// --chrome-trace`'s file) when one is given and exists. The renderer runs under $ARGUS_PYTHON,
/// else python3 from PATH; the error says what failed and how to render by hand.
[[nodiscard]] Result<void> writeHtml(const QueryReport& report,
                                     const std::optional<std::filesystem::path>& timeline,
                                     const std::filesystem::path& out);
/// The same from a report's argus.report/1 JSON (a report the workspace kept).
[[nodiscard]] Result<void> writeHtml(const Json& document,
                                     const std::optional<std::filesystem::path>& timeline,
                                     const std::filesystem::path& out);

}  // namespace argus::report
