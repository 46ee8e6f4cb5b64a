// The scope and query parsers. A scope's canonical text must parse back to the same canonical
// text; a query's JSON form must read back to the same JSON.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/query/query.h"
#include "argus/query/scope.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace argus;
  if (size > fuzz::kMaxInput) return -1;
  auto text = fuzz::text(data, size);
  if (auto scope = query::parseScope(text)) {
    std::string canonical = scope->canonical();
    auto again = query::parseScope(canonical);
    fuzz::require(again.has_value(), "a canonical scope parses");
    fuzz::require(again->canonical() == canonical, "canonical scope text is a fixed point");
  }
  (void)query::parseSignalList(text);
  std::vector<std::string> options{std::string(text)};
  (void)query::parseTraceOptions(options, "--trace-option");
  auto json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_discarded()) {
    if (auto parsed = query::queryFromJson(json)) {
      nlohmann::json back = query::toJson(*parsed);
      auto again = query::queryFromJson(back);
      fuzz::require(again.has_value(), "a query's JSON form reads back");
      fuzz::require(query::toJson(*again) == back, "query JSON is a fixed point");
    }
  }
  return 0;
}
