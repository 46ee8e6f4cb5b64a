// Scheduler overhead: synthetic DAGs of 10,000 trivial CPU tasks.
//
// Shapes: wide (10,000 independent tasks), deep (10 chains of 1,000), mixed (100 layers of 100,
// each task reading two tasks of the previous layer). For each shape the first run executes
// every task with an executor that does nothing but return a 16-byte output, so wall time / task
// is the scheduler's own cost (readiness, memo key, store, dispatch, completion). The second run
// of the same plan on the same store executes nothing: everything is memoized.
// Usage: argus_bench_scheduler [tasks] [cpu threads]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "argus/runtime/scheduler.h"
#include "argus/runtime/workspace_store.h"
#include "argus/support/process.h"

using namespace argus::runtime;

namespace {

TaskDescriptor makeTask(const std::string& id, std::vector<std::string> from) {
  TaskDescriptor t;
  t.id = id;
  t.executor = "noop";
  t.outputs = {"out"};
  for (std::size_t k = 0; k < from.size(); ++k)
    t.inputs.push_back({"in" + std::to_string(k), from[k], "out"});
  return t;
}

Plan wide(int n) {
  Plan p;
  for (int i = 0; i < n; ++i) (void)p.add(makeTask("w" + std::to_string(i), {}));
  return p;
}

Plan deep(int n) {
  Plan p;
  const int chains = 10, length = n / chains;
  for (int c = 0; c < chains; ++c)
    for (int i = 0; i < length; ++i) {
      std::string id = "c" + std::to_string(c) + "." + std::to_string(i);
      std::vector<std::string> from;
      if (i > 0) from.push_back("c" + std::to_string(c) + "." + std::to_string(i - 1));
      (void)p.add(makeTask(id, from));
    }
  return p;
}

Plan mixed(int n) {
  Plan p;
  const int width = 100, layers = n / width;
  for (int l = 0; l < layers; ++l)
    for (int i = 0; i < width; ++i) {
      std::vector<std::string> from;
      if (l > 0) {
        from.push_back("l" + std::to_string(l - 1) + "." + std::to_string(i));
        from.push_back("l" + std::to_string(l - 1) + "." + std::to_string((i + 1) % width));
      }
      (void)p.add(makeTask("l" + std::to_string(l) + "." + std::to_string(i), from));
    }
  return p;
}

struct Timing {
  double seconds = 0;
  std::size_t executed = 0, memoized = 0;
  bool ok = false;
};

Timing timeRun(const ExecutorRegistry& registry, ResultStore& store, const RunOptions& options,
               const Plan& plan) {
  Scheduler scheduler(registry, store, options);
  auto start = std::chrono::steady_clock::now();
  auto report = scheduler.run(plan);
  Timing t;
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!report) {
    std::fprintf(stderr, "%s\n", report.error().text().c_str());
    return t;
  }
  t.ok = report->ok();
  t.memoized = report->counts.memoized;
  t.executed = report->counts.done - report->counts.memoized;
  return t;
}

void row(const char* shape, const char* store, const char* run, std::size_t n, const Timing& t) {
  std::printf("| %-6s | %-9s | %-8s | %6zu | %8zu | %9.3f | %11.2f | %12.0f | %-3s |\n", shape,
              store, run, n, t.executed, t.seconds * 1e3, t.seconds * 1e6 / double(n),
              double(n) / t.seconds, t.ok ? "yes" : "NO");
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 10000;
  RunOptions options;
  options.cpuThreads = argc > 2 ? std::size_t(std::atoi(argv[2])) : 0;
  ExecutorRegistry registry;
  (void)registry.add(
      {"noop", "returns a 16-byte output",
       std::make_shared<FunctionExecutor>([](TaskContext&) -> argus::Result<TaskOutputs> {
         TaskOutputs out;
         out.artifacts["out"] = Artifact::fromData("0123456789abcdef");
         return out;
       })});
  std::printf(
      "argus_bench_scheduler: %d tasks per shape, %zu CPU threads (%u hardware threads)\n\n", n,
      options.cpuThreads ? options.cpuThreads : std::thread::hardware_concurrency(),
      std::thread::hardware_concurrency());
  std::printf(
      "| shape  | store     | run      |  tasks | executed | wall (ms) | µs per task | tasks per s "
      " | ok  |\n");
  std::printf(
      "|--------|-----------|----------|--------|----------|-----------|-------------|-------------"
      "-|-----|\n");
  struct Shape {
    const char* name;
    Plan (*make)(int);
  };
  for (Shape shape : {Shape{"wide", wide}, Shape{"deep", deep}, Shape{"mixed", mixed}}) {
    Plan plan = shape.make(n);
    {
      MemoryResultStore store;
      row(shape.name, "memory", "first", plan.size(), timeRun(registry, store, options, plan));
      row(shape.name, "memory", "memoized", plan.size(), timeRun(registry, store, options, plan));
    }
    auto dir = argus::makeTempDir("argus-bench-ws");
    if (!dir) return 1;
    {
      argus::workspace::OpenOptions open;
      auto ws = argus::workspace::Workspace::open(*dir, open);
      if (!ws) {
        std::fprintf(stderr, "%s\n", ws.error().text().c_str());
        return 1;
      }
      WorkspaceResultStore store(*ws);
      row(shape.name, "workspace", "first", plan.size(), timeRun(registry, store, options, plan));
      row(shape.name, "workspace", "memoized", plan.size(),
          timeRun(registry, store, options, plan));
      if (store.firstError())
        std::fprintf(stderr, "workspace: %s\n", store.firstError()->text().c_str());
    }
    std::error_code ec;
    std::filesystem::remove_all(*dir, ec);
  }
  return 0;
}
