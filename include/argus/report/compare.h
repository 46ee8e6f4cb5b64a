// `argus compare`'s text: per region, A's and B's medians, the change and its interval, and
// whether it is within noise (from the argus.compare/1 document, argus/session/compare.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace argus::report {

[[nodiscard]] std::string compareText(const nlohmann::json& document);

}  // namespace argus::report
