// The system_trace adapter's registration record (argus/backends/adapter.h).
#include "argus/backends/adapter.h"
#include "argus/backends/system_trace.h"

namespace argus::backends::adapters {

const AdapterRecord& system_trace() {
  static const AdapterRecord record{
      .name = "system_trace",
      .description =
          "CUPTI activity of every process of a run: kernels, copies, launch calls, NVTX ranges",
      .executors = {"system_trace"},
      .machineNeeds = {"a CUDA GPU", "CUPTI (libcupti)", "libargus_system_trace.so"},
      .registerExecutors = [](runtime::ExecutorRegistry& registry,
                              const AdapterContext& context) -> Result<void> {
        auto spec = programSpec(context, "system_trace");
        if (!spec) return std::unexpected(spec.error());
        registerSystemTraceExecutors(registry, **spec);
        return {};
      },
  };
  return record;
}

}  // namespace argus::backends::adapters
