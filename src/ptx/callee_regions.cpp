// composeCalleeRegions: a depth-first walk of each kernel's direct calls. A call statement's
// calling region is the innermost region that owns it (its function's owners, shifted to the
// composed tree); a function reached under a calling region it was already composed under is not
// composed again, so two calls of one helper from one region share its regions.
#include "argus/ptx/callee_regions.h"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace argus::ptx {

std::string composePath(std::string_view outer, std::string_view inner) {
  if (outer.empty()) return std::string(inner);
  if (inner.empty()) return std::string(outer);
  return fmt::format("{}/{}", outer, inner);
}

std::string directCallee(const Statement& statement) {
  if (statement.kind != Statement::Kind::Instruction ||
      statement.instruction.baseOpcode() != "call") {
    return {};
  }
  // `call[.uni] [(ret),] target, [(params)][, prototype];`: the first non-list operand.
  for (const auto& operand : statement.instruction.operands) {
    if (operand.kind == Operand::Kind::Vector) continue;
    return operand.kind == Operand::Kind::Symbol ? operand.text : std::string();
  }
  return {};
}

bool isIndirectCall(const Statement& statement) {
  return statement.kind == Statement::Kind::Instruction &&
         statement.instruction.baseOpcode() == "call" && directCallee(statement).empty();
}

namespace {

class Composer {
 public:
  Composer(const Module& module, const std::vector<FunctionRegions>& analysis) {
    for (const Function* f : module.functions())
      if (f->hasBody) bodies_[f->name] = f;
    for (const auto& fr : analysis) regions_[fr.function] = &fr;
    findReaching();
  }

  /// Composes into `kernel` (an entry's FunctionRegions, appended to in place).
  Result<ComposedKernel> compose(FunctionRegions& kernel) {
    kernel_ = &kernel;
    out_ = {};
    done_.clear();
    stack_.clear();
    if (auto ok = walk(kernel.function, 0, std::nullopt); !ok) return std::unexpected(ok.error());
    return std::move(out_);
  }

 private:
  std::map<std::string, const Function*, std::less<>> bodies_;
  std::map<std::string, const FunctionRegions*, std::less<>> regions_;
  FunctionRegions* kernel_ = nullptr;
  ComposedKernel out_;
  std::set<std::pair<std::string, std::string>> done_;  ///< (function, context) composed
  std::vector<std::string> stack_;                      ///< functions being walked
  std::set<std::string, std::less<>> reaching_;         ///< findReaching

  /// Whether `function` or anything it calls has regions (so a walk into it can add some).
  bool reachesRegions(const std::string& function) const { return reaching_.contains(function); }

  /// reaching_: the functions with regions and every function that calls one of them, directly
  /// or not (a walk backwards over the call graph from the functions with regions).
  void findReaching() {
    std::map<std::string, std::vector<std::string>, std::less<>> callers;
    for (const auto& [name, f] : bodies_)
      for (const Statement& s : f->body)
        if (std::string callee = directCallee(s); !callee.empty()) callers[callee].push_back(name);
    std::vector<std::string> work;
    for (const auto& [name, fr] : regions_)
      if (!fr->regions.empty() && reaching_.insert(name).second) work.push_back(name);
    while (!work.empty()) {
      const std::string name = std::move(work.back());
      work.pop_back();
      for (const auto& caller : callers[name])
        if (reaching_.insert(caller).second) work.push_back(caller);
    }
  }

  void skip(const std::string& function, std::string why) {
    if (std::ranges::find(out_.skipped, function) == out_.skipped.end())
      out_.skipped.push_back(function);
    kernel_->warnings.push_back(RegionWarning{{}, {}, std::move(why)});
  }

  /// Walks `function`'s calls; its regions start at `offset` in the kernel's tree (0 for the
  /// kernel itself) and `parent` is the region it was called under.
  Result<void> walk(const std::string& function, uint32_t offset, std::optional<uint32_t> parent) {
    auto body = bodies_.find(function);
    if (body == bodies_.end()) return {};
    const FunctionRegions* own = regions_.contains(function) ? regions_.at(function) : nullptr;
    stack_.push_back(function);
    const auto& statements = body->second->body;
    for (size_t i = 0; i < statements.size(); ++i) {
      const std::string callee = directCallee(statements[i]);
      if (callee.empty() || !bodies_.contains(callee)) continue;
      if (!reachesRegions(callee)) continue;
      std::optional<uint32_t> at = parent;
      if (own != nullptr && i < own->owners.size() && !own->owners[i].empty()) {
        if (own->owners[i].size() > 1) {
          skip(callee, fmt::format("`{}` is called at PTX line {} of `{}` where several regions "
                                   "may be open (markers under a data-dependent branch), so its "
                                   "regions are not part of kernel `{}`'s tree; move the call or "
                                   "the markers so one region holds it",
                                   callee, statements[i].loc.line, function, kernel_->function));
          continue;
        }
        at = offset + own->owners[i][0];
      }
      if (std::ranges::find(stack_, callee) != stack_.end()) {
        skip(callee, fmt::format("`{}` is reached recursively from kernel `{}` (PTX line {} of "
                                 "`{}`); regions of recursive functions are not composed",
                                 callee, kernel_->function, statements[i].loc.line, function));
        continue;
      }
      auto ok = enter(callee, at);
      if (!ok) {
        stack_.pop_back();
        return ok;
      }
    }
    stack_.pop_back();
    return {};
  }

  /// Composes `callee`'s regions under `at` (once per context) and walks its calls.
  Result<void> enter(const std::string& callee, std::optional<uint32_t> at) {
    const std::string context = at ? kernel_->regions[*at].path : std::string();
    if (!done_.emplace(callee, context).second) return {};
    const FunctionRegions* fr = regions_.contains(callee) ? regions_.at(callee) : nullptr;
    const auto first = static_cast<uint32_t>(kernel_->regions.size());
    const auto count = static_cast<uint32_t>(fr == nullptr ? 0 : fr->regions.size());
    if (kernel_->regions.size() + count > kMaxRegionsPerFunction)
      return fail("regions", fmt::format("kernel `{}` with the regions of the functions it calls "
                                         "has more than {} regions (at `{}`)",
                                         kernel_->function, kMaxRegionsPerFunction, callee));
    for (uint32_t r = 0; r < count; ++r) {
      Region region = fr->regions[r];
      region.path = composePath(context, region.path);
      if (region.path.size() > kMaxRegionPathLength)
        return fail("regions", fmt::format("kernel `{}`: the path of `{}`'s region `{}` under `{}` "
                                           "is longer than {} bytes",
                                           kernel_->function, callee, fr->regions[r].path, context,
                                           kMaxRegionPathLength));
      region.id = regionId(kernel_->function, region.path);
      region.parent = region.parent ? std::optional(first + *region.parent) : at;
      for (auto& child : region.children) child += first;
      if (!fr->regions[r].parent && at) kernel_->regions[*at].children.push_back(first + r);
      kernel_->regions.push_back(std::move(region));
    }
    if (count > 0) out_.instances.push_back(CalleeInstance{callee, context, at, first, count});
    return walk(callee, first, at);
  }
};

}  // namespace

Result<std::map<std::string, ComposedKernel>> composeCalleeRegions(
    const Module& module, std::vector<FunctionRegions>& analysis) {
  Composer composer(module, analysis);
  std::map<std::string, ComposedKernel> out;
  // Compose from each kernel's own tree: the callees' FunctionRegions are read, never changed,
  // and an entry is never another's callee.
  for (auto& fr : analysis) {
    if (!fr.isEntry) continue;
    auto composed = composer.compose(fr);
    if (!composed) return std::unexpected(composed.error());
    if (!composed->instances.empty() || !composed->skipped.empty())
      out[fr.function] = std::move(*composed);
  }
  return out;
}

}  // namespace argus::ptx
