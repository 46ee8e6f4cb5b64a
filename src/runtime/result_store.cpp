#include "argus/runtime/result_store.h"

namespace argus::runtime {

std::string_view toString(TaskState state) {
  switch (state) {
    case TaskState::Pending:
      return "pending";
    case TaskState::Succeeded:
      return "succeeded";
    case TaskState::Memoized:
      return "memoized";
    case TaskState::Failed:
      return "failed";
    case TaskState::TimedOut:
      return "timed_out";
    case TaskState::Skipped:
      return "skipped";
    case TaskState::Cancelled:
      return "cancelled";
  }
  return "?";
}

std::optional<TaskOutputs> MemoryResultStore::lookup(const std::string& memoKey) {
  std::lock_guard lock(mutex_);
  auto it = memo_.find(memoKey);
  if (it == memo_.end()) return std::nullopt;
  return it->second;
}

void MemoryResultStore::begin(const TaskDescriptor&, const std::string&) {
  std::lock_guard lock(mutex_);
  ++begun_;
}

Result<TaskOutputs> MemoryResultStore::publish(const TaskDescriptor& task,
                                               const std::string& memoKey, TaskOutputs outputs,
                                               const std::string& log) {
  // Task directories are scratch space: keep the bytes, not the paths.
  for (auto& [name, artifact] : outputs.artifacts) {
    if (!artifact.file) continue;
    auto bytes = artifact.read();
    if (!bytes) return std::unexpected(bytes.error());
    artifact.data = std::move(*bytes);
    artifact.file.reset();
  }
  std::lock_guard lock(mutex_);
  memo_[memoKey] = outputs;
  records_.push_back({task.id, memoKey, TaskState::Succeeded, {}, log});
  return outputs;
}

void MemoryResultStore::fail(const TaskDescriptor& task, const std::string& memoKey,
                             TaskState state, const std::string& error, const std::string& log) {
  std::lock_guard lock(mutex_);
  records_.push_back({task.id, memoKey, state, error, log});
}

std::vector<MemoryResultStore::Record> MemoryResultStore::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

std::size_t MemoryResultStore::executions() const {
  std::lock_guard lock(mutex_);
  return begun_;
}

}  // namespace argus::runtime
