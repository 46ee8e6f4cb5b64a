// A plan as the fronts show it: the planner's own printers (text with the explanation of every
// separation, Graphviz DOT, JSON that parses back to the same plan), so that a front renders
// plans and reports through one module.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "argus/planner/planner.h"

namespace argus::report {

/// The plan as text; with `explain`, why each pair of collections runs separately.
[[nodiscard]] inline std::string planText(const planner::QueryPlan& plan, bool explain) {
  return planner::toText(plan, explain);
}

/// The plan as JSON (schema argus_query_plan 1), which parses back to the same plan.
[[nodiscard]] inline nlohmann::json planJson(const planner::QueryPlan& plan) {
  return planner::toJson(plan);
}

/// The task graph as Graphviz DOT.
[[nodiscard]] inline std::string planDot(const planner::QueryPlan& plan) {
  return plan.plan.toDot();
}

}  // namespace argus::report
