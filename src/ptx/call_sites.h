// Internal to the PTX front end: the module's `.file` table, shared by sourcePositions and
// callSitePositions.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "argus/ptx/ir.h"

namespace argus::ptx {

/// `.file N "path"` directives: N -> path.
[[nodiscard]] std::map<uint32_t, std::string> fileTable(const Module& module);

}  // namespace argus::ptx
