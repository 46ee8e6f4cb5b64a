// The shape every evidence-reading synthesis executor shares (internal to src/synthesis/).
#pragma once

#include <memory>
#include <string>

#include "argus/query/scope.h"
#include "argus/runtime/executor.h"

namespace argus::synthesis {

/// A Synthesize executor that reads its task's `evidence` input and scope and hands both to
/// `make(bytes, task, scope) -> Result<TaskOutputs>`.
template <class Make>
runtime::ExecutorRecord evidenceExecutor(std::string name, std::string description, Make make) {
  return runtime::ExecutorRecord{
      std::move(name), std::move(description),
      std::make_shared<runtime::FunctionExecutor>(
          [make](runtime::TaskContext& ctx) -> Result<runtime::TaskOutputs> {
            auto bytes = ctx.readInput("evidence", "synthesis");
            if (!bytes) return std::unexpected(bytes.error());
            auto scope = query::parseScope(ctx.task.scope);
            if (!scope) return std::unexpected(scope.error());
            return make(*bytes, ctx.task, *scope);
          })};
}

}  // namespace argus::synthesis
