// Strongly typed workspace ids and their printed form ("v12", "a34", "t56", "r7").
//
// Every row of the workspace database has an integer id; the letter in front says which table
// it lives in, so `argus ws show a34` cannot be confused with version 34. Distinct C++ types keep
// a VersionId from being passed where an ArtifactId is expected.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "argus/support/status.h"

namespace argus::workspace {

/// An id of one workspace table; Tag::prefix is the letter it prints with.
template <class Tag>
class Id {
 public:
  constexpr Id() = default;
  constexpr explicit Id(std::int64_t value) : value_(value) {}
  [[nodiscard]] constexpr std::int64_t value() const { return value_; }
  /// "v12", "a34", ...: the form `argus ws` prints and accepts.
  [[nodiscard]] std::string text() const { return Tag::prefix + std::to_string(value_); }
  friend constexpr auto operator<=>(const Id&, const Id&) = default;

 private:
  std::int64_t value_ = 0;
};

struct VersionTag {
  static constexpr char prefix = 'v';
};
struct ArtifactTag {
  static constexpr char prefix = 'a';
};
struct TaskTag {
  static constexpr char prefix = 't';
};
struct RunTag {
  static constexpr char prefix = 'r';
};

using VersionId = Id<VersionTag>;    ///< A program version or measurement variant ("v12").
using ArtifactId = Id<ArtifactTag>;  ///< A published, immutable artifact ("a34").
using TaskId = Id<TaskTag>;          ///< One attempt of a task ("t56").
using RunId = Id<RunTag>;            ///< One recorded measurement run of a task ("r7").

/// Which table an ObjectRef names; `any` for a bare number typed by a user.
enum class ObjectKind : char {
  version = 'v',
  artifact = 'a',
  task = 't',
  run = 'r',
  any = '?',
};

/// A parsed id as a user typed it.
struct ObjectRef {
  ObjectKind kind = ObjectKind::any;
  std::int64_t value = 0;
};

/// Parses "v12", "a34", "t56", "r7" (case-insensitive prefix) or a bare "42" (kind `any`).
/// The error says which forms are accepted.
[[nodiscard]] Result<ObjectRef> parseObjectRef(std::string_view text);

}  // namespace argus::workspace

template <class Tag>
struct std::hash<argus::workspace::Id<Tag>> {
  std::size_t operator()(const argus::workspace::Id<Tag>& id) const noexcept {
    return std::hash<std::int64_t>{}(id.value());
  }
};
