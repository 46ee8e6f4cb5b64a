// Task descriptors: the typed, serializable unit of work that the planner hands to the runtime.
//
// A descriptor carries every binding a task needs (program version, region, scope, backend
// configuration, inputs, sampling, outputs, isolation and backend requirements) so that it can be
// written to JSON, handed to a worker process, and hashed into a memo key. JSON round trips
// exactly: fromJson(toJson(d)) == d.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/support/status.h"

namespace argus::runtime {

/// The four task types of the plan (docs/architecture.md, step 3).
enum class TaskType {
  Transform,   ///< artifact -> artifact (PTX pass, compile); CPU.
  Collect,     ///< runs a program/backend configuration on a device; yields evidence.
  Synthesize,  ///< parses or combines evidence; CPU.
  Control,     ///< discovery; may materialize new branches while the plan runs.
};

/// "transform", "collect", "synthesize", "control".
[[nodiscard]] std::string_view toString(TaskType type);
/// Inverse of toString; the error lists the accepted names.
[[nodiscard]] Result<TaskType> parseTaskType(std::string_view text);

/// What a task needs from the machine. A task with Gpu runs in a worker bound to one device.
enum class Requirement {
  Gpu,               ///< executes on a GPU (gets CUDA_VISIBLE_DEVICES=<device>).
  HardwareCounters,  ///< reads performance counters (CUPTI, ncu).
  BinaryPatching,    ///< patches/instruments the binary (CUPTI SASS metrics, NVBit).
  SystemTracing,     ///< records a system trace (nsys-like).
};

/// "gpu", "hardware_counters", "binary_patching", "system_tracing".
[[nodiscard]] std::string_view toString(Requirement requirement);
/// Inverse of toString.
[[nodiscard]] Result<Requirement> parseRequirement(std::string_view text);

/// One named input: the output `output` of task `task`, visible to the executor as `name`.
struct InputBinding {
  std::string name;
  std::string task;
  std::string output;
  friend bool operator==(const InputBinding&, const InputBinding&) = default;
};

/// How often and how a collection samples (repetitions, warm-up, backend-specific knobs).
struct SamplingPolicy {
  std::string mode = "all";  ///< "all", "first", "every_n", ... interpreted by the backend.
  std::uint32_t repetitions = 1;
  std::uint32_t warmup = 0;
  nlohmann::json params = nlohmann::json::object();
  friend bool operator==(const SamplingPolicy&, const SamplingPolicy&) = default;
};

/// Planner-imposed separation constraints, enforced per device by the runtime.
struct Isolation {
  /// Runs alone on its device: no other GPU task shares the device while it runs.
  bool exclusiveDevice = false;
  /// Effect class of this task ("timing", "patching", ...); empty = none.
  std::string group;
  /// Groups that must not run on the same device at the same time as this task.
  std::vector<std::string> incompatibleWith;
  /// Shares its device only with other such tasks, whose processes run at once but take the
  /// device's turn (an exclusive lock, ARGUS_GPU_TURN) from their first GPU work to their exit,
  /// so their GPU work never overlaps: each launch is its own execution (forced-wait probes).
  bool gpuTurns = false;
  friend bool operator==(const Isolation&, const Isolation&) = default;
};

/// One plan node. Ids are unique within a plan; everything else is data for the executor.
struct TaskDescriptor {
  std::string id;
  TaskType type = TaskType::Transform;
  std::string executor;        ///< Registry key of the executor/backend that runs the task.
  std::string programVersion;  ///< Content hash or id of the input program version.
  /// GPU tasks: devices the task needs at once (0: all of them). A task of more than one gets
  /// whole devices to itself, all listed in CUDA_VISIBLE_DEVICES.
  unsigned gpus = 1;
  std::string region;  ///< Region path or region ID; empty = whole kernel.
  std::string scope;   ///< Scope expression (`role=producer,iter=0..7`).
  nlohmann::json config = nlohmann::json::object();  ///< Backend configuration.
  std::vector<InputBinding> inputs;                  ///< Named inputs (imply dependencies).
  std::vector<std::string> dependencies;             ///< Extra ordering-only dependencies.
  SamplingPolicy sampling;
  std::vector<std::string> outputs;  ///< Names of the outputs the task must publish.
  Isolation isolation;
  std::vector<Requirement> requirements;
  std::optional<double> timeoutSeconds;  ///< Overrides the run's default timeout.

  /// True when requirements contain r.
  [[nodiscard]] bool needs(Requirement r) const;
  /// Ids of every task this one waits for (input producers and dependencies, deduplicated, in
  /// first-mention order).
  [[nodiscard]] std::vector<std::string> upstream() const;

  friend bool operator==(const TaskDescriptor&, const TaskDescriptor&) = default;
};

/// Serializes every field (defaults included) so that fromJson restores an equal descriptor.
[[nodiscard]] nlohmann::json toJson(const TaskDescriptor& task);
/// Parses a descriptor; missing optional fields take their defaults; the error names the field.
[[nodiscard]] Result<TaskDescriptor> taskFromJson(const nlohmann::json& json);

/// Canonical text of a JSON value: object keys sorted, no whitespace. Equal values, equal text.
[[nodiscard]] std::string canonicalJson(const nlohmann::json& json);

/// XXH3-128 of bytes as 32 lower-case hex digits. [thread-safe]
[[nodiscard]] std::string contentHash(std::string_view bytes);

/// Memo key of a task: XXH3-128 over the task type, the canonical descriptor without the fields
/// that cannot change the result (producer task ids and ordering dependencies, whose content is
/// covered by the input hashes; the timeout), and the content hashes of its inputs (`name=hash`,
/// sorted). The task id stays in: two tasks that differ only by id are not assumed to be the same
/// work (repeated measurements, executors that name outputs by id). A non-empty
/// `executorVersion` (ExecutorRecord::version) is part of the key; an empty one leaves the key
/// as it was before executors had versions. [thread-safe]
[[nodiscard]] std::string memoKey(const TaskDescriptor& task,
                                  std::vector<std::pair<std::string, std::string>> inputHashes,
                                  std::string_view executorVersion = {});

}  // namespace argus::runtime
