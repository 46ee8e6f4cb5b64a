// Shared by the fuzz targets. A target's entry point takes arbitrary bytes; every Argus reader
// must answer them with a value or an error, never a crash, a hang or undefined behaviour.
// `require` states a property of the answer (a round trip that must hold): a failed one aborts,
// which libFuzzer reports as a crash and the replay test as a failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace argus::fuzz {

inline std::string_view text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz property failed: %s\n", what);
  std::abort();
}

inline void require(bool holds, const char* what) {
  if (!holds) fail(what);
}

/// Inputs above this size are skipped: the readers' own size limits are tested by unit tests,
/// and the fuzzer's time is better spent on structure than on length.
inline constexpr size_t kMaxInput = 64 * 1024;

}  // namespace argus::fuzz
