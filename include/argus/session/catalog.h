// The session's executor catalog: every adapter of this build (from its registration record) and
// the synthesis module, and the capability check that says which tasks of a plan this build and
// machine cannot run, and why.
#pragma once

#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "argus/backends/adapter.h"
#include "argus/runtime/executor.h"
#include "argus/runtime/plan.h"
#include "argus/support/status.h"

namespace argus::session {

/// Every adapter record of this build, in src/backends/CMakeLists.txt's order (the list is
/// generated from its argus_adapter() calls). [thread-safe]
[[nodiscard]] std::span<const backends::AdapterRecord* const> adapterRecords();

/// The executors of one query: every adapter's and synthesis's, for one program and machine.
struct Catalog {
  backends::AdapterContext context;
  runtime::ExecutorRegistry registry;
  /// The adapter that registered each executor name.
  std::map<std::string, const backends::AdapterRecord*, std::less<>> owners;
};

/// Registers every adapter and the synthesis module for `context`. Fails with the adapter's own
/// error when one cannot register (a spec that does not load), or when two claim one executor.
[[nodiscard]] Result<Catalog> makeCatalog(backends::AdapterContext context);

/// The tasks of a plan that this build and machine cannot run.
struct Capabilities {
  std::map<std::string, std::string> reasons;  ///< Task id -> why it cannot run here.
  std::set<std::string> needGpu;               ///< Of those, the GPU tasks of a GPU-less machine.
};

/// Checks every task of `plan`: an executor no adapter provides, a task its adapter does not
/// support in this build, a GPU task on a machine without GPUs (a GPU task downstream of a task
/// that cannot run points at it, so the chain of reasons ends at the root cause).
[[nodiscard]] Capabilities checkCapabilities(const runtime::Plan& plan, const Catalog& catalog);

/// The plan without the tasks in `reasons` and everything downstream of them; `reasons` gains a
/// "needs `UP`" entry for each dependent. A task that needs a removed task only for its
/// optional inputs (config.optional_inputs) stays, without those inputs.
[[nodiscard]] runtime::Plan without(const runtime::Plan& plan,
                                    std::map<std::string, std::string>& reasons);

/// The first reason in the chain of "needs" that explains why `task` was not run.
[[nodiscard]] std::string rootReason(const std::map<std::string, std::string>& reasons,
                                     std::string task);

/// GPUs of this machine, as CUDA_VISIBLE_DEVICES ids ("0", "1", ...): $ARGUS_DEVICES if set
/// (comma-separated), else what `nvidia-smi -L` lists.
[[nodiscard]] std::vector<std::string> detectDevices();

}  // namespace argus::session
