// Every Synthesize executor of the synthesis module, registered at once (the session's catalog
// adds them beside the adapters' executors).
#pragma once

#include "argus/runtime/executor.h"
#include "argus/support/status.h"

namespace argus::synthesis {

/// Registers region_timing, kernel_timing, ownership_weights, pc_attribution,
/// system_trace_signals and probe_join. Fails when a name is already registered.
[[nodiscard]] Result<void> registerSynthesisModule(runtime::ExecutorRegistry& registry);

}  // namespace argus::synthesis
