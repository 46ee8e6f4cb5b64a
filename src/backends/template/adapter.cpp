// The template adapter's registration record and its one executor (see README.md). Copy this
// file for a new adapter; the record is the only thing the session reads.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "argus/backends/adapter.h"

namespace argus::backends::adapters {
namespace {

/// `template_ptx_statements`: counts the `;`-terminated statements of its input `ptx` and
/// publishes the count as `statements` (JSON). CPU only, stateless. [thread-safe]
Result<runtime::TaskOutputs> countStatements(runtime::TaskContext& ctx) {
  auto ptx = ctx.readInput("ptx", "template");
  if (!ptx) return std::unexpected(ptx.error());
  std::size_t statements = 0;
  for (char c : *ptx) statements += c == ';' ? 1 : 0;
  if (statements == 0)
    return fail("template", fmt::format("task `{}`: its input `ptx` holds no PTX statement; "
                                        "give it the output of an nvcc_ptx or ptx_pass task",
                                        ctx.task.id));
  runtime::TaskOutputs out;
  out.artifacts["statements"] =
      runtime::Artifact::fromData(fmt::format("{{\"statements\": {}}}", statements));
  return out;
}

}  // namespace

const AdapterRecord& template_adapter() {
  static const AdapterRecord record{
      .name = "template",
      .description = "worked example of an adapter: counts the statements of a PTX input",
      .executors = {"template_ptx_statements"},
      .machineNeeds = {"nothing (CPU)"},
      .registerExecutors =
          [](runtime::ExecutorRegistry& registry, const AdapterContext&) {
            return registry.add(runtime::ExecutorRecord{
                "template_ptx_statements", "counts the statements of a PTX input (template)",
                std::make_shared<runtime::FunctionExecutor>(countStatements)});
          },
  };
  return record;
}

}  // namespace argus::backends::adapters
