// Scopes: predicates that select dynamic executions (occurrences) of a region.
//
// Text form (docs/architecture.md, "Interface names"): clauses `coordinate=values` joined by `,`;
// values are an inclusive range `a..b`, a single value, or alternatives `a|b|c` (ranges allowed
// among them). Roles take names, every other coordinate takes non-negative integers:
//   role=producer,iter=0..7,sm=0..15      warp=0|4|8..11      launch=2
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "argus/support/status.h"

namespace argus::query {

/// The scope coordinates every occurrence carries.
enum class Coordinate : uint8_t { Role, Warp, Warpgroup, Iteration, Sm, Cta, Launch };

/// All coordinates, in canonical order.
inline constexpr Coordinate kAllCoordinates[] = {
    Coordinate::Role, Coordinate::Warp, Coordinate::Warpgroup, Coordinate::Iteration,
    Coordinate::Sm,   Coordinate::Cta,  Coordinate::Launch};

/// `role`, `warp`, `warpgroup`, `iter`, `sm`, `cta`, `launch`.
[[nodiscard]] std::string_view coordinateName(Coordinate c);
/// The largest value an integer coordinate takes (0 is the smallest): 2^32-1, and 2^32-2 for
/// `iter` (trace records keep 32 bits; the top iteration value marks "none"). parseScope
/// rejects larger numbers.
[[nodiscard]] int64_t coordinateMax(Coordinate c);
/// Inverse of coordinateName; nullopt for an unknown name.
[[nodiscard]] std::optional<Coordinate> coordinateFromName(std::string_view name);

/// Inclusive integer range.
struct Range {
  int64_t lo = 0;
  int64_t hi = 0;
  friend bool operator==(const Range&, const Range&) = default;
};

/// One `coordinate=values` clause. Integer coordinates use `ranges` (sorted, merged);
/// `role` uses `names` (sorted, unique).
struct Clause {
  Coordinate coordinate = Coordinate::Role;
  std::vector<Range> ranges;
  std::vector<std::string> names;
  friend bool operator==(const Clause&, const Clause&) = default;

  /// Whether an occurrence with this integer value (or role name) is selected.
  [[nodiscard]] bool contains(int64_t value) const;
  [[nodiscard]] bool contains(std::string_view name) const;
};

/// A conjunction of clauses, at most one per coordinate, kept in canonical order, so that two
/// scopes that select the same occurrences print (and hash) the same.
struct Scope {
  std::vector<Clause> clauses;
  friend bool operator==(const Scope&, const Scope&) = default;

  /// True when the scope selects every occurrence.
  [[nodiscard]] bool all() const { return clauses.empty(); }
  /// The clause for a coordinate, or nullptr when it is unrestricted.
  [[nodiscard]] const Clause* clause(Coordinate c) const;
  /// Canonical text (empty for `all`); parseScope(canonical()) == *this.
  [[nodiscard]] std::string canonical() const;
  /// Coordinates the scope restricts.
  [[nodiscard]] std::vector<Coordinate> coordinates() const;
};

/// Parses the text form. Errors name the offending clause and list the valid coordinates.
[[nodiscard]] Result<Scope> parseScope(std::string_view text);

}  // namespace argus::query
