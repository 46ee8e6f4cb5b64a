// A plan: the task DAG the planner produces and the runtime executes. It prints as text, DOT and
// JSON, and the JSON parses back to an equal plan.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/runtime/task.h"
#include "argus/support/status.h"

namespace argus::runtime {

/// Tasks in insertion order with unique ids. Not thread-safe; the scheduler copies it.
class Plan {
 public:
  /// Adds a task; fails on an empty or duplicate id. Upstream tasks may be added later.
  [[nodiscard]] Result<void> add(TaskDescriptor task);
  /// Checks that every upstream id exists, every input names a declared output of its producer,
  /// and that there is no cycle. The error names the offending task.
  [[nodiscard]] Result<void> validate() const;

  [[nodiscard]] const std::vector<TaskDescriptor>& tasks() const { return tasks_; }
  [[nodiscard]] const TaskDescriptor* find(const std::string& id) const;
  [[nodiscard]] std::size_t size() const { return tasks_.size(); }

  /// {"argus_plan": 1, "tasks": [descriptor...]}.
  [[nodiscard]] nlohmann::json toJson() const;
  /// Inverse of toJson (validation is separate).
  [[nodiscard]] static Result<Plan> fromJson(const nlohmann::json& json);
  /// Graphviz DOT: one node per task (shape by type, GPU tasks filled), one edge per input or
  /// dependency, labelled with the input name.
  [[nodiscard]] std::string toDot() const;
  /// One line per task: `id [type] executor <- inputs`.
  [[nodiscard]] std::string toText() const;

  friend bool operator==(const Plan& a, const Plan& b) { return a.tasks_ == b.tasks_; }

 private:
  std::vector<TaskDescriptor> tasks_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace argus::runtime
