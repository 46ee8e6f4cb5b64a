// Helpers shared by the runtime tests.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "argus/runtime/executor.h"
#include "argus/runtime/plan.h"
#include "argus/runtime/task.h"
#include "argus/runtime/worker_process.h"

namespace argus::runtime::test {

/// A task with the given inputs ("task.output" or "name=task.output") and outputs.
inline TaskDescriptor task(std::string id, std::string executor,
                           std::vector<std::string> inputs = {},
                           std::vector<std::string> outputs = {"out"},
                           TaskType type = TaskType::Transform) {
  TaskDescriptor t;
  t.id = std::move(id);
  t.type = type;
  t.executor = std::move(executor);
  for (const auto& spec : inputs) {
    InputBinding b;
    std::string ref = spec;
    if (auto eq = spec.find('='); eq != std::string::npos) {
      b.name = spec.substr(0, eq);
      ref = spec.substr(eq + 1);
    }
    auto dot = ref.rfind('.');
    b.task = ref.substr(0, dot);
    b.output = ref.substr(dot + 1);
    if (b.name.empty()) b.name = b.task;
    t.inputs.push_back(std::move(b));
  }
  t.outputs = std::move(outputs);
  return t;
}

/// A GPU collection run by the stand-in worker script.
inline TaskDescriptor gpuTask(std::string id, std::string executor,
                              std::vector<std::string> inputs = {},
                              std::vector<std::string> outputs = {"out"}) {
  auto t = task(std::move(id), std::move(executor), std::move(inputs), std::move(outputs),
                TaskType::Collect);
  t.requirements = {Requirement::Gpu};
  return t;
}

/// The stand-in worker: worker.sh MODE [ARG] -- <declared outputs>.
class ScriptExecutor final : public WorkerProcessExecutor {
 public:
  explicit ScriptExecutor(std::string mode, std::string arg = {})
      : mode_(std::move(mode)), arg_(std::move(arg)) {}
  std::vector<std::string> command(const TaskContext& ctx) const override {
    std::vector<std::string> argv{"/bin/sh", ARGUS_RUNTIME_TESTDATA "/worker.sh", mode_};
    if (!arg_.empty()) argv.push_back(arg_);
    argv.push_back("--");
    for (const auto& o : ctx.task.outputs) argv.push_back(o);
    return argv;
  }

 private:
  std::string mode_, arg_;
};

/// Start/end times of every execution, recorded by the executors themselves. [thread-safe]
class Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  struct Span {
    Clock::time_point start, end;
  };
  void record(const std::string& id, Clock::time_point start, Clock::time_point end) {
    std::lock_guard lock(mutex_);
    spans_[id] = {start, end};
    order_.push_back(id);
  }
  std::map<std::string, Span> spans() const {
    std::lock_guard lock(mutex_);
    return spans_;
  }
  std::vector<std::string> order() const {
    std::lock_guard lock(mutex_);
    return order_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Span> spans_;
  std::vector<std::string> order_;
};

/// An in-process executor that writes "<id>:<inputs>" to every declared output and records its
/// span. `body` (optional) runs in between and may fail the task.
inline std::shared_ptr<FunctionExecutor> recordingExecutor(
    Timeline& timeline, std::function<Result<void>(TaskContext&)> body = {}) {
  return std::make_shared<FunctionExecutor>(
      [&timeline, body](TaskContext& ctx) -> Result<TaskOutputs> {
        auto start = Timeline::Clock::now();
        if (body)
          if (auto r = body(ctx); !r) {
            timeline.record(ctx.task.id, start, Timeline::Clock::now());
            return std::unexpected(r.error());
          }
        std::string text = ctx.task.id + ":";
        for (const auto& [name, a] : ctx.inputs) text += name + "=" + a.hash + ";";
        TaskOutputs out;
        for (const auto& o : ctx.task.outputs) out.artifacts[o] = Artifact::fromData(text + o);
        timeline.record(ctx.task.id, start, Timeline::Clock::now());
        return out;
      });
}

}  // namespace argus::runtime::test
