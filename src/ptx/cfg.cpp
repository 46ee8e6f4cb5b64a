#include "argus/ptx/cfg.h"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

namespace argus::ptx {
namespace {

bool isUnconditional(const Instruction& inst) {
  return !inst.guard.has_value();
}

void addEdge(ControlFlowGraph& cfg, uint32_t from, uint32_t to) {
  auto& succ = cfg.blocks[from].successors;
  if (std::find(succ.begin(), succ.end(), to) != succ.end()) return;
  succ.push_back(to);
  cfg.blocks[to].predecessors.push_back(from);
}

}  // namespace

bool endsFlow(std::string_view base) {
  return base == "bra" || base == "brx" || base == "ret" || base == "exit" || base == "trap";
}

Result<ControlFlowGraph> buildControlFlowGraph(const Function& function,
                                               std::string_view fileName) {
  const auto& body = function.body;
  ControlFlowGraph cfg;
  cfg.blockOf.assign(body.size(), 0);

  // Scope tree: scopeOf[i] is the innermost `{ }` scope holding statement i (0 = function).
  std::vector<uint32_t> scopeOf(body.size(), 0);
  std::vector<uint32_t> scopeParent{0};
  std::map<std::pair<uint32_t, std::string>, size_t> labels;  // (scope, name) -> statement
  std::vector<std::string> branchTargetLists;                 // labels named by `.branchtargets`
  {
    std::vector<uint32_t> open{0};
    for (size_t i = 0; i < body.size(); ++i) {
      const auto& s = body[i];
      if (s.kind == Statement::Kind::ScopeBegin) {
        scopeParent.push_back(open.back());
        open.push_back(static_cast<uint32_t>(scopeParent.size() - 1));
      }
      scopeOf[i] = open.back();
      if (s.kind == Statement::Kind::ScopeEnd && open.size() > 1) open.pop_back();
      if (s.kind == Statement::Kind::Label) labels.emplace(std::pair{open.back(), s.text}, i);
      if (s.kind == Statement::Kind::Directive && s.directive.name == ".branchtargets")
        branchTargetLists.push_back(s.directive.text);
    }
  }
  auto resolve = [&](uint32_t scope, const std::string& name) -> std::optional<size_t> {
    for (;;) {
      if (auto it = labels.find({scope, name}); it != labels.end()) return it->second;
      if (scope == 0) return std::nullopt;
      scope = scopeParent[scope];
    }
  };

  // Leaders: the first statement, every label, and every statement after a block ender.
  std::vector<bool> leader(body.size() + 1, false);
  leader[0] = true;
  for (size_t i = 0; i < body.size(); ++i) {
    const auto& s = body[i];
    if (s.kind == Statement::Kind::Label) leader[i] = true;
    if (s.kind == Statement::Kind::Instruction && endsFlow(s.instruction.baseOpcode()))
      leader[i + 1] = true;
  }
  for (size_t i = 0; i < body.size(); ++i) {
    if (leader[i]) {
      if (!cfg.blocks.empty()) cfg.blocks.back().end = i;
      cfg.blocks.push_back(BasicBlock{i, body.size(), {}, {}});
    }
    cfg.blockOf[i] = static_cast<uint32_t>(cfg.blocks.size() - 1);
  }
  if (cfg.blocks.empty()) cfg.blocks.push_back(BasicBlock{0, 0, {}, {}});

  for (uint32_t b = 0; b < cfg.blocks.size(); ++b) {
    const auto& block = cfg.blocks[b];
    bool fallsThrough = true;
    // The block's last instruction decides its successors (trailing comments don't count).
    for (size_t i = block.end; i-- > block.begin;) {
      const auto& s = body[i];
      if (s.kind != Statement::Kind::Instruction) continue;
      const auto& inst = s.instruction;
      const std::string base = inst.baseOpcode();
      if (!endsFlow(base)) break;
      fallsThrough = !isUnconditional(inst);
      if (base == "bra") {
        const Operand* target = inst.operands.empty() ? nullptr : &inst.operands.back();
        if (target == nullptr || target->kind != Operand::Kind::Symbol)
          return fail("ptx", fmt::format("{}:{}:{}: `{}` needs a label operand", fileName,
                                         s.loc.line, s.loc.column, inst.opcode));
        auto to = resolve(scopeOf[i], target->text);
        if (!to)
          return fail("ptx", fmt::format("{}:{}:{}: branch to unknown label `{}` in `{}`", fileName,
                                         s.loc.line, s.loc.column, target->text, function.name));
        addEdge(cfg, b, cfg.blockOf[*to]);
      } else if (base == "brx") {
        // brx.idx jumps to one label of a .branchtargets list; take every listed label.
        for (const auto& list : branchTargetLists) {
          size_t pos = 0;
          while (pos < list.size()) {
            size_t comma = list.find(',', pos);
            std::string name = list.substr(pos, comma == std::string::npos ? comma : comma - pos);
            name.erase(0, name.find_first_not_of(" \t"));
            name.erase(name.find_last_not_of(" \t") + 1);
            if (auto to = resolve(scopeOf[i], name)) addEdge(cfg, b, cfg.blockOf[*to]);
            if (comma == std::string::npos) break;
            pos = comma + 1;
          }
        }
      }
      break;
    }
    if (fallsThrough && b + 1 < cfg.blocks.size()) addEdge(cfg, b, b + 1);
  }
  return cfg;
}

DominatorTree::DominatorTree(const ControlFlowGraph& cfg) {
  const size_t n = cfg.blocks.size();
  enter_.assign(n, 0);
  exit_.assign(n, 0);
  if (n == 0) return;
  // Reverse postorder of the reachable blocks, by an explicit-stack DFS.
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> order, rank(n, kNone);
  std::vector<bool> seen(n, false);
  std::vector<std::pair<uint32_t, size_t>> stack{{0, 0}};
  seen[0] = true;
  while (!stack.empty()) {
    auto& [b, next] = stack.back();
    if (next < cfg.blocks[b].successors.size()) {
      const uint32_t s = cfg.blocks[b].successors[next++];
      if (!seen[s]) {
        seen[s] = true;
        stack.emplace_back(s, 0);
      }
      continue;
    }
    order.push_back(b);
    stack.pop_back();
  }
  std::reverse(order.begin(), order.end());
  for (uint32_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  std::vector<uint32_t> idom(n, kNone);
  idom[0] = 0;
  auto intersect = [&](uint32_t a, uint32_t b) {
    while (a != b) {
      while (rank[a] > rank[b]) a = idom[a];
      while (rank[b] > rank[a]) b = idom[b];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t b : order) {
      if (b == 0) continue;
      uint32_t next = kNone;
      for (uint32_t p : cfg.blocks[b].predecessors)
        if (idom[p] != kNone) next = next == kNone ? p : intersect(p, next);
      if (next != idom[b]) {
        idom[b] = next;
        changed = true;
      }
    }
  }
  // DFS times over the dominator tree: a dominates b iff b's interval nests in a's.
  std::vector<std::vector<uint32_t>> children(n);
  for (uint32_t b : order)
    if (b != 0) children[idom[b]].push_back(b);
  uint32_t clock = 0;
  std::vector<std::pair<uint32_t, size_t>> walk{{0, 0}};
  enter_[0] = ++clock;
  while (!walk.empty()) {
    auto& [b, next] = walk.back();
    if (next < children[b].size()) {
      const uint32_t c = children[b][next++];
      enter_[c] = ++clock;
      walk.emplace_back(c, 0);
      continue;
    }
    exit_[b] = ++clock;
    walk.pop_back();
  }
}

bool DominatorTree::dominates(uint32_t a, uint32_t b) const {
  return enter_[a] != 0 && enter_[b] != 0 && enter_[a] <= enter_[b] && exit_[b] <= exit_[a];
}

std::string cfgToDot(const Function& function, const ControlFlowGraph& cfg) {
  std::string out =
      fmt::format("digraph \"{}\" {{\n  node [shape=box fontname=monospace];\n", function.name);
  for (size_t b = 0; b < cfg.blocks.size(); ++b) {
    const auto& block = cfg.blocks[b];
    std::string label = fmt::format("B{}", b);
    if (block.begin < block.end && function.body[block.begin].kind == Statement::Kind::Label)
      label += " " + function.body[block.begin].text;
    if (block.begin < block.end)
      label += fmt::format("\\nlines {}-{}", function.body[block.begin].loc.line,
                           function.body[block.end - 1].loc.line);
    out += fmt::format("  B{} [label=\"{}\"];\n", b, label);
    for (uint32_t s : block.successors) out += fmt::format("  B{} -> B{};\n", b, s);
  }
  out += "}\n";
  return out;
}

}  // namespace argus::ptx
