// Content hashes (XXH3-128) and task memo keys.
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "argus/support/status.h"

namespace argus::workspace {

/// A 128-bit XXH3 content hash. Prints as 32 lower-case hex digits, most significant first
/// (the same digits `xxhsum -H2` prints).
struct ContentHash {
  std::uint64_t high = 0;
  std::uint64_t low = 0;

  /// 32 lower-case hex digits.
  [[nodiscard]] std::string hex() const;
  /// Parses 32 hex digits (either case); the error quotes the text.
  [[nodiscard]] static Result<ContentHash> fromHex(std::string_view text);
  friend constexpr auto operator<=>(const ContentHash&, const ContentHash&) = default;
};

/// XXH3-128 of the bytes. [thread-safe]
[[nodiscard]] ContentHash hashBytes(std::string_view bytes);

/// The canonical text of a JSON value: object keys sorted, no whitespace, numbers in nlohmann's
/// shortest round-trip form (so 1 and 1.0 stay different). Equal JSON values give equal text.
[[nodiscard]] std::string canonicalJson(const nlohmann::json& value);

/// Parses JSON text and returns canonicalJson of it; the error quotes the parser's complaint.
[[nodiscard]] Result<std::string> canonicalJson(std::string_view text);

/// The memo key of a task: a hash of a length-prefixed serialization of the task type name,
/// the canonical descriptor and the input content hashes in the given order (inputs are
/// positional). Stable across runs, machines and JSON key order; any change of type, descriptor
/// field or input changes it. [thread-safe]
[[nodiscard]] ContentHash memoKey(std::string_view taskType, const nlohmann::json& descriptor,
                                  std::span<const ContentHash> inputHashes);

/// memoKey for descriptor JSON text (parsed and canonicalized first).
[[nodiscard]] Result<ContentHash> memoKey(std::string_view taskType,
                                          std::string_view descriptorJson,
                                          std::span<const ContentHash> inputHashes);

}  // namespace argus::workspace
