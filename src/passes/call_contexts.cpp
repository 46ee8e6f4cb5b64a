#include "call_contexts.h"

#include <deque>
#include <utility>

namespace argus::passes {
namespace {

/// Recursion through regions makes paths grow without end; this many components stop it.
constexpr size_t kMaxDepth = 64;

size_t depth(const std::string& path) {
  if (path.empty()) return 0;
  size_t n = 1;
  for (char c : path) n += c == '/';
  return n;
}

}  // namespace

std::vector<std::vector<std::string>> localOwnerPaths(const ptx::Function& function,
                                                      const ptx::FunctionRegions* regions) {
  std::vector<std::vector<std::string>> out(function.body.size(), std::vector<std::string>{""});
  if (regions == nullptr) return out;
  for (size_t i = 0; i < function.body.size() && i < regions->owners.size(); ++i) {
    if (regions->owners[i].empty()) continue;
    out[i].clear();
    for (uint32_t r : regions->owners[i]) out[i].push_back(regions->regions[r].path);
  }
  return out;
}

CallContexts analyzeCallContexts(
    const ptx::Module& module, const std::map<std::string, const ptx::FunctionRegions*>& regions) {
  std::map<std::string, const ptx::Function*> bodies;
  for (const ptx::Function* f : module.functions()) {
    if (f->hasBody) bodies[f->name] = f;
  }
  CallContexts result;
  std::deque<std::pair<std::string, Owner>> work;
  for (const auto& [name, f] : bodies) {
    if (!f->isEntry) continue;
    Owner root{name, ""};
    result.contexts[name].insert(root);
    work.emplace_back(name, root);
  }
  std::map<std::string, std::vector<std::vector<std::string>>> localCache;
  while (!work.empty()) {
    auto [name, context] = std::move(work.front());
    work.pop_front();
    const ptx::Function& f = *bodies.at(name);
    auto cached = localCache.find(name);
    if (cached == localCache.end()) {
      auto found = regions.find(name);
      cached =
          localCache
              .emplace(name, localOwnerPaths(f, found == regions.end() ? nullptr : found->second))
              .first;
    }
    for (size_t i = 0; i < f.body.size(); ++i) {
      const std::string callee = directCallee(f.body[i]);
      if (callee.empty() || !bodies.contains(callee) || bodies.at(callee)->isEntry) continue;
      for (const std::string& local : cached->second[i]) {
        Owner next{context.kernel, composePath(context.region, local)};
        if (depth(next.region) > kMaxDepth) {
          result.truncated.insert(callee);
          continue;
        }
        if (result.contexts[callee].insert(next).second) work.emplace_back(callee, next);
      }
    }
  }
  return result;
}

std::vector<OwnerSet> statementOwners(const ptx::Function& function,
                                      const ptx::FunctionRegions* regions,
                                      const OwnerSet& contexts) {
  const auto local = localOwnerPaths(function, regions);
  std::vector<OwnerSet> out(function.body.size());
  for (size_t i = 0; i < function.body.size(); ++i) {
    for (const Owner& context : contexts) {
      for (const std::string& path : local[i]) {
        out[i].insert(Owner{context.kernel, composePath(context.region, path)});
      }
    }
  }
  return out;
}

}  // namespace argus::passes
