#include "argus/runtime/executor.h"

#include <fmt/format.h>

#include "argus/support/process.h"

namespace argus::runtime {

Artifact Artifact::fromData(std::string bytes) {
  Artifact a;
  a.hash = contentHash(bytes);
  a.data = std::move(bytes);
  return a;
}

Result<Artifact> Artifact::fromFile(const std::filesystem::path& path) {
  auto bytes = readFile(path);
  if (!bytes) return std::unexpected(bytes.error());
  Artifact a;
  a.hash = contentHash(*bytes);
  a.file = path;
  return a;
}

Result<std::string> Artifact::read() const {
  if (file) return readFile(*file);
  return data;
}

Result<std::string> TaskContext::readInput(std::string_view name,
                                           std::string_view component) const {
  auto it = inputs.find(std::string(name));
  if (it == inputs.end())
    return fail(std::string(component), fmt::format("task `{}` has no `{}` input", task.id, name));
  return it->second.read();
}

Result<void> ExecutorRegistry::add(ExecutorRecord record) {
  if (record.name.empty() || !record.executor)
    return fail("runtime", "an executor record needs a name and an executor");
  if (records_.contains(record.name))
    return fail("runtime", fmt::format("executor `{}` is registered twice", record.name));
  std::string name = record.name;
  records_.emplace(std::move(name), std::move(record));
  return {};
}

Executor* ExecutorRegistry::find(const std::string& name) const {
  auto it = records_.find(name);
  return it == records_.end() ? nullptr : it->second.executor.get();
}

std::string_view ExecutorRegistry::version(const std::string& name) const {
  auto it = records_.find(name);
  return it == records_.end() ? std::string_view{} : std::string_view{it->second.version};
}

std::vector<const ExecutorRecord*> ExecutorRegistry::records() const {
  std::vector<const ExecutorRecord*> out;
  for (const auto& [name, record] : records_) out.push_back(&record);
  return out;
}

}  // namespace argus::runtime
