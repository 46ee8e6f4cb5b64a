// Validation of report documents against the argus.report/1 JSON Schema, with valijson (the
// schema text is src/report/report.schema.json, compiled in by CMake as report_schema.inc).
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "argus/report/report.h"

namespace argus::report {
namespace {

// The schema's text as a raw string literal (generated from report.schema.json).
constexpr std::string_view kSchema =
#include "report_schema.inc"
    ;

}  // namespace

Result<void> validate(const Json& document) {
  // Parsed once: the schema is constant, and valijson's Schema is immutable after parsing.
  static const auto schema = [] {
    auto parsed = std::make_unique<valijson::Schema>();
    const nlohmann::json schemaJson = nlohmann::json::parse(kSchema);
    valijson::SchemaParser parser;
    parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(schemaJson), *parsed);
    return parsed;
  }();
  // valijson's adapter reads nlohmann::json; the report's ordered form converts losslessly.
  const nlohmann::json plain = nlohmann::json::parse(document.dump());
  valijson::Validator validator;
  valijson::ValidationResults results;
  if (validator.validate(*schema, valijson::adapters::NlohmannJsonAdapter(plain), &results))
    return {};
  // The deepest error names the place: valijson reports every enclosing schema that failed too.
  valijson::ValidationResults::Error error;
  std::string where = "/", rule = "invalid";
  std::size_t depth = 0;
  while (results.popError(error)) {
    if (error.context.size() < depth) continue;
    depth = error.context.size();
    where.clear();
    for (const auto& part : error.context)
      if (part != "<root>") where += part;
    rule = error.description;
  }
  return fail("report", fmt::format("the report does not follow argus.report/1 at {}: {} "
                                    "(src/report/report.schema.json)",
                                    where.empty() ? "/" : where, rule));
}

}  // namespace argus::report
