// A region query: what a person or an agent asks Argus.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "argus/query/scope.h"
#include "argus/support/status.h"
#include "argus/trace/options.h"

namespace argus::query {

/// program + kernel + region + scope + signals. The same shape comes from CLI flags, a JSON
/// file, the Python client and the agent server.
struct Query {
  std::string program;  ///< Program spec file (argus.yaml) or a .cu/.ptx target.
  std::string kernel;   ///< Kernel name (mangled or demangled); empty = the only kernel.
  std::string region;   ///< Region path (`main/body`) or region ID; a parent covers its subtree.
  Scope scope;
  std::vector<std::string> signals;
  std::string workspace;  ///< Workspace directory; empty = `.argus` beside the program.
  /// Async op sites to probe (op IDs from `argus ptx discover`); empty = every site in the
  /// region's subtree. Only `op_latency` uses it.
  std::vector<std::string> ops;
  /// Options for the trace variants' pass (lower_markers_to_trace), e.g. parted=record or
  /// time_base=clock64; only the keys trace::kTraceOptionNames lists.
  std::map<std::string, std::string> traceOptions;
  /// Regions derived into the program's PTX for this query (argus/ptx/derive.h): selectors
  /// (`loops,ops`) and a region file; empty: only the program's own.
  std::string derive;
  std::string regionsFile;
  friend bool operator==(const Query&, const Query&) = default;
};

/// Checks a trace option's key against trace::kTraceOptionNames (its value is checked by the
/// pass when the variant is built).
[[nodiscard]] Result<void> checkTraceOption(std::string_view key);

/// `KEY=VALUE` trace options as given to `flag` (`--trace-option`, `--pass-option`), each key
/// checked as checkTraceOption does and each value not empty; a later key replaces an earlier one.
[[nodiscard]] Result<std::map<std::string, std::string>> parseTraceOptions(
    const std::vector<std::string>& options, std::string_view flag);

/// JSON form: {"program", "kernel", "region", "scope" (text), "signals" [..], "workspace",
/// "ops" [..] (optional), "trace_options" {key: value} (optional), "derive" and "regions_file"
/// (optional strings)}.
[[nodiscard]] nlohmann::json toJson(const Query& query);
/// Parses the JSON form; errors name the field.
[[nodiscard]] Result<Query> queryFromJson(const nlohmann::json& json);
/// Splits a comma-separated signal list, trimming blanks and rejecting empty names.
[[nodiscard]] Result<std::vector<std::string>> parseSignalList(std::string_view text);

}  // namespace argus::query
