// The run adapter's registration record (argus/backends/adapter.h).
#include "argus/backends/adapter.h"
#include "argus/backends/run.h"

namespace argus::backends::adapters {

const AdapterRecord& run() {
  static const AdapterRecord record{
      .name = "run",
      .description =
          "runs traced variants and the reference build under the injection library (region "
          "traces, CUPTI kernel records)",
      .executors = {"region_trace", "cupti_activity"},
      .machineNeeds = {"a CUDA GPU", "libargus_inject.so (built from src/backends/region_trace)"},
      .registerExecutors = [](runtime::ExecutorRegistry& registry,
                              const AdapterContext& context) -> Result<void> {
        auto spec = programSpec(context, "run");
        if (!spec) return std::unexpected(spec.error());
        registerRunExecutors(registry, **spec);
        return {};
      },
  };
  return record;
}

}  // namespace argus::backends::adapters
