// The `system_trace_signals` synthesis executor (argus/synthesis/comm_signals.h).
#include <memory>

#include <fmt/format.h>

#include "argus/synthesis/comm_signals.h"

namespace argus::synthesis {

void registerCommSignalsExecutor(runtime::ExecutorRegistry& registry) {
  (void)registry.add(runtime::ExecutorRecord{
      "system_trace_signals",
      "joins a system trace into kernel timeline and communication chunk signals",
      std::make_shared<runtime::FunctionExecutor>(
          [](runtime::TaskContext& ctx) -> Result<runtime::TaskOutputs> {
            auto evidence = ctx.inputs.find("evidence");
            if (evidence == ctx.inputs.end())
              return fail("synthesis",
                          fmt::format("task `{}` has no `evidence` input", ctx.task.id));
            auto bytes = evidence->second.read();
            if (!bytes) return std::unexpected(bytes.error());
            auto trace = backends::parseSystemTrace(*bytes);
            if (!trace) return std::unexpected(trace.error());
            auto signals = commSignalsJson(commSignals(*trace));
            runtime::TaskOutputs out;
            out.artifacts["kernel_timeline"] =
                runtime::Artifact::fromData(kernelTimelineJson(*trace).dump());
            for (const char* name : {"launch_overhead", "comm_chunk_time", "comm_throughput"})
              out.artifacts[name] = runtime::Artifact::fromData(signals[name].dump());
            return out;
          })});
}

}  // namespace argus::synthesis
