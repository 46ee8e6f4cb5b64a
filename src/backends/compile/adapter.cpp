// The compile adapter's registration record (argus/backends/adapter.h).
#include <algorithm>

#include <fmt/format.h>

#include "argus/backends/adapter.h"
#include "argus/backends/compile.h"
#include "argus/passes/transforms.h"

namespace argus::backends::adapters {

const AdapterRecord& compile() {
  static const AdapterRecord record{
      .name = "compile",
      .description =
          "front-end PTX (nvcc, or a Triton script's dump), Argus PTX passes and "
          "variant builds",
      .executors = {"nvcc_ptx", "triton_dump", "ptx_pass", "build_variant"},
      .machineNeeds = {"the CUDA toolkit (nvcc, ptxas)",
                       "a CUDA GPU for triton_dump (Triton compiles at launch)"},
      .registerExecutors =
          [](runtime::ExecutorRegistry& registry, const AdapterContext& context) {
            CompileContext compile;
            compile.target = context.target;
            compile.spec = context.spec;
            return registerCompileExecutors(registry, std::move(compile));
          },
      .unsupported = [](const runtime::TaskDescriptor& task) -> std::optional<std::string> {
        if (task.executor != "ptx_pass" || !task.config.contains("transforms")) return {};
        const auto available = passes::availableTransforms();
        for (const auto& name : task.config["transforms"])
          if (std::find(available.begin(), available.end(), name.get<std::string>()) ==
              available.end())
            return fmt::format("transform `{}` is not part of this build yet",
                               name.get<std::string>());
        return {};
      },
      .whyGpu = [](const runtime::TaskDescriptor& task,
                   const AdapterContext& context) -> std::optional<std::string> {
        if (task.executor != "triton_dump" || !context.spec) return {};
        return fmt::format(
            "needs a GPU: Triton compiles the kernel when `{}` launches it, so its PTX comes "
            "from running the script on a GPU, and {}",
            context.spec->script.filename().string(), context.noGpu);
      },
  };
  return record;
}

}  // namespace argus::backends::adapters
