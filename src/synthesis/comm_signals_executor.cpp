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
            auto bytes = ctx.readInput("evidence", "synthesis");
            if (!bytes) return std::unexpected(bytes.error());
            auto trace = evidence::parseSystemTrace(*bytes);
            if (!trace) return std::unexpected(trace.error());
            CommSignals first = commSignals(*trace);
            // Further processes of the run (system_trace.<pid>, one per GPU): the collective's
            // time is its slowest rank's.
            std::vector<std::vector<CommGroup>> processes{first.groups};
            nlohmann::json timeline = kernelTimelineJson(*trace);
            for (const auto& [key, artifact] : ctx.evidence) {
              if (key.find("/system_trace.") == std::string::npos) continue;
              auto other = artifact.read();
              if (!other) return std::unexpected(other.error());
              auto parsed = evidence::parseSystemTrace(*other);
              if (!parsed)
                return fail("synthesis", fmt::format("{}: {}", key, parsed.error().message));
              processes.push_back(commSignals(*parsed).groups);
              nlohmann::json more = kernelTimelineJson(*parsed);
              more["pid"] = parsed->header.value("pid", 0);
              timeline["other_processes"].push_back(std::move(more));
            }
            if (processes.size() > 1) first.groups = slowestProcess(processes);
            auto signals = commSignalsJson(first);
            for (auto& [name, value] : signals.items()) value["processes"] = processes.size();
            runtime::TaskOutputs out;
            out.artifacts["kernel_timeline"] = runtime::Artifact::fromData(timeline.dump());
            for (const char* name : {"launch_overhead", "comm_chunk_time", "comm_throughput"})
              out.artifacts[name] = runtime::Artifact::fromData(signals[name].dump());
            return out;
          })});
}

}  // namespace argus::synthesis
