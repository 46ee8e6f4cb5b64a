// Typed pass options parsed from a declared table (MLIR's Pass::Option): each pass has a struct
// of typed fields and binds every declared row (passes::OptionInfo, argus/passes/options.h) to
// one of them; parseOptions reads TransformOptions::config once, applying each row's default,
// refusing a bad value with "<pass>: option <name> is <value>; use <allowed values or type>" and
// a missing required one with "<pass>: option `<name>` (<type>) is required". Keys the table does
// not name are left alone: a recipe's passes share one task config.
#pragma once

#include <algorithm>
#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/passes/options.h"
#include "argus/support/status.h"

namespace argus::passes {

/// Why a value was refused, without the pass name ("option cta is -1; use a linear CTA id").
using OptionCheck = std::expected<void, std::string>;

/// One declared option bound to a field of `Options`.
template <class Options>
struct OptionBinding {
  const OptionInfo* info = nullptr;
  /// Sets the field from a value present in the config (or the default); a wrong type or value is
  /// refused.
  std::function<OptionCheck(const nlohmann::json& value, Options& options)> set;
};

/// `"a" or "b"`, `"a", "b" or "c"`: a choice's values as its error lists them.
inline std::string listChoices(std::span<const std::string_view> choices) {
  std::string listed;
  for (size_t i = 0; i < choices.size(); ++i)
    listed += fmt::format("{}\"{}\"",
                          i == 0                    ? ""
                          : i + 1 == choices.size() ? " or "
                                                    : ", ",
                          choices[i]);
  return listed;
}

/// "option <name> is <value>; use <type or allowed values>".
inline std::string badValue(const OptionInfo& info, const nlohmann::json& value) {
  return fmt::format("option {} is {}; use {}", info.name, value.dump(),
                     info.type == "choice" ? listChoices(info.allowed) : std::string(info.type));
}

/// "option `<name>` (<type>) is required".
inline std::string missingValue(const OptionInfo& info) {
  return fmt::format("option `{}` ({}) is required", info.name, info.type);
}

/// A choice, into an enum whose enumerators follow info.allowed's order (0, 1, ...) or into the
/// text itself.
template <class Options, class T>
OptionBinding<Options> bindChoice(const OptionInfo& info, T Options::*field) {
  return {&info, [&info, field](const nlohmann::json& v, Options& o) -> OptionCheck {
            if (v.is_string()) {
              const auto at = std::ranges::find(info.allowed, v.get<std::string>());
              if (at != info.allowed.end()) {
                if constexpr (std::is_enum_v<T>) {
                  o.*field = static_cast<T>(at - info.allowed.begin());
                } else {
                  o.*field = T(*at);
                }
                return {};
              }
            }
            return std::unexpected(badValue(info, v));
          }};
}

/// The name of a choice's enum value (the inverse of bindChoice).
template <class T>
requires std::is_enum_v<T> std::string_view choiceName(const OptionInfo& info, T value) {
  return info.allowed[static_cast<size_t>(value)];
}

/// A string (required ones are refused as missing when they are not strings).
template <class Options>
OptionBinding<Options> bindString(const OptionInfo& info, std::string Options::*field) {
  return {&info, [&info, field](const nlohmann::json& v, Options& o) -> OptionCheck {
            if (!v.is_string())
              return std::unexpected(info.required ? missingValue(info) : badValue(info, v));
            o.*field = v.get<std::string>();
            return {};
          }};
}

/// An integer in [lo, hi] into an integer or optional integer field. A wrong type is refused as
/// missing for a required option; a value outside the range with `outOfRange` when given
/// ("option iteration is 5000000000; <outOfRange>"), else as a bad value.
template <class Options, class T>
OptionBinding<Options> bindInteger(const OptionInfo& info, T Options::*field, int64_t lo,
                                   int64_t hi, std::string_view outOfRange = {}) {
  return {&info,
          [&info, field, lo, hi, outOfRange](const nlohmann::json& v, Options& o) -> OptionCheck {
            if (!v.is_number_integer())
              return std::unexpected(info.required ? missingValue(info) : badValue(info, v));
            const int64_t n = v.get<int64_t>();
            if (n < lo || n > hi) {
              if (outOfRange.empty()) return std::unexpected(badValue(info, v));
              return std::unexpected(fmt::format("option {} is {}; {}", info.name, n, outOfRange));
            }
            if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
              o.*field = n;
            } else {
              o.*field = static_cast<T>(n);
            }
            return {};
          }};
}

/// A value of another shape, read by `read` (which refuses it by returning false).
template <class Options>
OptionBinding<Options> bindCustom(const OptionInfo& info,
                                  std::function<bool(const nlohmann::json&, Options&)> read) {
  return {&info, [&info, read](const nlohmann::json& v, Options& o) -> OptionCheck {
            if (!read(v, o)) return std::unexpected(badValue(info, v));
            return {};
          }};
}

/// The config's keys that a table names (for options whose meaning depends on whether another
/// was given, such as the trace pass's implied record layout).
using GivenOptions = std::set<std::string, std::less<>>;

/// Parses `config` into `Options`: each bound row's value, or its default, through its binding,
/// in table order; then `resolve(options, given)` for the rules between options. A config that is
/// not an object counts as empty. Errors are "passes" errors prefixed with `pass`.
template <class Options, class Resolve>
Result<Options> parseOptions(std::string_view pass, std::span<const OptionBinding<Options>> table,
                             const nlohmann::json& config, Resolve resolve) {
  Options options{};
  GivenOptions given;
  const auto refuse = [&](const std::string& why) {
    return fail("passes", fmt::format("{}: {}", pass, why));
  };
  for (const OptionBinding<Options>& row : table) {
    const OptionInfo& info = *row.info;
    const nlohmann::json* value = nullptr;
    nlohmann::json fallback;
    if (config.is_object()) {
      if (auto it = config.find(info.name); it != config.end()) value = &*it;
    }
    if (value != nullptr) {
      given.insert(std::string(info.name));
    } else if (info.required) {
      return refuse(missingValue(info));
    } else if (!info.defaultValue.empty()) {
      fallback = nlohmann::json::parse(info.defaultValue);
      value = &fallback;
    }
    if (value == nullptr) continue;
    if (auto ok = row.set(*value, options); !ok) return refuse(ok.error());
  }
  if (auto ok = resolve(options, given); !ok) return refuse(ok.error());
  return options;
}

}  // namespace argus::passes
