// PTX text -> IR.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "argus/ptx/ir.h"
#include "argus/support/status.h"

namespace argus::ptx {

/// Parses a whole PTX module as nvcc 13 and Triton emit it (sm_90a included).
/// On malformed input returns an Error whose message is
/// `FILE:LINE:COL: what was expected`, never crashes. [thread-safe]
[[nodiscard]] Result<Module> parseModule(std::string_view text, std::string_view fileName);

/// A PTX integer literal's value: decimal, 0x hexadecimal, 0b binary or leading-0 octal, with an
/// optional `U` suffix; nothing for other text. [thread-safe]
[[nodiscard]] std::optional<uint64_t> parseUnsigned(std::string_view text);

/// parseUnsigned's literal with an optional `-` or `+`, as a 64-bit two's-complement value
/// (0xFFFFFFFFFFFFFFFF is -1). [thread-safe]
[[nodiscard]] std::optional<int64_t> parseSigned(std::string_view text);

}  // namespace argus::ptx
