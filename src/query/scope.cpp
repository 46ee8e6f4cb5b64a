#include "argus/query/scope.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

namespace argus::query {
namespace {

constexpr std::string_view kNames[] = {"role", "warp", "warpgroup", "iter", "sm", "cta", "launch"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  return parts;
}

/// A decimal number: the value, or `std::nullopt` when `s` is not a non-negative integer;
/// UINT64_MAX stands for any value that does not fit (the caller says out of range).
std::optional<uint64_t> parseNumber(std::string_view s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(),
                                [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) return UINT64_MAX;
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

bool isName(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

std::string coordinateList() {
  std::string list;
  for (auto name : kNames) list += (list.empty() ? "" : ", ") + std::string(name);
  return list;
}

/// Sorts ranges and merges overlapping or adjacent ones.
std::vector<Range> normalize(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.lo < b.lo; });
  std::vector<Range> merged;
  for (const auto& r : ranges) {
    // r.lo >= 0, so `r.lo - 1` cannot overflow where `hi + 1` could.
    if (!merged.empty() && r.lo - 1 <= merged.back().hi)
      merged.back().hi = std::max(merged.back().hi, r.hi);
    else
      merged.push_back(r);
  }
  return merged;
}

}  // namespace

std::string_view coordinateName(Coordinate c) {
  return kNames[static_cast<size_t>(c)];
}

int64_t coordinateMax(Coordinate c) {
  // Trace records keep every coordinate in 32 bits; the iteration's top value means none.
  return c == Coordinate::Iteration ? int64_t{UINT32_MAX} - 1 : int64_t{UINT32_MAX};
}

std::optional<Coordinate> coordinateFromName(std::string_view name) {
  for (size_t i = 0; i < std::size(kNames); ++i)
    if (kNames[i] == name) return static_cast<Coordinate>(i);
  return std::nullopt;
}

bool Clause::contains(int64_t value) const {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const Range& r) { return r.lo <= value && value <= r.hi; });
}

bool Clause::contains(std::string_view name) const {
  return std::binary_search(names.begin(), names.end(), name);
}

const Clause* Scope::clause(Coordinate c) const {
  for (const auto& cl : clauses)
    if (cl.coordinate == c) return &cl;
  return nullptr;
}

std::vector<Coordinate> Scope::coordinates() const {
  std::vector<Coordinate> out;
  for (const auto& cl : clauses) out.push_back(cl.coordinate);
  return out;
}

std::string Scope::canonical() const {
  std::string text;
  for (const auto& cl : clauses) {
    if (!text.empty()) text += ',';
    text += coordinateName(cl.coordinate);
    text += '=';
    std::string values;
    for (const auto& name : cl.names) values += (values.empty() ? "" : "|") + name;
    for (const auto& r : cl.ranges) {
      if (!values.empty()) values += '|';
      values += r.lo == r.hi ? fmt::format("{}", r.lo) : fmt::format("{}..{}", r.lo, r.hi);
    }
    text += values;
  }
  return text;
}

Result<Scope> parseScope(std::string_view text) {
  Scope scope;
  text = trim(text);
  if (text.empty() || text == "all") return scope;
  for (std::string_view clauseText : split(text, ',')) {
    auto bad = [&](const std::string& why) {
      return fail("query", fmt::format("scope `{}`: clause `{}`: {}; scope syntax is "
                                       "`coord=a..b|c,...` over {}",
                                       text, clauseText, why, coordinateList()));
    };
    size_t eq = clauseText.find('=');
    if (eq == std::string_view::npos) return bad("expected `coordinate=values`");
    std::string_view name = trim(clauseText.substr(0, eq));
    auto coordinate = coordinateFromName(name);
    if (!coordinate) return bad(fmt::format("unknown coordinate `{}`", name));
    if (scope.clause(*coordinate) != nullptr)
      return bad(fmt::format("`{}` appears twice; join alternatives with `|`", name));
    Clause clause;
    clause.coordinate = *coordinate;
    for (std::string_view value : split(clauseText.substr(eq + 1), '|')) {
      if (value.empty()) return bad("empty value");
      if (*coordinate == Coordinate::Role) {
        if (!isName(value)) return bad(fmt::format("role `{}` is not a name", value));
        clause.names.emplace_back(value);
        continue;
      }
      size_t dots = value.find("..");
      std::string_view loText = dots == std::string_view::npos ? value : value.substr(0, dots);
      std::string_view hiText = dots == std::string_view::npos ? value : value.substr(dots + 2);
      auto lo = parseNumber(loText);
      auto hi = parseNumber(hiText);
      if (!lo || !hi)
        return bad(fmt::format("`{}` is not a non-negative integer or range `a..b`", value));
      const int64_t max = coordinateMax(*coordinate);
      for (auto [number, numberText] : {std::pair{*lo, loText}, std::pair{*hi, hiText}})
        if (number > static_cast<uint64_t>(max))
          return bad(fmt::format("`{}` is out of range: `{}` takes 0..{}{}", numberText, name, max,
                                 *coordinate == Coordinate::Iteration
                                     ? " (32-bit, the top value marks `no iteration`)"
                                     : " (a 32-bit value, as trace records keep it)"));
      if (*hi < *lo) return bad(fmt::format("range `{}` is empty (end before start)", value));
      clause.ranges.push_back(Range{static_cast<int64_t>(*lo), static_cast<int64_t>(*hi)});
    }
    std::sort(clause.names.begin(), clause.names.end());
    clause.names.erase(std::unique(clause.names.begin(), clause.names.end()), clause.names.end());
    clause.ranges = normalize(std::move(clause.ranges));
    scope.clauses.push_back(std::move(clause));
  }
  std::sort(scope.clauses.begin(), scope.clauses.end(),
            [](const Clause& a, const Clause& b) { return a.coordinate < b.coordinate; });
  return scope;
}

}  // namespace argus::query
