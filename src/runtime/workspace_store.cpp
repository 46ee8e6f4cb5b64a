#include "argus/runtime/workspace_store.h"

#include <fmt/format.h>

namespace argus::runtime {

namespace ws = argus::workspace;

namespace {

ws::TaskType wsType(TaskType t) {
  switch (t) {
    case TaskType::Transform:
      return ws::TaskType::transform;
    case TaskType::Collect:
      return ws::TaskType::collect;
    case TaskType::Synthesize:
      return ws::TaskType::synthesize;
    case TaskType::Control:
      return ws::TaskType::control;
  }
  return ws::TaskType::control;
}

ws::TaskStatus wsStatus(TaskState s) {
  switch (s) {
    case TaskState::TimedOut:
      return ws::TaskStatus::timed_out;
    case TaskState::Cancelled:
      return ws::TaskStatus::cancelled;
    default:
      return ws::TaskStatus::failed;
  }
}

std::optional<ws::VersionId> versionOf(const TaskDescriptor& t) {
  auto ref = ws::parseObjectRef(t.programVersion);
  if (!ref || ref->kind != ws::ObjectKind::version) return std::nullopt;
  return ws::VersionId(ref->value);
}

}  // namespace

std::optional<TaskOutputs> WorkspaceResultStore::lookup(const std::string& memoKey) {
  auto key = ws::ContentHash::fromHex(memoKey);
  if (!key) return std::nullopt;
  auto found = ws_.findSucceededTask(*key);
  if (!found) {
    note(found.error());
    return std::nullopt;
  }
  if (!*found) return std::nullopt;
  TaskOutputs out;
  std::map<std::string, ws::ArtifactId> ids;
  for (const auto& rec : (*found)->outputs) {
    auto bytes = ws_.readArtifact(rec.id);
    if (!bytes) {
      note(bytes.error());
      return std::nullopt;  // a damaged result is recomputed, not reused
    }
    Artifact a;
    a.hash = rec.hash.hex();
    a.data = std::move(*bytes);
    out.artifacts.emplace(rec.name, std::move(a));
    ids.emplace(rec.name, rec.id);
  }
  hits_[memoKey] = std::move(ids);
  return out;
}

void WorkspaceResultStore::reused(const TaskDescriptor& task, const std::string& memoKey) {
  // The stored outputs stand for this task's, so a task executed after it (this run) records
  // them as its inputs: lineage runs through results reused from earlier queries.
  auto it = hits_.find(memoKey);
  if (it == hits_.end()) return;
  for (const auto& [name, id] : it->second) artifacts_[{task.id, name}] = id;
}

void WorkspaceResultStore::begin(const TaskDescriptor& task, const std::string& memoKey) {
  auto key = ws::ContentHash::fromHex(memoKey);
  if (!key) {
    note(key.error());
    return;
  }
  ws::NewTask nt;
  nt.type = wsType(task.type);
  nt.memoKey = *key;
  nt.descriptorJson = canonicalJson(toJson(task));
  nt.version = versionOf(task);
  for (const auto& in : task.inputs)
    if (auto it = artifacts_.find({in.task, in.output}); it != artifacts_.end())
      nt.inputs.push_back(it->second);
  nt.running = true;  // created and started in one commit
  auto id = ws_.createTask(nt);
  if (!id) {
    note(id.error());
    return;
  }
  running_[task.id] = *id;
}

Result<TaskOutputs> WorkspaceResultStore::publish(const TaskDescriptor& task, const std::string&,
                                                  TaskOutputs outputs, const std::string& log) {
  auto it = running_.find(task.id);
  if (it == running_.end())
    return argus::fail("runtime",
                       fmt::format("task `{}` was not recorded in the workspace when "
                                   "it started: {}",
                                   task.id, firstError_ ? firstError_->text() : "unknown"));
  ws::TaskResult result;
  result.task = it->second;
  result.status = ws::TaskStatus::succeeded;
  result.log = log;
  for (auto& [name, artifact] : outputs.artifacts) {
    auto bytes = artifact.read();
    if (!bytes) return std::unexpected(bytes.error());
    // Later readers get the bytes from the store; task directories are scratch space.
    artifact.data = *bytes;
    artifact.file.reset();
    result.outputs.push_back(
        ws::NewArtifact{name, name, task.scope, std::nullopt, std::move(*bytes)});
  }
  if (auto done = ws_.finishTask(result); !done) return std::unexpected(done.error());
  auto rec = ws_.task(it->second);
  if (rec)
    for (const auto& a : rec->outputs) artifacts_[{task.id, a.name}] = a.id;
  running_.erase(it);
  return outputs;
}

void WorkspaceResultStore::fail(const TaskDescriptor& task, const std::string&, TaskState state,
                                const std::string& error, const std::string& log) {
  auto it = running_.find(task.id);
  if (it == running_.end()) return;
  ws::TaskResult result;
  result.task = it->second;
  result.status = wsStatus(state);
  result.error = error;
  result.log = log;
  if (auto done = ws_.finishTask(result); !done) note(done.error());
  running_.erase(it);
}

}  // namespace argus::runtime
