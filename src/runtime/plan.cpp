#include "argus/runtime/plan.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

namespace argus::runtime {

using nlohmann::json;

Result<void> Plan::add(TaskDescriptor task) {
  if (task.id.empty()) return fail("plan", "a task needs a non-empty id");
  if (index_.contains(task.id))
    return fail("plan", fmt::format("task id `{}` is used twice; ids must be unique", task.id));
  index_.emplace(task.id, tasks_.size());
  tasks_.push_back(std::move(task));
  return {};
}

const TaskDescriptor* Plan::find(const std::string& id) const {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &tasks_[it->second];
}

Result<void> Plan::validate() const {
  for (const auto& t : tasks_) {
    for (const auto& in : t.inputs) {
      const TaskDescriptor* producer = find(in.task);
      if (producer == nullptr)
        return fail("plan", fmt::format("task `{}`: input `{}` refers to unknown task `{}`", t.id,
                                        in.name, in.task));
      if (std::find(producer->outputs.begin(), producer->outputs.end(), in.output) ==
          producer->outputs.end())
        return fail("plan", fmt::format("task `{}`: input `{}` wants output `{}` of `{}`, which "
                                        "declares no such output",
                                        t.id, in.name, in.output, in.task));
    }
    for (const auto& dep : t.dependencies)
      if (find(dep) == nullptr)
        return fail("plan", fmt::format("task `{}` depends on unknown task `{}`", t.id, dep));
  }
  // Iterative three-colour DFS: plans can be deep chains.
  enum Colour : unsigned char { White, Grey, Black };
  std::vector<Colour> colour(tasks_.size(), White);
  std::vector<std::vector<std::size_t>> up(tasks_.size());
  for (std::size_t i = 0; i < tasks_.size(); ++i)
    for (const auto& id : tasks_[i].upstream()) up[i].push_back(index_.at(id));
  for (std::size_t root = 0; root < tasks_.size(); ++root) {
    if (colour[root] != White) continue;
    std::vector<std::pair<std::size_t, std::size_t>> stack{{root, 0}};
    colour[root] = Grey;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next == up[node].size()) {
        colour[node] = Black;
        stack.pop_back();
        continue;
      }
      std::size_t u = up[node][next++];
      if (colour[u] == Grey)
        return fail("plan", fmt::format("tasks `{}` and `{}` are on a dependency cycle",
                                        tasks_[node].id, tasks_[u].id));
      if (colour[u] == White) {
        colour[u] = Grey;
        stack.emplace_back(u, 0);
      }
    }
  }
  return {};
}

json Plan::toJson() const {
  json tasks = json::array();
  for (const auto& t : tasks_) tasks.push_back(runtime::toJson(t));
  return json{{"argus_plan", 1}, {"tasks", std::move(tasks)}};
}

Result<Plan> Plan::fromJson(const json& j) {
  if (!j.is_object() || !j.contains("tasks") || !j["tasks"].is_array())
    return fail("plan", "a plan must be a JSON object with a `tasks` list");
  if (j.value("argus_plan", 1) != 1)
    return fail("plan", "unsupported plan version; this Argus reads `argus_plan: 1`");
  Plan plan;
  for (const auto& tj : j["tasks"]) {
    auto t = taskFromJson(tj);
    if (!t) return std::unexpected(t.error());
    if (auto r = plan.add(std::move(*t)); !r) return std::unexpected(r.error());
  }
  return plan;
}

namespace {
std::string dotEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::string Plan::toDot() const {
  std::string out = "digraph plan {\n  rankdir=LR;\n  node [fontname=\"monospace\"];\n";
  for (const auto& t : tasks_) {
    const char* shape = "box";
    switch (t.type) {
      case TaskType::Transform:
        shape = "box";
        break;
      case TaskType::Collect:
        shape = "box3d";
        break;
      case TaskType::Synthesize:
        shape = "ellipse";
        break;
      case TaskType::Control:
        shape = "diamond";
        break;
    }
    std::string label =
        fmt::format("{}\\n[{}] {}", dotEscape(t.id), toString(t.type), dotEscape(t.executor));
    if (t.isolation.exclusiveDevice) label += "\\nexclusive";
    if (t.isolation.gpuTurns) label += "\\nGPU turns";
    fmt::format_to(std::back_inserter(out), "  \"{}\" [shape={}, label=\"{}\"{}];\n",
                   dotEscape(t.id), shape, label,
                   t.needs(Requirement::Gpu) ? ", style=filled, fillcolor=\"#b3d9ff\"" : "");
  }
  for (const auto& t : tasks_) {
    for (const auto& in : t.inputs)
      fmt::format_to(std::back_inserter(out), "  \"{}\" -> \"{}\" [label=\"{}\"];\n",
                     dotEscape(in.task), dotEscape(t.id), dotEscape(in.name));
    for (const auto& dep : t.dependencies)
      fmt::format_to(std::back_inserter(out), "  \"{}\" -> \"{}\" [style=dashed];\n",
                     dotEscape(dep), dotEscape(t.id));
  }
  out += "}\n";
  return out;
}

std::string Plan::toText() const {
  std::string out;
  for (const auto& t : tasks_) {
    fmt::format_to(std::back_inserter(out), "{} [{}] {}", t.id, toString(t.type), t.executor);
    if (!t.inputs.empty() || !t.dependencies.empty()) {
      out += " <-";
      for (const auto& in : t.inputs)
        fmt::format_to(std::back_inserter(out), " {}={}.{}", in.name, in.task, in.output);
      for (const auto& d : t.dependencies) fmt::format_to(std::back_inserter(out), " {}", d);
    }
    if (t.isolation.exclusiveDevice) out += " (exclusive)";
    if (t.isolation.gpuTurns) out += " (GPU turns)";
    if (t.gpus == 0) out += " (all GPUs)";
    if (t.gpus > 1) fmt::format_to(std::back_inserter(out), " ({} GPUs)", t.gpus);
    out += '\n';
  }
  return out;
}

}  // namespace argus::runtime
