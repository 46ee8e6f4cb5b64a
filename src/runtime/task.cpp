#include "argus/runtime/task.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <unordered_set>

#include <fmt/format.h>
#include "argus/workspace/hash.h"

namespace argus::runtime {
namespace {

using nlohmann::json;

constexpr std::array<std::pair<TaskType, std::string_view>, 4> kTaskTypes{{
    {TaskType::Transform, "transform"},
    {TaskType::Collect, "collect"},
    {TaskType::Synthesize, "synthesize"},
    {TaskType::Control, "control"},
}};

constexpr std::array<std::pair<Requirement, std::string_view>, 4> kRequirements{{
    {Requirement::Gpu, "gpu"},
    {Requirement::HardwareCounters, "hardware_counters"},
    {Requirement::BinaryPatching, "binary_patching"},
    {Requirement::SystemTracing, "system_tracing"},
}};

// Reads `key` from `obj` into `out` when present; the error names the field.
template <class T>
Result<void> field(const json& obj, const char* key, T& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  try {
    out = it->get<T>();
  } catch (const json::exception& e) {
    return fail("plan", fmt::format("task field `{}`: {}", key, e.what()));
  }
  return {};
}

}  // namespace

std::string_view toString(TaskType type) {
  for (auto [t, name] : kTaskTypes)
    if (t == type) return name;
  return "?";
}

Result<TaskType> parseTaskType(std::string_view text) {
  for (auto [t, name] : kTaskTypes)
    if (name == text) return t;
  return fail("plan", fmt::format("unknown task type `{}`; use transform, collect, synthesize or "
                                  "control",
                                  text));
}

std::string_view toString(Requirement requirement) {
  for (auto [r, name] : kRequirements)
    if (r == requirement) return name;
  return "?";
}

Result<Requirement> parseRequirement(std::string_view text) {
  for (auto [r, name] : kRequirements)
    if (name == text) return r;
  return fail("plan", fmt::format("unknown backend requirement `{}`; use gpu, hardware_counters, "
                                  "binary_patching or system_tracing",
                                  text));
}

bool TaskDescriptor::needs(Requirement r) const {
  return std::find(requirements.begin(), requirements.end(), r) != requirements.end();
}

std::vector<std::string> TaskDescriptor::upstream() const {
  std::vector<std::string> ids;
  auto addId = [&](const std::string& ref) {
    if (std::find(ids.begin(), ids.end(), ref) == ids.end()) ids.push_back(ref);
  };
  for (const auto& in : inputs) addId(in.task);
  for (const auto& dep : dependencies) addId(dep);
  return ids;
}

json toJson(const TaskDescriptor& task) {
  json inputs = json::array();
  for (const auto& in : task.inputs)
    inputs.push_back({{"name", in.name}, {"task", in.task}, {"output", in.output}});
  json requirements = json::array();
  for (auto r : task.requirements) requirements.push_back(toString(r));
  json out{
      {"id", task.id},
      {"type", toString(task.type)},
      {"executor", task.executor},
      {"program_version", task.programVersion},
      {"region", task.region},
      {"scope", task.scope},
      {"config", task.config},
      {"inputs", std::move(inputs)},
      {"dependencies", task.dependencies},
      {"sampling",
       {{"mode", task.sampling.mode},
        {"repetitions", task.sampling.repetitions},
        {"warmup", task.sampling.warmup},
        {"params", task.sampling.params}}},
      {"outputs", task.outputs},
      {"isolation",
       {{"exclusive_device", task.isolation.exclusiveDevice},
        {"group", task.isolation.group},
        {"incompatible_with", task.isolation.incompatibleWith}}},
      {"requirements", std::move(requirements)},
      {"timeout_s", task.timeoutSeconds ? json(*task.timeoutSeconds) : json(nullptr)},
  };
  // Only when it differs from one device, so that earlier plans' descriptors stay as they were.
  if (task.gpus != 1) out["gpus"] = task.gpus;
  if (task.isolation.gpuTurns) out["isolation"]["gpu_turns"] = true;
  return out;
}

Result<TaskDescriptor> taskFromJson(const json& j) {
  if (!j.is_object()) return fail("plan", "a task descriptor must be a JSON object");
  TaskDescriptor t;
  if (auto r = field(j, "id", t.id); !r) return std::unexpected(r.error());
  if (t.id.empty()) return fail("plan", "task descriptor without `id`");
  std::string type = "transform";
  if (auto r = field(j, "type", type); !r) return std::unexpected(r.error());
  auto parsedType = parseTaskType(type);
  if (!parsedType) return std::unexpected(parsedType.error());
  t.type = *parsedType;
  for (auto [key, out] :
       {std::pair{"executor", &t.executor}, std::pair{"program_version", &t.programVersion},
        std::pair{"region", &t.region}, std::pair{"scope", &t.scope}})
    if (auto r = field(j, key, *out); !r) return std::unexpected(r.error());
  if (auto it = j.find("config"); it != j.end() && !it->is_null()) t.config = *it;
  if (auto it = j.find("inputs"); it != j.end() && !it->is_null()) {
    if (!it->is_array())
      return fail("plan", fmt::format("task `{}`: `inputs` must be a list", t.id));
    for (const auto& in : *it) {
      InputBinding b;
      if (!in.is_object() || !in.contains("task"))
        return fail("plan",
                    fmt::format("task `{}`: each input needs `name`, `task`, `output`", t.id));
      if (auto r = field(in, "name", b.name); !r) return std::unexpected(r.error());
      if (auto r = field(in, "task", b.task); !r) return std::unexpected(r.error());
      if (auto r = field(in, "output", b.output); !r) return std::unexpected(r.error());
      t.inputs.push_back(std::move(b));
    }
  }
  if (auto r = field(j, "dependencies", t.dependencies); !r) return std::unexpected(r.error());
  if (auto it = j.find("sampling"); it != j.end() && it->is_object()) {
    if (auto r = field(*it, "mode", t.sampling.mode); !r) return std::unexpected(r.error());
    if (auto r = field(*it, "repetitions", t.sampling.repetitions); !r)
      return std::unexpected(r.error());
    if (auto r = field(*it, "warmup", t.sampling.warmup); !r) return std::unexpected(r.error());
    if (auto p = it->find("params"); p != it->end() && !p->is_null()) t.sampling.params = *p;
  }
  if (auto r = field(j, "outputs", t.outputs); !r) return std::unexpected(r.error());
  if (auto it = j.find("isolation"); it != j.end() && it->is_object()) {
    if (auto r = field(*it, "exclusive_device", t.isolation.exclusiveDevice); !r)
      return std::unexpected(r.error());
    if (auto r = field(*it, "gpu_turns", t.isolation.gpuTurns); !r)
      return std::unexpected(r.error());
    if (auto r = field(*it, "group", t.isolation.group); !r) return std::unexpected(r.error());
    if (auto r = field(*it, "incompatible_with", t.isolation.incompatibleWith); !r)
      return std::unexpected(r.error());
  }
  std::vector<std::string> requirements;
  if (auto r = field(j, "requirements", requirements); !r) return std::unexpected(r.error());
  for (const auto& name : requirements) {
    auto req = parseRequirement(name);
    if (!req) return std::unexpected(req.error());
    t.requirements.push_back(*req);
  }
  if (auto it = j.find("timeout_s"); it != j.end() && !it->is_null()) {
    if (!it->is_number())
      return fail("plan", fmt::format("task `{}`: `timeout_s` must be a number", t.id));
    t.timeoutSeconds = it->get<double>();
  }
  if (auto it = j.find("gpus"); it != j.end() && !it->is_null()) {
    if (!it->is_number_unsigned())
      return fail("plan", fmt::format("task `{}`: `gpus` must be a count (0: all)", t.id));
    t.gpus = it->get<unsigned>();
  }
  return t;
}

std::string canonicalJson(const json& j) {
  return workspace::canonicalJson(j);
}

std::string contentHash(std::string_view bytes) {
  return workspace::hashBytes(bytes).hex();
}

std::string memoKey(const TaskDescriptor& task,
                    std::vector<std::pair<std::string, std::string>> inputHashes,
                    std::string_view executorVersion) {
  json j = toJson(task);
  if (!executorVersion.empty()) j["executor_version"] = std::string(executorVersion);
  j.erase("dependencies");
  j.erase("timeout_s");
  for (auto& in : j["inputs"]) in.erase("task");
  // Inputs are positional in the workspace's key: sort them by binding name and record the names
  // in the descriptor, so the same inputs under other names give another key.
  std::sort(inputHashes.begin(), inputHashes.end());
  std::vector<workspace::ContentHash> hashes;
  json names = json::array();
  for (const auto& [name, hash] : inputHashes) {
    names.push_back(name);
    auto parsed = workspace::ContentHash::fromHex(hash);
    hashes.push_back(parsed ? *parsed : workspace::hashBytes(hash));
  }
  j["input_names"] = std::move(names);
  return workspace::memoKey(toString(task.type), j, hashes).hex();
}

}  // namespace argus::runtime
