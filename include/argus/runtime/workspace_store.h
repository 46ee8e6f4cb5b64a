// ResultStore backed by the versioned workspace: memo lookups are findSucceededTask, every
// execution becomes a workspace task (queued -> running -> final status) whose outputs and log
// are published as immutable artifacts.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "argus/runtime/result_store.h"
#include "argus/workspace/workspace.h"

namespace argus::runtime {

/// Persists a run into a workspace. Output `name` is published with kind = name = the output
/// name and scope = the task's scope; the version is the task's programVersion when it is a
/// workspace version id ("v12"). The runtime's memo key (32 hex digits) is the workspace memo key.
/// Called from the scheduler thread only (as ResultStore promises); the workspace is
/// [thread-safe] anyway.
class WorkspaceResultStore final : public ResultStore {
 public:
  explicit WorkspaceResultStore(workspace::Workspace& ws) : ws_(ws) {}

  std::optional<TaskOutputs> lookup(const std::string& memoKey) override;
  void reused(const TaskDescriptor& task, const std::string& memoKey) override;
  void begin(const TaskDescriptor& task, const std::string& memoKey) override;
  Result<TaskOutputs> publish(const TaskDescriptor& task, const std::string& memoKey,
                              TaskOutputs outputs, const std::string& log) override;
  void fail(const TaskDescriptor& task, const std::string& memoKey, TaskState state,
            const std::string& error, const std::string& log) override;

  /// Workspace problems met outside publish (lookup, begin, fail cannot return errors); the
  /// first one is kept for the report ("counted and reported once at the end").
  [[nodiscard]] const std::optional<Error>& firstError() const { return firstError_; }

 private:
  void note(const Error& e) {
    if (!firstError_) firstError_ = e;
  }

  workspace::Workspace& ws_;
  std::map<std::string, workspace::TaskId> running_;  // runtime task id -> workspace task
  std::map<std::pair<std::string, std::string>, workspace::ArtifactId>
      artifacts_;  // (task, output) -> the artifact its dependents record as an input
  /// Outputs of the stored tasks lookup found, by memo key: what reused() binds to a task.
  std::map<std::string, std::map<std::string, workspace::ArtifactId>> hits_;
  std::optional<Error> firstError_;
};

}  // namespace argus::runtime
