#include "argus/probe/branches.h"

#include <fmt/format.h>

namespace argus::probe {

using runtime::InputBinding;
using runtime::Requirement;
using runtime::TaskDescriptor;
using runtime::TaskType;

Result<std::vector<TaskDescriptor>> probeBranches(const ProbeOrigin& origin,
                                                  const std::vector<ProbeTarget>& targets) {
  if (origin.ptxTask.empty())
    return fail("planner", "probe branches need the id of the task that yields the base PTX");
  std::vector<TaskDescriptor> tasks;
  size_t count = 0;
  for (const auto& t : targets) count += t.iterations.size();
  tasks.reserve(3 * count);
  for (const auto& target : targets) {
    for (int64_t iteration : target.iterations) {
      const std::string key = fmt::format("probe[{}@{}]", target.opId, iteration);
      // The probe variant traces only the probed iteration (and whatever else the query's
      // scope restricts), so its trace holds exactly the occurrences the join needs.
      query::Scope others;
      for (const auto& clause : origin.scope.clauses)
        if (clause.coordinate != query::Coordinate::Iteration) others.clauses.push_back(clause);
      const std::string iter = fmt::format("iter={}", iteration);
      auto scope = query::parseScope(others.all() ? iter : others.canonical() + "," + iter);
      if (!scope) return std::unexpected(scope.error());
      TaskDescriptor v;
      v.id = "variant/" + key;
      v.type = TaskType::Transform;
      v.executor = "ptx_pass";
      v.programVersion = origin.programVersion;
      v.region = origin.regionPath;
      v.scope = scope->canonical();
      v.config = origin.traceConfig.is_object() ? origin.traceConfig : nlohmann::json::object();
      v.config.update({{"variant", key},
                       {"transforms", {"insert_forced_wait", "lower_markers_to_trace"}},
                       {"kernel", origin.kernel},
                       {"op", target.opId},
                       {"kind", target.kind},
                       {"iteration", iteration}});
      if (!target.sharedPhase.empty()) v.config["shared_phase"] = target.sharedPhase;
      if (target.cta) v.config["cta"] = *target.cta;
      v.inputs = {InputBinding{"ptx", origin.ptxTask, "ptx"}};
      v.outputs = {"ptx", "trace_map", "probe"};
      TaskDescriptor b = v;
      b.id = "build/" + key;
      b.executor = "build_variant";
      b.config = {{"variant", key}};
      b.inputs = {InputBinding{"ptx", v.id, "ptx"}};
      if (!origin.tritonDumpTask.empty())
        b.inputs.push_back(InputBinding{"triton_dump", origin.tritonDumpTask, "triton_dump"});
      b.outputs = {"executable"};
      TaskDescriptor c = v;
      c.id = "collect/" + key;
      c.type = TaskType::Collect;
      c.gpus = origin.gpus;
      c.executor = "region_trace";
      c.config = {{"variant", key},
                  {"collections",
                   {{{"recipe", "forced_completion_probe"},
                     {"backend", "region_trace"},
                     {"evidence", "region_trace"}}}},
                  {"op", target.opId},
                  {"iteration", iteration}};
      c.inputs = {InputBinding{"executable", b.id, "executable"},
                  InputBinding{"trace_map", v.id, "trace_map"}};
      c.outputs = {"region_trace"};
      c.requirements = {Requirement::Gpu};
      // Each probe's GPU work alone on the device: one-GPU probes may start their processes
      // together (--concurrent-probes) and take the device's turn for their GPU work
      // (gpu_turn.h); the join checks that no two probes' kernels overlapped. Multi-GPU probes
      // hold their devices to themselves.
      c.isolation.gpuTurns = c.gpus == 1;
      c.isolation.exclusiveDevice = !c.isolation.gpuTurns;
      c.isolation.group = c.id;
      tasks.push_back(std::move(v));
      tasks.push_back(std::move(b));
      tasks.push_back(std::move(c));
    }
  }
  return tasks;
}

}  // namespace argus::probe
