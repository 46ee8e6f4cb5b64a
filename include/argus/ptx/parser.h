// PTX text -> IR.
#pragma once

#include <string_view>

#include "argus/ptx/ir.h"
#include "argus/support/status.h"

namespace argus::ptx {

/// Parses a whole PTX module as nvcc 13 and Triton emit it (sm_90a included).
/// On malformed input returns an Error whose message is
/// `FILE:LINE:COL: what was expected`, never crashes. [thread-safe]
[[nodiscard]] Result<Module> parseModule(std::string_view text, std::string_view fileName);

}  // namespace argus::ptx
