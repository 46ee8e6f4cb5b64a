// The cupti_sass adapter's registration record (argus/backends/adapter.h).
#include "argus/backends/adapter.h"
#include "argus/backends/pc_collect.h"

namespace argus::backends::adapters {

const AdapterRecord& cupti_sass() {
  static const AdapterRecord record{
      .name = "cupti_sass",
      .description =
          "per-PC evidence through CUPTI: SASS metrics (mapping and reference runs) and PC "
          "sampling",
      .executors = {"pc_mapping", "cupti_sass", "cupti_pc_sampling"},
      .machineNeeds = {"a CUDA GPU", "CUPTI (libcupti)", "libargus_cupti_sass.so"},
      .registerExecutors = [](runtime::ExecutorRegistry& registry,
                              const AdapterContext& context) -> Result<void> {
        auto spec = programSpec(context, "cupti_sass");
        if (!spec) return std::unexpected(spec.error());
        registerCuptiPcExecutors(registry, **spec);
        return {};
      },
  };
  return record;
}

}  // namespace argus::backends::adapters
