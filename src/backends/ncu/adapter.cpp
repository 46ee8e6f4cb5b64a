// The ncu adapter's registration record (argus/backends/adapter.h).
#include "argus/backends/adapter.h"
#include "argus/backends/ncu.h"

namespace argus::backends::adapters {

const AdapterRecord& ncu() {
  static const AdapterRecord record{
      .name = "ncu",
      .description = "Nsight Compute source counters of the reference build, imported per PC",
      .executors = {"ncu"},
      .machineNeeds = {"a CUDA GPU", "Nsight Compute (ncu on PATH)"},
      .registerExecutors = [](runtime::ExecutorRegistry& registry,
                              const AdapterContext& context) -> Result<void> {
        auto spec = programSpec(context, "ncu");
        if (!spec) return std::unexpected(spec.error());
        registerNcuExecutor(registry, **spec);
        return {};
      },
  };
  return record;
}

}  // namespace argus::backends::adapters
