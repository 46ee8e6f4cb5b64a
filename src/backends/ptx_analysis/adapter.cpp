// The ptx_analysis adapter's registration record (argus/backends/adapter.h).
#include "argus/backends/adapter.h"
#include "argus/backends/ptx_analysis.h"

namespace argus::backends::adapters {

const AdapterRecord& ptx_analysis() {
  static const AdapterRecord record{
      .name = "ptx_analysis",
      .description =
          "op_latency discovery: async op sites on PTX, one forced-completion probe "
          "branch per selected op and iteration",
      .executors = {"ptx_analysis"},
      .machineNeeds = {"nothing (CPU); the probe branches it adds run on a CUDA GPU"},
      .registerExecutors =
          [](runtime::ExecutorRegistry& registry, const AdapterContext& context) {
            // Without a GPU only the probes' builds are materialized: their runs could not go.
            return registerPtxAnalysisExecutor(registry, !context.devices.empty(), context.noGpu);
          },
  };
  return record;
}

}  // namespace argus::backends::adapters
