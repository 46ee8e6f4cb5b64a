#include "argus/query/query.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace argus::query {

nlohmann::json toJson(const Query& query) {
  nlohmann::json j{{"program", query.program}, {"kernel", query.kernel},
                   {"region", query.region},   {"scope", query.scope.canonical()},
                   {"signals", query.signals}, {"workspace", query.workspace}};
  if (!query.ops.empty()) j["ops"] = query.ops;
  if (!query.traceOptions.empty()) j["trace_options"] = query.traceOptions;
  if (!query.derive.empty()) j["derive"] = query.derive;
  if (!query.regionsFile.empty()) j["regions_file"] = query.regionsFile;
  return j;
}

Result<void> checkTraceOption(std::string_view key) {
  if (std::ranges::find(trace::kTraceOptionNames, key) != trace::kTraceOptionNames.end()) return {};
  return fail("query", fmt::format("unknown trace option `{}`; the trace options are {} "
                                   "(docs/tracing.md)",
                                   key, fmt::join(trace::kTraceOptionNames, ", ")));
}

Result<std::map<std::string, std::string>> parseTraceOptions(
    const std::vector<std::string>& options, std::string_view flag) {
  std::map<std::string, std::string> out;
  for (const std::string& option : options) {
    const size_t eq = option.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == option.size())
      return fail("query",
                  fmt::format("{} `{}` must be KEY=VALUE, e.g. parted=record", flag, option));
    const std::string key = option.substr(0, eq);
    if (auto known = checkTraceOption(key); !known)
      return fail("query", fmt::format("{} `{}`: {}", flag, option, known.error().message));
    out.insert_or_assign(key, option.substr(eq + 1));
  }
  return out;
}

Result<Query> queryFromJson(const nlohmann::json& json) {
  if (!json.is_object()) return fail("query", "a query must be a JSON object");
  static const char* known[] = {"program",   "kernel", "region",        "scope",  "signals",
                                "workspace", "ops",    "trace_options", "derive", "regions_file"};
  for (const auto& [key, value] : json.items()) {
    if (std::find_if(std::begin(known), std::end(known), [&](const char* k) { return key == k; }) ==
        std::end(known))
      return fail("query", fmt::format("unknown field `{}`; a query has program, kernel, region, "
                                       "scope, signals, workspace, ops, trace_options, derive "
                                       "and regions_file",
                                       key));
  }
  Query query;
  auto text = [&](const char* field, std::string& out, bool required) -> Result<void> {
    if (!json.contains(field)) {
      if (required) return fail("query", fmt::format("field `{}` is required", field));
      return {};
    }
    if (!json[field].is_string())
      return fail("query", fmt::format("field `{}` must be a string", field));
    out = json[field].get<std::string>();
    return {};
  };
  for (auto ok :
       {text("program", query.program, true), text("kernel", query.kernel, false),
        text("region", query.region, true), text("workspace", query.workspace, false),
        text("derive", query.derive, false), text("regions_file", query.regionsFile, false)})
    if (!ok) return std::unexpected(ok.error());
  std::string scopeText;
  if (auto ok = text("scope", scopeText, false); !ok) return std::unexpected(ok.error());
  auto scope = parseScope(scopeText);
  if (!scope) return std::unexpected(scope.error());
  query.scope = std::move(*scope);
  if (!json.contains("signals") || !json["signals"].is_array() || json["signals"].empty())
    return fail("query", "field `signals` must be a non-empty array of signal names");
  for (const auto& s : json["signals"]) {
    if (!s.is_string() || s.get<std::string>().empty())
      return fail("query", "every entry of `signals` must be a non-empty string");
    query.signals.push_back(s.get<std::string>());
  }
  if (json.contains("ops")) {
    if (!json["ops"].is_array())
      return fail("query",
                  "field `ops` must be an array of op IDs (`argus ptx discover` lists them)");
    for (const auto& op : json["ops"]) {
      if (!op.is_string() || op.get<std::string>().empty())
        return fail("query", "every entry of `ops` must be a non-empty op ID");
      query.ops.push_back(op.get<std::string>());
    }
  }
  if (json.contains("trace_options")) {
    if (!json["trace_options"].is_object())
      return fail("query",
                  "field `trace_options` must be an object of option names and values, "
                  "e.g. {\"parted\": \"record\"}");
    for (const auto& [key, value] : json["trace_options"].items()) {
      if (auto ok = checkTraceOption(key); !ok) return std::unexpected(ok.error());
      if (!value.is_string())
        return fail("query", fmt::format("trace option `{}` must be a string", key));
      query.traceOptions[key] = value.get<std::string>();
    }
  }
  return query;
}

Result<std::vector<std::string>> parseSignalList(std::string_view text) {
  std::vector<std::string> signals;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] != ',') continue;
    std::string_view s = text.substr(start, i - start);
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    if (s.empty()) return fail("query", fmt::format("signal list `{}` has an empty entry", text));
    signals.emplace_back(s);
    start = i + 1;
  }
  return signals;
}

}  // namespace argus::query
