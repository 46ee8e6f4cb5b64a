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
        if (!context.spec)
          return fail("cupti_sass",
                      "the cupti_sass adapter runs a program, so it needs a program spec "
                      "(argus.yaml)");
        registerCuptiPcExecutors(registry, *context.spec);
        return {};
      },
  };
  return record;
}

}  // namespace argus::backends::adapters
