// registerSynthesisModule (argus/synthesis/executors.h).
#include "argus/synthesis/executors.h"

#include "argus/synthesis/attribution_executor.h"
#include "argus/synthesis/comm_signals.h"
#include "argus/synthesis/kernel_timing.h"
#include "argus/synthesis/probe_join_executor.h"
#include "argus/synthesis/region_timing.h"

namespace argus::synthesis {

Result<void> registerSynthesisModule(runtime::ExecutorRegistry& registry) {
  registerSynthesisExecutors(registry);
  registerKernelTimingExecutor(registry);
  registerAttributionExecutors(registry);
  registerCommSignalsExecutor(registry);
  return registerProbeJoinExecutor(registry);
}

}  // namespace argus::synthesis
