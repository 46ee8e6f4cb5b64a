// Numbers of JSON that another program wrote (traces, bundles, evidence). nlohmann's get<T>()
// converts any number to T with a cast: a float beyond T's range is undefined behaviour and a
// negative integer wraps into an unsigned T. These accept only a number T holds exactly (an
// integer, or a float with an integral value, within T's range) and otherwise throw
// nlohmann::json::out_of_range, a json::exception, which the readers already turn into an error
// that names the field.
#pragma once

#include <cmath>
#include <concepts>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace argus {

/// `value` as T; `what` names it in the error ("`grid`", "start_ns of line 3").
template <std::integral T>
[[nodiscard]] T exactInteger(const nlohmann::json& value, std::string_view what) {
  using Limits = std::numeric_limits<T>;
  auto refuse = [&](std::string_view why) -> T {
    throw nlohmann::json::out_of_range::create(
        406, std::string(what) + " " + std::string(why) + " (found " + value.dump() + ")", &value);
  };
  if (value.is_number_unsigned()) {
    const auto v = value.get<nlohmann::json::number_unsigned_t>();
    if (v > static_cast<std::make_unsigned_t<T>>(Limits::max())) return refuse("is too large");
    return static_cast<T>(v);
  }
  if (value.is_number_integer()) {
    const auto v = value.get<nlohmann::json::number_integer_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (v < 0) return refuse("must not be negative");
      if (static_cast<std::uint64_t>(v) > Limits::max()) return refuse("is too large");
    } else {
      if (v < Limits::min() || v > Limits::max()) return refuse("is out of range");
    }
    return static_cast<T>(v);
  }
  if (value.is_number_float()) {
    const double v = value.get<double>();
    // 2^digits is exact in a double; anything at or beyond it (or NaN) does not fit T.
    const double upper = std::ldexp(1.0, Limits::digits);
    const double lower = std::is_signed_v<T> ? -upper : 0.0;
    if (!(v >= lower && v < upper)) return refuse("is out of range");
    if (v != std::trunc(v)) return refuse("must be a whole number");
    return static_cast<T>(v);
  }
  return refuse("must be a number");
}

/// object[key] as T when present (and not null), else `fallback`.
template <std::integral T>
[[nodiscard]] T integerOr(const nlohmann::json& object, std::string_view key, T fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  return exactInteger<T>(*it, "`" + std::string(key) + "`");
}

}  // namespace argus
