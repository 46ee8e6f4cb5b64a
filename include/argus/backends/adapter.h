// The registration record every backend adapter provides: its name, the executors it adds, what
// it needs on the machine, and how it tells the session that a task cannot run here. The session
// builds its executor catalog from these records alone (src/session/catalog.cpp), so adding an
// adapter adds a folder, its record and one line in src/backends/CMakeLists.txt; no planner,
// session or CLI code changes (src/backends/template/README.md shows how).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "argus/program/program.h"
#include "argus/runtime/executor.h"
#include "argus/runtime/task.h"
#include "argus/support/status.h"

namespace argus::backends {

/// What an adapter may know when it registers: the program being measured and the machine.
struct AdapterContext {
  /// The query's target (spec, .cu or .ptx).
  std::filesystem::path target;
  /// The target's program spec, when the target is one.
  std::optional<program::ProgramSpec> spec;
  /// GPUs of this machine (CUDA_VISIBLE_DEVICES ids), or the device slots of the Slurm
  /// partition the runs go to; empty where there is none.
  std::vector<std::string> devices;
  /// Where `devices` came from, and why it is empty when it is, for the reasons of tasks that
  /// cannot run ("needs a GPU, and <noGpu>").
  std::string noGpu = "this machine has none (nvidia-smi lists none)";
};

/// One adapter (Caliper's service record). Records are immutable and live for the program's
/// lifetime. [thread-safe]
struct AdapterRecord {
  std::string_view name;         ///< The adapter's folder under src/backends.
  std::string_view description;  ///< One line for listings (`argus recipes --adapters`).
  /// Executor names the adapter registers, as tasks name them (TaskDescriptor::executor).
  std::vector<std::string_view> executors;
  /// What it needs on the machine, in words, for listings and docs ("a CUDA GPU", "ncu").
  std::vector<std::string_view> machineNeeds;
  /// Registers the executors with the registry; fails with a message naming what is missing.
  Result<void> (*registerExecutors)(runtime::ExecutorRegistry& registry,
                                    const AdapterContext& context) = nullptr;
  /// Why this build cannot run `task` although it has the executor (a transform it lacks), or
  /// nothing when it can. Optional.
  std::optional<std::string> (*unsupported)(const runtime::TaskDescriptor& task) = nullptr;
  /// Why `task` needs a GPU, in the adapter's words, for the report of a machine without one
  /// (the session's plain reason when this is null or returns nothing). Optional.
  std::optional<std::string> (*whyGpu)(const runtime::TaskDescriptor& task,
                                       const AdapterContext& context) = nullptr;
};

/// The program spec of an adapter that runs the program, or an error naming the adapter: such
/// adapters cannot register for a bare .cu or .ptx target.
[[nodiscard]] inline Result<const program::ProgramSpec*> programSpec(const AdapterContext& context,
                                                                     std::string_view adapter) {
  if (!context.spec)
    return fail(std::string(adapter),
                "the " + std::string(adapter) +
                    " adapter runs a program, so it needs a program spec (argus.yaml)");
  return &*context.spec;
}

}  // namespace argus::backends
