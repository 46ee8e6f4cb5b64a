// clone_shared_callees: the mapping variant's exact ownership of shared callees
// (docs/architecture.md "Dynamic ownership").
//
// A `.func` reached from several calling contexts (regions of one kernel, or several kernels) has
// one SASS body whose PCs no static map can split between its callers, and call-count weighting is
// wrong when the callee behaves differently per caller. This pass gives every calling context its
// own copy: a copy named `<callee>__argus_<id>` per context, <id> being the region ID
// (ptx::regionId) of the calling context's full path, with the call sites of that context
// rewritten to it, transitively (a copy's own calls go to copies of its context). Afterwards every
// PC of the build has exactly one owning (kernel, region path), except where the calling context
// is itself ambiguous at run time (a call site owned by several regions because markers sit under
// data-dependent branches): such a call site can only call one copy, which keeps several owners,
// and the clone map lists it under `unresolved` with the reason.
//
// Statement indices are unchanged in every body (only call operands change), so a copy's
// statement i is the original's statement i: paint_ptx, run after this pass, records for each
// painted instruction its origin (original function, statement), which is how the mapping run's
// counts are joined back to the reference build (synthesis/attribution.h).
//
// Must run before paint_ptx: copies of painted bodies would carry the original's paint lines and
// lose the calling context. Indirect calls are counted (statistic) and left alone.
//
// Clone map (TransformResult::cloneMap, `argus_clone_map 1`):
//   {"format": "argus_clone_map 1",
//    "functions": {"<name in the variant>": {"original": "...", "owners": [{"kernel", "region"}],
//                                             "cloned": true|false}, ...},
//    "unresolved": [{"function": "...", "owners": [...], "reason": "..."}]}
// `functions` lists every non-entry function reached from an entry, copied or not.
#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "argus/ptx/regions.h"
#include "call_contexts.h"
#include "pass.h"

namespace argus::passes {
namespace {

constexpr std::string_view kCloneInfix = "__argus_";
/// Guards against recursion through regions, where each level adds a path component.
constexpr size_t kMaxInstances = 4096;

nlohmann::json ownersJson(const OwnerSet& owners) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& o : owners) out.push_back({{"kernel", o.kernel}, {"region", o.region}});
  return out;
}

/// One body the variant will hold: a function under one set of calling contexts.
struct Instance {
  std::string function;
  OwnerSet contexts;
  std::string name;                           ///< Name in the variant.
  std::map<size_t, size_t> callTargets = {};  ///< Call statement -> callee instance.
};

/// Suffix for a copy: the region ID of its context; for an ambiguous set, the ID of all of them.
std::string cloneSuffix(const OwnerSet& contexts) {
  if (contexts.size() == 1) {
    const Owner& o = *contexts.begin();
    return ptx::regionId(o.kernel, o.region);
  }
  std::string joined;
  for (const auto& o : contexts) joined += ptx::regionId(o.kernel, o.region) + "|";
  return ptx::regionId("argus-ambiguous", joined);
}

class CloneSharedCalleesPass final : public Pass {
 public:
  std::string_view name() const override { return "clone_shared_callees"; }
  std::string_view description() const override {
    return "copy every .func reached from several calling regions once per calling region and "
           "rewrite the calls, so each SASS PC has one owner (the mapping variant; run before "
           "paint_ptx)";
  }

  Result<void> run(ptx::Module& module, const TransformOptions& /*options*/,
                   TransformResult& result) override {
    for (const auto& item : module.items) {
      if (item.kind == ptx::TopLevel::Kind::Directive && item.directive.name == ".file" &&
          item.directive.text.find("\"argus-paint\"") != std::string::npos) {
        return fail("passes", fmt::format("{}: module is already painted; run "
                                          "clone_shared_callees before paint_ptx",
                                          module.fileName));
      }
    }
    auto regions = ptx::analyzeRegions(module);
    if (!regions) return std::unexpected(regions.error());
    std::map<std::string, const ptx::FunctionRegions*> regionsByFunction;
    for (const auto& fr : *regions) regionsByFunction[fr.function] = &fr;
    std::map<std::string, const ptx::Function*> bodies;
    for (const ptx::Function* f : module.functions()) {
      if (f->hasBody) bodies[f->name] = f;
    }

    // Instances, discovered from the entries along call sites.
    std::vector<Instance> instances;
    std::map<std::pair<std::string, OwnerSet>, size_t> index;
    std::deque<size_t> work;
    for (const auto& [name, f] : bodies) {
      if (!f->isEntry) continue;
      index[{name, {Owner{name, ""}}}] = instances.size();
      instances.push_back(Instance{name, {Owner{name, ""}}, name});
      work.push_back(instances.size() - 1);
    }
    nlohmann::json unresolved = nlohmann::json::array();
    while (!work.empty()) {
      const size_t at = work.front();
      work.pop_front();
      const ptx::Function& f = *bodies.at(instances[at].function);
      auto found = regionsByFunction.find(f.name);
      const auto owners = statementOwners(
          f, found == regionsByFunction.end() ? nullptr : found->second, instances[at].contexts);
      for (size_t i = 0; i < f.body.size(); ++i) {
        if (isIndirectCall(f.body[i])) ++indirectCalls_;
        const std::string callee = directCallee(f.body[i]);
        if (callee.empty() || !bodies.contains(callee) || bodies.at(callee)->isEntry) continue;
        auto key = std::make_pair(callee, owners[i]);
        auto existing = index.find(key);
        if (existing == index.end()) {
          if (instances.size() >= kMaxInstances) {
            return fail("passes", fmt::format("{}: more than {} calling contexts (recursion "
                                              "through regions?) reaching `{}`",
                                              module.fileName, kMaxInstances, callee));
          }
          existing = index.emplace(key, instances.size()).first;
          instances.push_back(Instance{callee, owners[i], callee});
          work.push_back(instances.size() - 1);
          if (owners[i].size() > 1) {
            unresolved.push_back(
                {{"function", callee},
                 {"owners", ownersJson(owners[i])},
                 {"reason",
                  fmt::format("called from {} statement {}, which can run under {} regions "
                              "(markers under data-dependent branches); one call site can only "
                              "call one copy, so these PCs keep several owners",
                              f.name, i, owners[i].size())}});
          }
        }
        instances[at].callTargets[i] = existing->second;
      }
    }

    // Names: a function with one instance keeps its name, otherwise one copy per instance.
    std::map<std::string, std::vector<size_t>> byFunction;
    for (size_t i = 0; i < instances.size(); ++i) byFunction[instances[i].function].push_back(i);
    std::set<std::string> taken;
    for (const auto& [name, f] : bodies) taken.insert(name);
    for (const auto& [function, list] : byFunction) {
      if (list.size() == 1) continue;
      ++functionsCloned_;
      for (size_t i : list) {
        std::string name =
            fmt::format("{}{}{}", function, kCloneInfix, cloneSuffix(instances[i].contexts));
        if (!taken.insert(name).second) {
          return fail("passes",
                      fmt::format("{}: copy name `{}` is already taken", module.fileName, name));
        }
        instances[i].name = std::move(name);
        ++clones_;
      }
    }

    auto rewrite = [&](ptx::Function& function, const Instance& instance) {
      for (const auto& [statement, target] : instance.callTargets) {
        for (auto& operand : function.body[statement].instruction.operands) {
          if (operand.kind == ptx::Operand::Kind::Vector) continue;
          if (operand.text != instances[target].name) {
            operand.text = instances[target].name;
            ++callSitesRewritten_;
          }
          break;
        }
      }
    };

    // The clone map, while `bodies` still points into the module's items (the rebuild below
    // moves them).
    nlohmann::json functions = nlohmann::json::object();
    for (const auto& instance : instances) {
      if (bodies.at(instance.function)->isEntry) continue;
      functions[instance.name] = {{"original", instance.function},
                                  {"owners", ownersJson(instance.contexts)},
                                  {"cloned", instance.name != instance.function}};
    }

    // Rebuild the module: each copied function's definition (and any prototype) is replaced by
    // its copies in place, so declaration order still precedes every use.
    std::vector<ptx::TopLevel> items;
    items.reserve(module.items.size() + instances.size());
    for (auto& item : module.items) {
      if (item.kind != ptx::TopLevel::Kind::Function) {
        items.push_back(std::move(item));
        continue;
      }
      auto found = byFunction.find(item.function.name);
      if (found == byFunction.end()) {
        items.push_back(std::move(item));
        continue;
      }
      const auto& list = found->second;
      if (list.size() == 1) {
        if (item.function.hasBody) rewrite(item.function, instances[list.front()]);
        items.push_back(std::move(item));
        continue;
      }
      for (size_t i : list) {
        ptx::TopLevel copy = item;
        copy.function.name = instances[i].name;
        // A copy is private to this module even when the original was visible.
        if (copy.function.linkage == ".visible" || copy.function.linkage == ".weak") {
          copy.function.linkage.clear();
        }
        if (copy.function.hasBody) rewrite(copy.function, instances[i]);
        items.push_back(std::move(copy));
      }
      // An externally visible original stays callable from outside (no caller here owns it).
      if (item.function.linkage == ".visible" || item.function.linkage == ".weak" ||
          item.function.linkage == ".extern") {
        items.push_back(std::move(item));
      }
    }
    module.items = std::move(items);

    unresolved_ += unresolved.size();
    result.cloneMap = {{"format", "argus_clone_map 1"},
                       {"functions", std::move(functions)},
                       {"unresolved", std::move(unresolved)}};
    return {};
  }

 private:
  Statistic functionsCloned_{this, "functions_cloned", "functions copied per calling context"};
  Statistic clones_{this, "clones", "copies made"};
  Statistic callSitesRewritten_{this, "call_sites_rewritten", "call sites redirected to a copy"};
  Statistic indirectCalls_{this, "indirect_calls", "calls through a register (left alone)"};
  Statistic unresolved_{this, "unresolved", "copies that keep several owners"};
};

}  // namespace

std::unique_ptr<Pass> createCloneSharedCalleesPass() {
  return std::make_unique<CloneSharedCalleesPass>();
}

}  // namespace argus::passes
