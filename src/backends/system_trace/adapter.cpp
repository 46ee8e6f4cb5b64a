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
        if (!context.spec)
          return fail("system_trace",
                      "the system_trace adapter runs a program, so it needs a program spec "
                      "(argus.yaml)");
        registerSystemTraceExecutors(registry, *context.spec);
        return {};
      },
  };
  return record;
}

}  // namespace argus::backends::adapters
