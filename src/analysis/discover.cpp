// Async-op discovery over the flat PTX IR (see include/argus/analysis/discover.h).
#include "argus/analysis/discover.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "argus/ptx/cfg.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/regions.h"

namespace argus::analysis {
namespace {

using ptx::Operand;
using ptx::Statement;

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.starts_with(prefix);
}
bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

std::string operandText(const Operand& op) {
  switch (op.kind) {
    case Operand::Kind::Register:
      return (op.negated ? "!" : "") + op.text;
    case Operand::Kind::Immediate:
    case Operand::Kind::Expression:
      return op.text;
    case Operand::Kind::Sink:
      return "_";
    case Operand::Kind::Symbol:
      return op.offset == 0 ? op.text
                            : op.text + (op.offset > 0 ? "+" : "") + std::to_string(op.offset);
    case Operand::Kind::Address: {
      std::string s = "[";
      for (size_t i = 0; i < op.elements.size(); ++i) {
        if (i > 0) s += ", ";
        s += operandText(op.elements[i]);
        if (i == 0 && op.offset != 0) s += (op.offset > 0 ? "+" : "") + std::to_string(op.offset);
      }
      return s + "]";
    }
    case Operand::Kind::Vector: {
      if (op.text == "|") {
        std::string s;
        for (size_t i = 0; i < op.elements.size(); ++i)
          s += (i > 0 ? "|" : "") + operandText(op.elements[i]);
        return s;
      }
      std::string s = op.text == "(" ? "(" : "{";
      for (size_t i = 0; i < op.elements.size(); ++i)
        s += (i > 0 ? ", " : "") + operandText(op.elements[i]);
      return s + (op.text == "(" ? ")" : "}");
    }
  }
  return op.text;
}

std::optional<OpKind> classify(std::string_view op) {
  if (startsWith(op, "cp.async.bulk.tensor.") || startsWith(op, "cp.reduce.async.bulk.tensor.")) {
    size_t shared = op.find(".shared");
    size_t global = op.find(".global");
    if (shared == std::string_view::npos || global == std::string_view::npos) return std::nullopt;
    return shared < global ? OpKind::TmaLoad : OpKind::TmaStore;
  }
  if (startsWith(op, "cp.async.bulk.")) {
    if (startsWith(op, "cp.async.bulk.commit_group") ||
        startsWith(op, "cp.async.bulk.wait_group") || startsWith(op, "cp.async.bulk.prefetch"))
      return std::nullopt;
    return OpKind::BulkCopy;
  }
  if (startsWith(op, "cp.async.ca.") || startsWith(op, "cp.async.cg.")) return OpKind::CpAsync;
  if (startsWith(op, "wgmma.mma_async")) return OpKind::Wgmma;
  return std::nullopt;
}

enum class GroupRole : uint8_t { None, Commit, Wait };

GroupRole groupRole(std::string_view op, std::string_view family) {
  if (family == "cp.async") {
    if (op == "cp.async.commit_group") return GroupRole::Commit;
    if (startsWith(op, "cp.async.wait_group") || startsWith(op, "cp.async.wait_all"))
      return GroupRole::Wait;
  } else if (family == "cp.async.bulk") {
    if (startsWith(op, "cp.async.bulk.commit_group")) return GroupRole::Commit;
    if (startsWith(op, "cp.async.bulk.wait_group")) return GroupRole::Wait;
  } else if (family == "wgmma") {
    if (startsWith(op, "wgmma.commit_group")) return GroupRole::Commit;
    if (startsWith(op, "wgmma.wait_group")) return GroupRole::Wait;
  }
  return GroupRole::None;
}

/// Whether an instruction writes its first operand (most PTX instructions do).
bool definesFirstOperand(const ptx::Instruction& inst) {
  static constexpr std::string_view kNonDefining[] = {"st",
                                                      "bar",
                                                      "barrier",
                                                      "bra",
                                                      "brx",
                                                      "call",
                                                      "ret",
                                                      "exit",
                                                      "trap",
                                                      "prefetch",
                                                      "prefetchu",
                                                      "red",
                                                      "cp",
                                                      "membar",
                                                      "fence",
                                                      "nanosleep",
                                                      "stmatrix",
                                                      "setmaxnreg",
                                                      "griddepcontrol",
                                                      "pmevent",
                                                      "applypriority",
                                                      "discard",
                                                      "tensormap",
                                                      "st.async",
                                                      "multimem",
                                                      "wgmma"};
  std::string base = inst.baseOpcode();
  if (base == "bar" && startsWith(inst.opcode, "bar.red")) return true;
  if (base == "wgmma") return startsWith(inst.opcode, "wgmma.mma_async");
  if (base == "multimem") return startsWith(inst.opcode, "multimem.ld_reduce");
  return std::ranges::find(kNonDefining, std::string_view(base)) == std::end(kNonDefining);
}

void collectDefs(const Operand& op, size_t index,
                 std::unordered_map<std::string, std::vector<size_t>>& defs) {
  if (op.kind == Operand::Kind::Register) {
    defs[op.text].push_back(index);
  } else if (op.kind == Operand::Kind::Vector && op.text != "(") {
    for (const Operand& e : op.elements) collectDefs(e, index, defs);
  }
}

/// Value of an operand as base symbol + constant + dynamic registers, or opaque.
struct Value {
  enum class Kind : uint8_t { Const, Based, Opaque };
  Kind kind = Kind::Opaque;
  std::string base;
  int64_t offset = 0;
  std::vector<std::string> dyn;
  std::string reg;  ///< Opaque: the register whose value is unknown (empty: not a register).
  std::string reason;
};

class Resolver {
 public:
  explicit Resolver(const ptx::Function& function) : function_(function) {
    for (size_t i = 0; i < function.body.size(); ++i) {
      const Statement& s = function.body[i];
      if (s.kind != Statement::Kind::Instruction || s.instruction.operands.empty()) continue;
      if (!definesFirstOperand(s.instruction)) continue;
      collectDefs(s.instruction.operands[0], i, defs_);
    }
  }

  /// Statements that define `reg` (nullptr: none).
  const std::vector<size_t>* definitions(const std::string& reg) const {
    auto it = defs_.find(reg);
    return it == defs_.end() ? nullptr : &it->second;
  }

  size_t definitionCount(const std::string& reg) const {
    auto it = defs_.find(reg);
    return it == defs_.end() ? 0 : it->second.size();
  }

  ResolvedAddress resolveAddress(const Operand& op) {
    ResolvedAddress out;
    out.text = operandText(op);
    chain_.clear();
    if (op.kind != Operand::Kind::Address || op.elements.empty()) {
      out.reason = "operand is not an address";
      return out;
    }
    if (op.elements.size() > 1) {
      out.reason = "address has several parts";
      return out;
    }
    Value v = operand(op.elements[0], 0);
    out.chain = chain_;
    if (v.kind == Value::Kind::Opaque) {
      out.reason = v.reason;
      return out;
    }
    out.resolved = true;
    out.base = v.base;
    out.offset = v.offset + op.offset;
    out.dynamicTerms = v.dyn;
    std::ranges::sort(out.dynamicTerms);
    return out;
  }

 private:
  Value opaque(std::string reg, std::string reason) {
    Value v;
    v.reg = std::move(reg);
    v.reason = std::move(reason);
    return v;
  }

  Value operand(const Operand& op, int depth) {
    switch (op.kind) {
      case Operand::Kind::Register:
        return reg(op.text, depth);
      case Operand::Kind::Immediate: {
        if (auto n = ptx::parseSigned(op.text)) {
          Value v;
          v.kind = Value::Kind::Const;
          v.offset = *n;
          return v;
        }
        return opaque("", "immediate `" + op.text + "` is not an integer");
      }
      case Operand::Kind::Symbol: {
        Value v;
        v.kind = Value::Kind::Based;
        v.base = op.text;
        v.offset = op.offset;
        return v;
      }
      default:
        return opaque("", "operand `" + operandText(op) + "` is not a register or constant");
    }
  }

  static Value add(Value a, Value b, const std::string& self) {
    using K = Value::Kind;
    if (a.kind == K::Const && b.kind != K::Const) std::swap(a, b);
    if (a.kind == K::Based && b.kind == K::Based) {
      Value v;
      v.reg = self;
      v.reason = self + " adds two symbol-based values (" + a.base + ", " + b.base + ")";
      return v;
    }
    if (b.kind == K::Based) std::swap(a, b);
    if (b.kind == K::Const) {
      if (a.kind == K::Opaque) {
        a.reg = self;
        return a;
      }
      a.offset += b.offset;
      return a;
    }
    // b is opaque.
    if (a.kind == K::Based && !b.reg.empty()) {
      a.dyn.push_back(b.reg);
      return a;
    }
    Value v = b.kind == K::Opaque && a.kind == K::Opaque ? a : b;
    v.reg = self;
    return v;
  }

  Value reg(const std::string& name, int depth) {
    if (depth > 32) return opaque(name, "definition chain of " + name + " is too deep");
    auto it = defs_.find(name);
    if (it == defs_.end())
      return opaque(name, name +
                              " has no definition in the function (special or parameter "
                              "register)");
    if (it->second.size() != 1)
      return opaque(name, name + " has " + std::to_string(it->second.size()) +
                              " definitions (loop-carried or path-dependent value)");
    size_t index = it->second.front();
    chain_.push_back(index);
    const ptx::Instruction& inst = function_.body[index].instruction;
    std::string base = inst.baseOpcode();
    const auto& ops = inst.operands;
    if (inst.guard) return opaque(name, name + " is defined under a guard (`" + inst.opcode + "`)");
    if ((base == "mov" || base == "cvta" || base == "cvt") && ops.size() == 2) {
      Value v = operand(ops[1], depth + 1);
      if (v.kind == Value::Kind::Opaque) v.reg = name;
      return v;
    }
    if (base == "add" && ops.size() == 3)
      return add(operand(ops[1], depth + 1), operand(ops[2], depth + 1), name);
    if (base == "sub" && ops.size() == 3 && ops[2].kind == Operand::Kind::Immediate) {
      if (auto n = ptx::parseSigned(ops[2].text)) {
        Value c;
        c.kind = Value::Kind::Const;
        c.offset = -*n;
        return add(operand(ops[1], depth + 1), c, name);
      }
    }
    return opaque(name, name + " is defined by `" + inst.opcode + "`");
  }

  const ptx::Function& function_;
  std::unordered_map<std::string, std::vector<size_t>> defs_;
  std::vector<size_t> chain_;
};

const Operand* nthAddress(const ptx::Instruction& inst, size_t n, size_t* index = nullptr) {
  for (size_t i = 0; i < inst.operands.size(); ++i) {
    if (inst.operands[i].kind != Operand::Kind::Address) continue;
    if (n == 0) {
      if (index) *index = i;
      return &inst.operands[i];
    }
    --n;
  }
  return nullptr;
}

/// "" when the two addresses cannot name the same barrier.
std::string matchBarrier(const ResolvedAddress& a, const ResolvedAddress& b) {
  if (a.resolved && b.resolved) {
    if (a.base != b.base) return "";
    if (a.offset == b.offset && a.dynamicTerms == b.dynamicTerms) return "exact";
    if (!a.dynamicTerms.empty() || !b.dynamicTerms.empty()) return "may_alias";
    return "";
  }
  if (!a.resolved && !b.resolved && a.text == b.text) return "same_text";
  return "";
}

StatementRef refOf(const ptx::Function& f, size_t i) {
  return StatementRef{i, f.body[i].loc.line, f.body[i].instruction.opcode};
}

struct KernelScan {
  const ptx::Function* function = nullptr;
  const ptx::FunctionRegions* regions = nullptr;
};

/// The natural loops of a kernel's CFG, built once per kernel for the pipeline-state recovery.
/// A spin loop inside an inline-asm `{ }` (an mbarrier wait) is left out: it is not a loop of
/// the source and never carries a phase.
struct KernelLoops {
  struct Loop {
    uint32_t header = 0;
    std::vector<uint32_t> latches;
    std::vector<bool> contains;  ///< Per block.
    size_t size = 0;             ///< Blocks in the loop.
  };
  std::optional<ptx::ControlFlowGraph> cfg;
  std::unique_ptr<ptx::DominatorTree> dom;
  std::vector<Loop> loops;
  std::string error;  ///< Why there is no CFG.
};

KernelLoops buildLoops(const ptx::Function& f, std::string_view fileName) {
  KernelLoops k;
  auto cfg = ptx::buildControlFlowGraph(f, fileName);
  if (!cfg) {
    k.error = cfg.error().text();
    return k;
  }
  k.cfg = std::move(*cfg);
  k.dom = std::make_unique<ptx::DominatorTree>(*k.cfg);
  std::vector<int> depth(f.body.size(), 0);  // `{ }` nesting of every statement
  for (size_t i = 0, d = 0; i < f.body.size(); ++i) {
    if (f.body[i].kind == Statement::Kind::ScopeEnd && d > 0) --d;
    depth[i] = static_cast<int>(d);
    if (f.body[i].kind == Statement::Kind::ScopeBegin) ++d;
  }
  const auto& blocks = k.cfg->blocks;
  std::map<uint32_t, KernelLoops::Loop> byHeader;
  for (uint32_t b = 0; b < blocks.size(); ++b)
    for (uint32_t h : blocks[b].successors) {
      if (!k.dom->dominates(h, b) || depth[blocks[h].begin] > 0) continue;
      KernelLoops::Loop& loop = byHeader[h];
      if (loop.contains.empty()) {
        loop.header = h;
        loop.contains.assign(blocks.size(), false);
        loop.contains[h] = true;
      }
      loop.latches.push_back(b);
      std::vector<uint32_t> work{b};
      while (!work.empty()) {
        const uint32_t x = work.back();
        work.pop_back();
        if (loop.contains[x]) continue;
        loop.contains[x] = true;
        for (uint32_t p : blocks[x].predecessors) work.push_back(p);
      }
    }
  for (auto& [h, loop] : byHeader) {
    loop.size = static_cast<size_t>(std::ranges::count(loop.contains, true));
    k.loops.push_back(std::move(loop));
  }
  return k;
}

/// Recovers how a wait's parity operand is computed (see ParityPhase). Only single-definition
/// chains are followed, except for the toggle register itself, whose definitions must be exactly
/// initialising `mov`s plus one in-place `xor`.
class ParityProver {
 public:
  ParityProver(const ptx::Function& f, const Resolver& resolver,
               const std::map<std::string, std::string>& iterRegions, const KernelLoops& loops)
      : f_(f), resolver_(resolver), iterRegions_(iterRegions), loops_(loops) {}

  /// The `immediate`, `iteration` and `toggle` forms first (unchanged); where they fail, the
  /// pipeline-state recovery for the wait at statement `wait`.
  ParityPhase prove(const Operand& op, size_t wait) {
    ParityPhase p = proveDirect(op);
    if (p.form != "unknown" || op.kind != Operand::Kind::Register) return p;
    ParityPhase q = pipelineState(op.text, wait);
    if (q.form != "unknown") return q;
    p.reason += "; not a pipeline state: " + q.reason;
    return p;
  }

 private:
  ParityPhase proveDirect(const Operand& op) {
    ParityPhase p;
    if (op.kind == Operand::Kind::Immediate) {
      p.form = "immediate";
      p.initial = ptx::parseSigned(op.text);
      p.expression = op.text;
      return p;
    }
    if (op.kind != Operand::Kind::Register) {
      p.reason = "parity operand `" + operandText(op) + "` is not a register or immediate";
      return p;
    }
    const std::string& reg = op.text;
    const auto* defs = resolver_.definitions(reg);
    if (defs == nullptr) {
      p.reason = reg + " has no definition in the function";
      return p;
    }
    if (defs->size() > 1) return toggle(reg, *defs);
    // bit 0 of something: `and.b32 X, A, 1`.
    const ptx::Instruction* inst = single(reg, p);
    if (inst == nullptr) return p;
    if (inst->baseOpcode() != "and" || inst->operands.size() != 3 || !isImm(inst->operands[2], 1) ||
        inst->operands[1].kind != Operand::Kind::Register) {
      p.reason = reg + " is defined by `" + inst->opcode + "`, not `and ..., 1`";
      return p;
    }
    std::string a = inst->operands[1].text;
    // Optional complement: `not.b32 A, B` or `xor.b32 A, B, 1`.
    if (resolver_.definitionCount(a) == 1) {
      const ptx::Instruction* d = &f_.body[resolver_.definitions(a)->front()].instruction;
      const std::string base = d->baseOpcode();
      bool complement = (base == "not" && d->operands.size() == 2) ||
                        (base == "xor" && d->operands.size() == 3 && isImm(d->operands[2], 1));
      if (complement && !d->guard && d->operands[1].kind == Operand::Kind::Register) {
        p.chain.push_back(resolver_.definitions(a)->front());
        p.inverted = true;
        a = d->operands[1].text;
      }
    }
    // a = iteration / stages, or the iteration itself (stages 1).
    std::string iter = a;
    int64_t stages = 1;
    if (auto divided = division(a, p)) {
      iter = divided->first;
      stages = divided->second;
    }
    p.iteration = iter;
    p.stages = stages;
    p.expression = (stages == 1 ? iter : "(" + iter + " / " + std::to_string(stages) + ")") +
                   " & 1" + (p.inverted ? " ^ 1" : "");
    if (auto it = iterRegions_.find(iter); it != iterRegions_.end()) {
      p.form = "iteration";
      p.iterationRegion = it->second;
    } else {
      p.reason = iter +
                 " is not the iter= operand of any region, so the phase cannot be tied "
                 "to an iteration";
    }
    return p;
  }

  static bool isImm(const Operand& op, int64_t value) {
    if (op.kind != Operand::Kind::Immediate) return false;
    auto n = ptx::parseSigned(op.text);
    return n && *n == value;
  }

  const ptx::Instruction* single(const std::string& reg, ParityPhase& p) {
    const auto* defs = resolver_.definitions(reg);
    if (defs == nullptr || defs->size() != 1) {
      p.reason = reg + (defs == nullptr ? " has no definition"
                                        : " has " + std::to_string(defs->size()) + " definitions");
      return nullptr;
    }
    const ptx::Instruction& inst = f_.body[defs->front()].instruction;
    if (inst.guard) {
      p.reason = reg + " is defined under a guard";
      return nullptr;
    }
    p.chain.push_back(defs->front());
    return &inst;
  }

  /// `reg` = register / constant: `div.u32`, `shr.u32` by a constant, or
  /// `cvt.u32.u64(shr.u64(mul.wide.u32(I, M), s))` / `shr.u32(mul.hi.u32(I, M), s)` with a magic
  /// multiplier M = ceil(2^s / d). nullopt when no division is recognized (chain unchanged).
  std::optional<std::pair<std::string, int64_t>> division(const std::string& reg, ParityPhase& p) {
    const size_t mark = p.chain.size();
    auto undo = [&] { p.chain.resize(mark); };
    ParityPhase scratch;
    const ptx::Instruction* inst = single(reg, scratch);
    if (inst == nullptr) return std::nullopt;
    p.chain.push_back(scratch.chain.back());
    const std::string base = inst->baseOpcode();
    const auto& ops = inst->operands;
    auto regOf = [](const Operand& o) {
      return o.kind == Operand::Kind::Register ? o.text : std::string();
    };
    auto imm = [](const Operand& o) {
      return o.kind == Operand::Kind::Immediate ? ptx::parseSigned(o.text) : std::nullopt;
    };
    if (base == "div" && ops.size() == 3 && !regOf(ops[1]).empty() && imm(ops[2]) &&
        *imm(ops[2]) > 0)
      return std::pair{regOf(ops[1]), *imm(ops[2])};
    std::string shifted;
    int64_t shift = 0;
    if (base == "cvt" && ops.size() == 2 && !regOf(ops[1]).empty()) {
      const ptx::Instruction* s = single(regOf(ops[1]), scratch);
      if (s == nullptr || s->baseOpcode() != "shr" || s->operands.size() != 3 ||
          !imm(s->operands[2]) || regOf(s->operands[1]).empty()) {
        undo();
        return std::nullopt;
      }
      p.chain.push_back(scratch.chain.back());
      shifted = regOf(s->operands[1]);
      shift = *imm(s->operands[2]);
    } else if (base == "shr" && ops.size() == 3 && imm(ops[2]) && !regOf(ops[1]).empty()) {
      shifted = regOf(ops[1]);
      shift = *imm(ops[2]);
    } else {
      undo();
      return std::nullopt;
    }
    if (shift < 0 || shift > 63) {
      undo();
      return std::nullopt;
    }
    // Magic multiply feeding the shift?
    if (resolver_.definitionCount(shifted) == 1) {
      const size_t at = resolver_.definitions(shifted)->front();
      const ptx::Instruction& m = f_.body[at].instruction;
      const bool wide = m.opcode.starts_with("mul.wide.u32");
      const bool hi = m.opcode.starts_with("mul.hi.u32");
      if ((wide || hi) && !m.guard && m.operands.size() == 3 && !regOf(m.operands[1]).empty() &&
          imm(m.operands[2])) {
        const uint64_t magic = static_cast<uint32_t>(*imm(m.operands[2]));
        const int total = static_cast<int>(shift) + (hi ? 32 : 0);
        if (magic > 1 && total >= 32 && total < 64) {
          const uint64_t pow = uint64_t{1} << total;
          const uint64_t d = (pow + magic / 2) / magic;
          if (d > 1 && (pow + d - 1) / d == magic) {
            p.chain.push_back(at);
            return std::pair{regOf(m.operands[1]), static_cast<int64_t>(d)};
          }
        }
        undo();
        return std::nullopt;
      }
    }
    // Plain shift of the iteration: a power-of-two stage count (32-bit shifts only).
    if (base == "shr" && shift < 31) return std::pair{shifted, int64_t{1} << shift};
    undo();
    return std::nullopt;
  }

  ParityPhase toggle(const std::string& reg, const std::vector<size_t>& defs) {
    ParityPhase p;
    std::optional<size_t> flip;
    for (size_t d : defs) {
      const ptx::Instruction& inst = f_.body[d].instruction;
      const std::string base = inst.baseOpcode();
      if (inst.guard) {
        p.reason =
            reg + " is defined under a guard at PTX line " + std::to_string(f_.body[d].loc.line);
        return p;
      }
      if (base == "mov" && inst.operands.size() == 2 &&
          inst.operands[1].kind == Operand::Kind::Immediate) {
        auto value = ptx::parseSigned(inst.operands[1].text);
        if (p.initial && value != p.initial) {
          p.reason = reg + " is initialised to different constants";
          return p;
        }
        p.initial = value;
        p.chain.push_back(d);
        continue;
      }
      const bool inPlaceXor = base == "xor" && inst.operands.size() == 3 &&
                              inst.operands[1].kind == Operand::Kind::Register &&
                              inst.operands[1].text == reg;
      if (inPlaceXor && !flip) {
        flip = d;
        p.chain.push_back(d);
        continue;
      }
      p.reason = reg + " has " + std::to_string(defs.size()) +
                 " definitions that are not `mov` constants plus one in-place `xor` (PTX line " +
                 std::to_string(f_.body[d].loc.line) + ": `" + inst.opcode + "`)";
      return p;
    }
    if (!flip || !p.initial) {
      p.reason = reg + " has several definitions but no `mov` initialisation and in-place `xor`";
      return p;
    }
    const Operand& by = f_.body[*flip].instruction.operands[2];
    p.form = "toggle";
    if (isImm(by, 1)) {
      p.stages = 1;
      p.expression = reg + " ^= 1 every pass (initially " + std::to_string(*p.initial) + ")";
      return p;
    }
    // `xor R, R, W` with W = selp 1, 0, P and P = setp.{gt,ge,eq} C, K (stage counter wrap).
    p.expression =
        reg + " ^= " + operandText(by) + " (initially " + std::to_string(*p.initial) + ")";
    if (by.kind != Operand::Kind::Register) return p;
    ParityPhase scratch;
    const ptx::Instruction* sel = single(by.text, scratch);
    if (sel == nullptr || sel->baseOpcode() != "selp" || sel->operands.size() != 4 ||
        !isImm(sel->operands[1], 1) || !isImm(sel->operands[2], 0) ||
        sel->operands[3].kind != Operand::Kind::Register)
      return p;
    p.chain.push_back(scratch.chain.back());
    const ptx::Instruction* cmp = single(sel->operands[3].text, scratch);
    if (cmp == nullptr || cmp->baseOpcode() != "setp" || cmp->operands.size() != 3 ||
        cmp->operands[1].kind != Operand::Kind::Register ||
        cmp->operands[2].kind != Operand::Kind::Immediate)
      return p;
    p.chain.push_back(scratch.chain.back());
    auto bound = ptx::parseSigned(cmp->operands[2].text);
    std::string counter = cmp->operands[1].text;
    // The compared value is often `counter + 1`.
    if (resolver_.definitionCount(counter) == 1) {
      const size_t at = resolver_.definitions(counter)->front();
      const ptx::Instruction& inc = f_.body[at].instruction;
      if (inc.baseOpcode() == "add" && inc.operands.size() == 3 && isImm(inc.operands[2], 1) &&
          inc.operands[1].kind == Operand::Kind::Register) {
        counter = inc.operands[1].text;
        p.chain.push_back(at);
      }
    }
    p.iteration = counter;
    if (bound) {
      if (cmp->opcode.starts_with("setp.gt.")) p.stages = *bound + 1;
      if (cmp->opcode.starts_with("setp.ge.") || cmp->opcode.starts_with("setp.eq."))
        p.stages = *bound;
    }
    p.expression = reg + " ^= 1 when stage counter " + counter + " wraps" +
                   (p.stages ? " (" + std::to_string(*p.stages) + " stages)" : "") +
                   ", initially " + std::to_string(*p.initial);
    return p;
  }

  // --- Pipeline state: a loop-carried 1-bit phase (CUTLASS PipelineState) -------------------

  /// One `xor` of the phase with a 0/1 value.
  struct Flip {
    size_t at = 0;
    std::string member;  ///< The register the xor defines.
    std::string source;  ///< The phase register it reads (empty: none).
    std::string bit;     ///< The 0/1 register xor'ed in; empty: the immediate 1.
  };

  /// The phase registers reachable through the parity's definitions, all proven 1-bit.
  struct Closure {
    std::set<std::string> members;
    std::vector<Flip> flips;
    std::set<size_t> defs;
  };

  /// How a flip is tied to the stage index: it happens when the index reaches `stages`.
  struct Wrap {
    int64_t stages = 0;
    std::string index;      ///< The stage-index register (empty: an unconditional flip).
    bool stepped = false;   ///< `setp.eq I + 1, stages` with I reset to 0 under that predicate.
    std::string predicate;  ///< The compare's predicate when stepped.
    std::string next;       ///< I + 1 when stepped.
  };

  std::string lineOf(size_t at) const { return std::to_string(f_.body[at].loc.line); }

  std::string describe(size_t at) const {
    return "PTX line " + lineOf(at) + ": `" + f_.body[at].instruction.opcode + "`";
  }

  static bool isBitImm(const Operand& op) { return isImm(op, 0) || isImm(op, 1); }

  /// The unguarded single definition of `reg` (nullptr: none or several).
  const ptx::Instruction* soleDef(const std::string& reg, size_t* at = nullptr) const {
    if (resolver_.definitionCount(reg) != 1) return nullptr;
    const size_t d = resolver_.definitions(reg)->front();
    const ptx::Instruction& inst = f_.body[d].instruction;
    if (inst.guard) return nullptr;
    if (at) *at = d;
    return &inst;
  }

  /// Whether `reg` is a 0/1 flip amount: `selp 1, 0, P` / `selp 0, 1, P` or `and X, Y, 1`.
  bool isBitValue(const std::string& reg) const {
    const ptx::Instruction* d = soleDef(reg);
    if (d == nullptr) return false;
    const auto& ops = d->operands;
    if (d->baseOpcode() == "selp" && ops.size() == 4)
      return ops[3].kind == Operand::Kind::Register &&
             ((isImm(ops[1], 1) && isImm(ops[2], 0)) || (isImm(ops[1], 0) && isImm(ops[2], 1)));
    return d->baseOpcode() == "and" && ops.size() == 3 && isImm(ops[2], 1);
  }

  /// Follows every definition of every member; fails on the first that is not provably 1-bit.
  /// Induction: each accepted definition yields 0 or 1 when the members it reads do.
  std::optional<Closure> closure(const std::string& reg, std::string& why) const {
    Closure c;
    std::vector<std::string> work{reg};
    c.members.insert(reg);
    auto member = [&](const std::string& r) {
      if (c.members.insert(r).second) work.push_back(r);
    };
    while (!work.empty()) {
      const std::string m = work.back();
      work.pop_back();
      if (c.members.size() > 64) {
        why = reg + " reaches more than 64 phase registers";
        return std::nullopt;
      }
      const auto* defs = resolver_.definitions(m);
      if (defs == nullptr) {
        why = m + " has no definition in the function, so it is not provably 1-bit";
        return std::nullopt;
      }
      for (size_t d : *defs) {
        c.defs.insert(d);
        const ptx::Instruction& inst = f_.body[d].instruction;
        const std::string base = inst.baseOpcode();
        const auto& ops = inst.operands;
        const std::string bad =
            m + " has a definition that is not provably 1-bit (" + describe(d) + ")";
        if (base == "mov" && ops.size() == 2) {
          if (ops[1].kind == Operand::Kind::Register) {
            member(ops[1].text);
            continue;
          }
          if (isBitImm(ops[1])) continue;
          why = bad;
          return std::nullopt;
        }
        if (base == "xor" && ops.size() == 3) {
          std::vector<std::string> phases;
          std::vector<std::string> bits;
          for (size_t k = 1; k < 3; ++k) {
            const Operand& o = ops[k];
            if (isImm(o, 1)) {
              bits.emplace_back();
            } else if (o.kind == Operand::Kind::Register && !o.negated) {
              if (!c.members.contains(o.text) && isBitValue(o.text))
                bits.push_back(o.text);
              else
                phases.push_back(o.text);
            } else if (!isImm(o, 0)) {
              why = bad;
              return std::nullopt;
            }
          }
          // Two phase registers xor'ed: 1-bit, but the flip amount is not a stage-wrap bit.
          if (phases.size() > 1) {
            why = m + " is the xor of two phase registers (" + describe(d) +
                  "), so the flip is not tied to a stage index";
            return std::nullopt;
          }
          for (const std::string& p : phases) member(p);
          for (const std::string& b : bits)
            c.flips.push_back(Flip{d, m, phases.empty() ? "" : phases[0], b});
          continue;
        }
        if (base == "selp" && ops.size() == 4) {
          bool ok = true;
          for (size_t k = 1; k < 3; ++k) {
            if (ops[k].kind == Operand::Kind::Register && !ops[k].negated)
              member(ops[k].text);
            else
              ok = ok && isBitImm(ops[k]);
          }
          if (ok) continue;
        }
        if (base == "and" && ops.size() == 3 && isImm(ops[2], 1)) continue;
        why = bad;
        return std::nullopt;
      }
    }
    return c;
  }

  /// Stage count of a wrap compare on predicate `pred` (flip when it is `when`):
  /// `setp.eq I + 1, K` (or `setp.ne` flipping on false) wraps at K; `setp.gt X, K` at K + 1;
  /// `setp.ge X, K` at K; `and.pred` of compares takes the wrap compares, which must agree.
  std::optional<Wrap> predicateWrap(const std::string& pred, bool when, size_t flip,
                                    std::string& why) const {
    size_t at = 0;
    const ptx::Instruction* d = soleDef(pred, &at);
    const std::string untied =
        "the flip at " + describe(flip) + " is not tied to a stage-index compare: " + pred;
    if (d == nullptr) {
      why = untied + " has no single unguarded definition";
      return std::nullopt;
    }
    const auto& ops = d->operands;
    if (d->opcode.starts_with("and.pred") && ops.size() == 3 && when) {
      std::optional<Wrap> found;
      std::string inner;
      for (size_t k = 1; k < 3; ++k) {
        if (ops[k].kind != Operand::Kind::Register || ops[k].negated) continue;
        auto w = predicateWrap(ops[k].text, true, flip, inner);
        if (!w) continue;
        if (found && found->stages != w->stages) {
          why = untied + " combines compares with " + std::to_string(found->stages) + " and " +
                std::to_string(w->stages) + " stages";
          return std::nullopt;
        }
        if (!found) found = w;
      }
      if (!found) why = untied + " is `and.pred` of no wrap compare";
      return found;
    }
    if (d->baseOpcode() != "setp" || ops.size() != 3 || ops[1].kind != Operand::Kind::Register ||
        ops[2].kind != Operand::Kind::Immediate) {
      why = untied + " is defined by `" + d->opcode + "` (" + describe(at) + ")";
      return std::nullopt;
    }
    const auto bound = ptx::parseSigned(ops[2].text);
    const std::string cmp = d->opcode.substr(5, d->opcode.find('.', 5) - 5);
    Wrap w;
    w.index = ops[1].text;
    if (bound && ((cmp == "eq" && when) || (cmp == "ne" && !when))) {
      w.stages = *bound;
      stepIndex(w, pred);
    } else if (bound && cmp == "gt" && when) {
      w.stages = *bound + 1;
    } else if (bound && cmp == "ge" && when) {
      w.stages = *bound;
    } else {
      why = untied + " is `" + d->opcode + " " + ops[1].text + ", " + ops[2].text +
            "`, not an index reaching the stage count (" + describe(at) + ")";
      return std::nullopt;
    }
    if (w.stages < 1) {
      why = untied + " compares with " + ops[2].text + ", not a stage count";
      return std::nullopt;
    }
    return w;
  }

  /// CUTLASS's operator++: `N = I + 1; P = (N == K); I = P ? 0 : N`. Marks `w` stepped when the
  /// compared value is I + 1 and I has a reset to 0 under the same predicate.
  void stepIndex(Wrap& w, const std::string& pred) const {
    const ptx::Instruction* inc = soleDef(w.index);
    if (inc == nullptr || inc->baseOpcode() != "add" || inc->operands.size() != 3 ||
        inc->operands[1].kind != Operand::Kind::Register || !isImm(inc->operands[2], 1))
      return;
    const std::string next = w.index;
    const std::string index = inc->operands[1].text;
    for (size_t d : *resolver_.definitions(index)) {
      const ptx::Instruction& r = f_.body[d].instruction;
      const auto& ops = r.operands;
      if (!r.guard && r.baseOpcode() == "selp" && ops.size() == 4 && isImm(ops[1], 0) &&
          ops[2].kind == Operand::Kind::Register && ops[2].text == next &&
          ops[3].kind == Operand::Kind::Register && !ops[3].negated && ops[3].text == pred) {
        w.index = index;
        w.next = next;
        w.predicate = pred;
        w.stepped = true;
        return;
      }
    }
  }

  /// The wrap a flip is tied to: its guard, its `selp` bit's predicate, or bit 0 of a division.
  std::optional<Wrap> wrapOf(const Flip& flip, std::string& why) {
    const ptx::Instruction& x = f_.body[flip.at].instruction;
    if (flip.bit.empty()) {
      if (x.guard) return predicateWrap(x.guard->predicate, !x.guard->negated, flip.at, why);
      return Wrap{1, "", false, "", ""};  // flips on every pass
    }
    if (x.guard) {
      why = "the flip at " + describe(flip.at) + " is guarded as well as conditional";
      return std::nullopt;
    }
    const ptx::Instruction* b = soleDef(flip.bit);
    const auto& ops = b->operands;
    if (b->baseOpcode() == "selp") {
      if (ops[3].negated) {
        why = "the flip at " + describe(flip.at) + " selects on a negated predicate";
        return std::nullopt;
      }
      return predicateWrap(ops[3].text, isImm(ops[1], 1), flip.at, why);
    }
    // `and B, Y, 1` with Y = X / K: PipelineState::advance by a count of K or more.
    ParityPhase scratch;
    if (ops[1].kind == Operand::Kind::Register)
      if (auto div = division(ops[1].text, scratch))
        return Wrap{div->second, div->first, false, "", ""};
    why = "the flip at " + describe(flip.at) + " xors bit 0 of " + operandText(ops[1]) +
          ", which is not a division by a stage count";
    return std::nullopt;
  }

  /// Where a member `reg` enters loop `loop`: the constant or register of its definitions
  /// outside the loop; empty optional and `what` describing them otherwise.
  struct Entry {
    std::optional<int64_t> constant;
    std::string reg;
    std::string what;  ///< Why neither, when both are empty.
  };

  Entry entryOf(const std::string& reg, const KernelLoops::Loop& loop) const {
    Entry e;
    std::vector<size_t> outside;
    for (size_t d : *resolver_.definitions(reg))
      if (!loop.contains[loops_.cfg->blockOf[d]]) outside.push_back(d);
    if (outside.empty()) {
      e.what = reg + " has no definition before the loop";
      return e;
    }
    bool constants = true;
    std::set<int64_t> values;
    for (size_t d : outside) {
      const ptx::Instruction& inst = f_.body[d].instruction;
      const bool movImm = !inst.guard && inst.baseOpcode() == "mov" && inst.operands.size() == 2 &&
                          inst.operands[1].kind == Operand::Kind::Immediate;
      if (movImm) {
        if (auto v = ptx::parseSigned(inst.operands[1].text)) values.insert(*v);
      }
      constants = constants && movImm;
    }
    if (constants && values.size() == 1) {
      e.constant = *values.begin();
      return e;
    }
    const ptx::Instruction& first = f_.body[outside.front()].instruction;
    if (outside.size() == 1 && !first.guard && first.baseOpcode() == "mov" &&
        first.operands.size() == 2 && first.operands[1].kind == Operand::Kind::Register) {
      e.reg = first.operands[1].text;
      // A copy of a register with one `mov` of a constant (nvcc's `mov %r9, 1; mov %r4, %r9`).
      const ptx::Instruction* src = soleDef(e.reg);
      if (src != nullptr && src->baseOpcode() == "mov" && src->operands.size() == 2 &&
          src->operands[1].kind == Operand::Kind::Immediate)
        e.constant = ptx::parseSigned(src->operands[1].text);
      if (e.constant) e.reg.clear();
      return e;
    }
    e.what = reg + " enters the loop through " + std::to_string(outside.size()) +
             " definitions (first at " + describe(outside.front()) + ")";
    return e;
  }

  /// Whether block `to` is reachable from block `from` inside `loop` without passing its header.
  bool reachesWithin(uint32_t from, uint32_t to, const KernelLoops::Loop& loop) const {
    const auto& blocks = loops_.cfg->blocks;
    std::vector<bool> seen(blocks.size(), false);
    std::vector<uint32_t> work{from};
    while (!work.empty()) {
      const uint32_t b = work.back();
      work.pop_back();
      for (uint32_t s : blocks[b].successors) {
        if (s == loop.header || !loop.contains[s] || seen[s]) continue;
        if (s == to) return true;
        seen[s] = true;
        work.push_back(s);
      }
    }
    return false;
  }

  std::string labelOf(const KernelLoops::Loop& loop) const {
    const ptx::BasicBlock& b = loops_.cfg->blocks[loop.header];
    for (size_t i = b.begin; i < b.end; ++i)
      if (f_.body[i].kind == Statement::Kind::Label) return f_.body[i].text;
    return "block " + std::to_string(loop.header);
  }

  ParityPhase pipelineState(const std::string& reg, size_t wait) {
    ParityPhase p;
    std::string why;
    auto c = closure(reg, why);
    if (!c) {
      p.reason = why;
      return p;
    }
    p.chain.assign(c->defs.begin(), c->defs.end());
    if (c->flips.empty()) {
      p.reason = reg + " is 1-bit but never flipped by an `xor`, so it is not a loop-carried phase";
      return p;
    }
    std::vector<Wrap> wraps;
    for (const Flip& flip : c->flips) {
      auto w = wrapOf(flip, why);
      if (!w) {
        p.reason = reg + " is a 1-bit toggle, but " + why;
        return p;
      }
      if (!wraps.empty() && w->stages != wraps.front().stages) {
        p.reason = reg + " is a 1-bit toggle whose flips disagree on the stage count (" +
                   std::to_string(wraps.front().stages) + " at PTX line " +
                   lineOf(c->flips.front().at) + ", " + std::to_string(w->stages) +
                   " at PTX line " + lineOf(flip.at) + ")";
        return p;
      }
      wraps.push_back(*w);
    }
    if (!loops_.cfg) {
      p.reason = reg + " is a 1-bit toggle, but the CFG is unavailable: " + loops_.error;
      return p;
    }
    const auto& blockOf = loops_.cfg->blockOf;
    auto flipsIn = [&](const KernelLoops::Loop& loop) {
      return std::ranges::any_of(c->flips,
                                 [&](const Flip& fl) { return loop.contains[blockOf[fl.at]]; });
    };
    if (std::ranges::none_of(loops_.loops, flipsIn)) {
      p.reason = reg + " is a 1-bit toggle, but no loop flips it, so it is not loop-carried";
      return p;
    }
    p.form = "pipeline_state";
    p.stages = wraps.front().stages;
    std::string lines;
    for (const Flip& fl : c->flips) lines += (lines.empty() ? "" : ", ") + lineOf(fl.at);
    p.expression = reg + ": 1-bit phase flipped when the stage index wraps at " +
                   std::to_string(*p.stages) + " (PTX lines " + lines + ")";
    // The innermost loop around the wait that flips the phase carries it.
    const KernelLoops::Loop* loop = nullptr;
    for (const KernelLoops::Loop& l : loops_.loops)
      if (l.contains[blockOf[wait]] && flipsIn(l) && (loop == nullptr || l.size < loop->size))
        loop = &l;
    if (loop == nullptr) {
      p.reason = "the wait is in no loop that flips " + reg +
                 " (e.g. a pipeline tail after the loop), so there is no per-iteration formula";
      return p;
    }
    p.loop = labelOf(*loop);
    p.loopLine = f_.body[loops_.cfg->blocks[loop->header].begin].loc.line;
    perIteration(p, reg, wait, *loop, *c, wraps);
    return p;
  }

  /// The per-iteration formula, where the loop flips `reg` in place exactly once per iteration
  /// by CUTLASS's operator++ on a stage index; otherwise `reason` says which part is missing.
  void perIteration(ParityPhase& p, const std::string& reg, size_t wait,
                    const KernelLoops::Loop& loop, const Closure& c,
                    const std::vector<Wrap>& wraps) const {
    const auto& blockOf = loops_.cfg->blockOf;
    auto inLoop = [&](size_t d) { return loop.contains[blockOf[d]]; };
    std::vector<size_t> flipsHere;
    for (size_t i = 0; i < c.flips.size(); ++i)
      if (inLoop(c.flips[i].at)) flipsHere.push_back(i);
    const Flip& flip = c.flips[flipsHere.front()];
    const Wrap& wrap = wraps[flipsHere.front()];
    size_t regDefsHere = 0;
    for (size_t d : *resolver_.definitions(reg)) regDefsHere += inLoop(d) ? 1 : 0;
    if (flipsHere.size() != 1 || flip.member != reg || flip.source != reg || regDefsHere != 1) {
      p.reason = "no per-iteration formula: the loop at " + p.loop + " does not flip " + reg +
                 " in place exactly once (" + std::to_string(flipsHere.size()) + " flips, " +
                 std::to_string(regDefsHere) + " definitions of " + reg + " in the loop)";
      return;
    }
    if (!wrap.stepped) {
      p.index = wrap.index;
      p.reason = "no per-iteration formula: the flip at " + describe(flip.at) +
                 " is not a step `I + 1 == " + std::to_string(wrap.stages) +
                 "` of an index I reset to 0 under the same predicate";
      return;
    }
    p.index = wrap.index;
    size_t indexDefsHere = 0;
    for (size_t d : *resolver_.definitions(wrap.index)) indexDefsHere += inLoop(d) ? 1 : 0;
    const uint32_t flipBlock = blockOf[flip.at];
    const bool everyPass = std::ranges::all_of(
        loop.latches, [&](uint32_t latch) { return loops_.dom->dominates(flipBlock, latch); });
    const bool nested = std::ranges::any_of(loops_.loops, [&](const KernelLoops::Loop& l) {
      return l.size < loop.size && l.contains[flipBlock] && loop.contains[l.header];
    });
    if (indexDefsHere != 1 || !everyPass || nested) {
      p.reason = "no per-iteration formula: the step at " + describe(flip.at) +
                 (indexDefsHere != 1 ? " is not the only update of " + wrap.index + " in the loop"
                  : nested           ? " is inside an inner loop"
                                     : " does not run on every iteration of the loop");
      return;
    }
    // The wait sees k steps at iteration k when it comes before the step, k + 1 after it.
    const uint32_t waitBlock = blockOf[wait];
    bool after = false;
    if (waitBlock == flipBlock) {
      after = wait > flip.at;
    } else if (loops_.dom->dominates(flipBlock, waitBlock)) {
      after = true;
    } else if (reachesWithin(flipBlock, waitBlock, loop)) {
      p.reason = "no per-iteration formula: the wait runs both before and after the step at " +
                 describe(flip.at) + " on different paths";
      return;
    }
    const Entry index0 = entryOf(wrap.index, loop);
    const Entry phase0 = entryOf(reg, loop);
    p.carried = reg;
    p.indexInitial = index0.constant;
    p.indexEntry = index0.reg;
    p.initial = phase0.constant;
    p.initialEntry = phase0.reg;
    auto name = [](const Entry& e, const std::string& self) {
      return e.constant ? std::to_string(*e.constant) : e.reg.empty() ? self + "@entry" : e.reg;
    };
    const std::string i0 = name(index0, wrap.index);
    const std::string p0 = name(phase0, reg);
    p.expression = "((" + i0 + " + k" + (after ? " + 1" : "") + ") / " +
                   std::to_string(wrap.stages) + " + " + p0 +
                   ") & 1 at iteration k of the loop at " + p.loop + " (index " + wrap.index +
                   ", phase " + reg + "; " + i0 + ", " + p0 +
                   ": their values at loop entry, index < " + std::to_string(wrap.stages) + ")";
    std::vector<std::string> missing;
    if (!index0.what.empty()) missing.push_back("index entry: " + index0.what);
    if (!phase0.what.empty()) missing.push_back("phase entry: " + phase0.what);
    for (size_t i = 0; i < missing.size(); ++i) p.reason += (i > 0 ? "; " : "") + missing[i];
  }

  const ptx::Function& f_;
  const Resolver& resolver_;
  const std::map<std::string, std::string>& iterRegions_;
  const KernelLoops& loops_;
};

Completion barrierCompletion(const ptx::Function& f, Resolver& resolver, size_t site,
                             const std::map<std::string, std::string>& iterRegions,
                             const KernelLoops& loops) {
  Completion c;
  c.kind = Completion::Kind::Barrier;
  const Operand* addr = nthAddress(f.body[site].instruction, 2);
  if (!addr) {
    c.reason = "no mbarrier operand found";
    return c;
  }
  c.barrier = resolver.resolveAddress(*addr);
  for (size_t i = 0; i < f.body.size(); ++i) {
    const Statement& s = f.body[i];
    if (s.kind != Statement::Kind::Instruction) continue;
    const std::string& op = s.instruction.opcode;
    bool expect = startsWith(op, "mbarrier.arrive.expect_tx") ||
                  startsWith(op, "mbarrier.arrive_drop.expect_tx") ||
                  startsWith(op, "mbarrier.expect_tx");
    bool wait = startsWith(op, "mbarrier.try_wait") || startsWith(op, "mbarrier.test_wait");
    if (!expect && !wait) continue;
    size_t addrIndex = 0;
    const Operand* other = nthAddress(s.instruction, 0, &addrIndex);
    if (!other) continue;
    BarrierSite b;
    b.where = refOf(f, i);
    b.address = resolver.resolveAddress(*other);
    b.match = matchBarrier(*c.barrier, b.address);
    if (b.match.empty()) continue;
    const auto& ops = s.instruction.operands;
    if (addrIndex + 1 < ops.size()) {
      if (wait) {
        b.parity = operandText(ops[addrIndex + 1]);
        b.parityIsImmediate = ops[addrIndex + 1].kind == Operand::Kind::Immediate;
        if (contains(op, ".parity"))
          b.phase = ParityProver(f, resolver, iterRegions, loops).prove(ops[addrIndex + 1], i);
      } else {
        b.txCount = operandText(ops[addrIndex + 1]);
      }
    }
    (expect ? c.expectTx : c.waits).push_back(std::move(b));
  }
  std::vector<std::string> missing;
  if (!c.barrier->resolved) missing.push_back("barrier address: " + c.barrier->reason);
  if (c.expectTx.empty()) missing.push_back("no mbarrier.arrive.expect_tx on this barrier");
  if (c.waits.empty()) missing.push_back("no mbarrier.try_wait/test_wait on this barrier");
  c.resolved = missing.empty();
  for (size_t i = 0; i < missing.size(); ++i) c.reason += (i > 0 ? "; " : "") + missing[i];
  return c;
}

Completion groupCompletion(const ptx::Function& f, size_t site, std::string family) {
  Completion c;
  c.kind = Completion::Kind::Group;
  c.family = std::move(family);
  for (size_t i = site + 1; i < f.body.size() && !c.commit; ++i) {
    const Statement& s = f.body[i];
    if (s.kind == Statement::Kind::Instruction &&
        groupRole(s.instruction.opcode, c.family) == GroupRole::Commit)
      c.commit = GroupSite{refOf(f, i), std::nullopt, false};
  }
  for (size_t i = 0; i < f.body.size(); ++i) {
    const Statement& s = f.body[i];
    if (s.kind != Statement::Kind::Instruction ||
        groupRole(s.instruction.opcode, c.family) != GroupRole::Wait)
      continue;
    GroupSite w{refOf(f, i), std::nullopt, c.commit && i > c.commit->where.statement};
    const auto& ops = s.instruction.operands;
    if (!ops.empty() && ops[0].kind == Operand::Kind::Immediate)
      w.pending = ptx::parseSigned(ops[0].text);
    c.groupWaits.push_back(std::move(w));
  }
  std::vector<std::string> missing;
  if (!c.commit) missing.push_back("no " + c.family + " commit_group after the site");
  if (c.groupWaits.empty()) missing.push_back("no " + c.family + " wait in the kernel");
  c.resolved = missing.empty();
  for (size_t i = 0; i < missing.size(); ++i) c.reason += (i > 0 ? "; " : "") + missing[i];
  return c;
}

Completion completionFor(const ptx::Function& f, Resolver& resolver, size_t site, OpKind kind,
                         const std::map<std::string, std::string>& iterRegions,
                         const KernelLoops& loops) {
  const std::string& op = f.body[site].instruction.opcode;
  switch (kind) {
    case OpKind::TmaLoad:
    case OpKind::BulkCopy:
      if (contains(op, "mbarrier::complete_tx"))
        return barrierCompletion(f, resolver, site, iterRegions, loops);
      if (contains(op, "bulk_group")) return groupCompletion(f, site, "cp.async.bulk");
      break;
    case OpKind::TmaStore:
      return groupCompletion(f, site, "cp.async.bulk");
    case OpKind::CpAsync:
      return groupCompletion(f, site, "cp.async");
    case OpKind::Wgmma:
      return groupCompletion(f, site, "wgmma");
  }
  Completion c;
  c.reason = "completion mechanism of `" + op + "` is not recognized";
  return c;
}

bool inSubtree(const ptx::FunctionRegions& fr, uint32_t node, uint32_t root) {
  std::optional<uint32_t> cur = node;
  while (cur) {
    if (*cur == root) return true;
    cur = fr.regions[*cur].parent;
  }
  return false;
}

std::string listRegions(const std::vector<KernelScan>& kernels) {
  std::string s;
  for (const KernelScan& k : kernels) {
    s += (s.empty() ? "" : "; ") + k.function->name + ": ";
    if (k.regions->regions.empty()) s += "(no regions)";
    for (size_t i = 0; i < k.regions->regions.size(); ++i)
      s += (i > 0 ? ", " : "") + k.regions->regions[i].path;
  }
  return s;
}

nlohmann::json toJson(const StatementRef& r) {
  return {{"statement", r.statement}, {"line", r.line}, {"opcode", r.opcode}};
}

nlohmann::json toJson(const ResolvedAddress& a) {
  nlohmann::json j = {{"text", a.text}, {"resolved", a.resolved}, {"chain", a.chain}};
  if (a.resolved) {
    j["base"] = a.base;
    j["offset"] = a.offset;
    j["dynamic_terms"] = a.dynamicTerms;
  } else {
    j["reason"] = a.reason;
  }
  return j;
}

nlohmann::json toJson(const ParityPhase& p) {
  nlohmann::json j = {{"form", p.form}, {"chain", p.chain}};
  if (p.form == "unknown") {
    j["reason"] = p.reason;
    if (!p.expression.empty()) j["expression"] = p.expression;
    return j;
  }
  j["expression"] = p.expression;
  if (!p.iteration.empty()) j["iteration"] = p.iteration;
  if (!p.iterationRegion.empty()) j["iteration_region"] = p.iterationRegion;
  j["stages"] = p.stages ? nlohmann::json(*p.stages) : nlohmann::json(nullptr);
  j["inverted"] = p.inverted;
  if (p.initial) j["initial"] = *p.initial;
  if (p.form != "pipeline_state") return j;
  auto put = [&](const char* key, const std::string& value) {
    if (!value.empty()) j[key] = value;
  };
  put("index", p.index);
  if (p.indexInitial) j["index_initial"] = *p.indexInitial;
  put("index_entry", p.indexEntry);
  put("carried", p.carried);
  put("initial_entry", p.initialEntry);
  put("loop", p.loop);
  if (p.loopLine != 0) j["loop_line"] = p.loopLine;
  put("reason", p.reason);
  return j;
}

nlohmann::json toJson(const GroupSite& g) {
  nlohmann::json j = toJson(g.where);
  if (g.pending) j["pending"] = *g.pending;
  return j;
}

}  // namespace

std::string_view toString(OpKind kind) {
  switch (kind) {
    case OpKind::TmaLoad:
      return "tma_load";
    case OpKind::TmaStore:
      return "tma_store";
    case OpKind::BulkCopy:
      return "bulk_copy";
    case OpKind::CpAsync:
      return "cp_async";
    case OpKind::Wgmma:
      return "wgmma";
  }
  return "unknown";
}

Result<std::vector<OpSite>> discoverAsyncOps(const ptx::Module& module, std::string_view kernel,
                                             std::string_view region) {
  auto analyzed = ptx::analyzeRegions(module);
  if (!analyzed) return std::unexpected(analyzed.error());
  std::vector<KernelScan> kernels;
  std::string available;
  for (const ptx::Function* f : module.functions()) {
    if (!f->isEntry || !f->hasBody) continue;
    available += (available.empty() ? "" : ", ") + f->name;
    if (!kernel.empty() && f->name != kernel) continue;
    auto it = std::ranges::find_if(
        *analyzed, [&](const ptx::FunctionRegions& fr) { return fr.function == f->name; });
    if (it == analyzed->end()) continue;
    kernels.push_back(KernelScan{f, &*it});
  }
  if (kernels.empty()) {
    if (kernel.empty()) return fail("discover", module.fileName + " has no kernel with a body");
    return fail("discover", "no kernel `" + std::string(kernel) + "` in " + module.fileName +
                                "; kernels: " + (available.empty() ? "(none)" : available));
  }
  // Region filter: index of the region per kernel (nullopt: kernel lacks it).
  std::vector<std::optional<uint32_t>> roots(kernels.size());
  if (!region.empty()) {
    bool found = false;
    for (size_t k = 0; k < kernels.size(); ++k) {
      const auto& regs = kernels[k].regions->regions;
      for (size_t r = 0; r < regs.size(); ++r)
        if (regs[r].path == region) roots[k] = static_cast<uint32_t>(r);
      found = found || roots[k].has_value();
    }
    if (!found)
      return fail("discover",
                  "unknown region `" + std::string(region) + "`; regions: " + listRegions(kernels));
  }

  std::vector<OpSite> sites;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const ptx::Function& f = *kernels[k].function;
    const ptx::FunctionRegions& fr = *kernels[k].regions;
    if (!region.empty() && !roots[k]) continue;
    Resolver resolver(f);
    const KernelLoops loops = buildLoops(f, module.fileName);
    std::map<std::string, std::string> iterRegions;  // iter= register -> region path
    for (const ptx::Region& r : fr.regions)
      for (const ptx::MarkerSite& b : r.begins)
        if (!b.iteration.empty()) iterRegions.emplace(b.iteration, r.path);
    std::map<OpKind, size_t> ordinals;
    for (size_t i = 0; i < f.body.size(); ++i) {
      const Statement& s = f.body[i];
      if (s.kind != Statement::Kind::Instruction) continue;
      auto kind = classify(s.instruction.opcode);
      if (!kind) continue;
      size_t ordinal = ordinals[*kind]++;
      static const std::vector<uint32_t> kNone;
      const std::vector<uint32_t>& owners = i < fr.owners.size() ? fr.owners[i] : kNone;
      if (roots[k] &&
          std::ranges::none_of(owners, [&](uint32_t o) { return inSubtree(fr, o, *roots[k]); }))
        continue;
      OpSite site;
      site.kind = *kind;
      site.kernel = f.name;
      site.where = refOf(f, i);
      for (uint32_t o : owners) site.regions.push_back(fr.regions[o].path);
      std::string owner = owners.size() == 1 ? fr.regions[owners[0]].id : f.name;
      site.opId = owner + ":" + std::string(toString(*kind)) + ":" + std::to_string(ordinal);
      site.completion = completionFor(f, resolver, i, *kind, iterRegions, loops);
      sites.push_back(std::move(site));
    }
  }
  return sites;
}

nlohmann::json toJson(const OpSite& site) {
  nlohmann::json j = {{"op_id", site.opId},      {"kind", std::string(toString(site.kind))},
                      {"kernel", site.kernel},   {"statement", site.where.statement},
                      {"line", site.where.line}, {"opcode", site.where.opcode},
                      {"regions", site.regions}};
  const Completion& c = site.completion;
  nlohmann::json cj = {{"kind", c.kind == Completion::Kind::Barrier ? "barrier" : "group"},
                       {"resolved", c.resolved}};
  if (!c.resolved) cj["reason"] = c.reason;
  if (c.kind == Completion::Kind::Barrier) {
    if (c.barrier) cj["barrier"] = toJson(*c.barrier);
    cj["expect_tx"] = nlohmann::json::array();
    for (const BarrierSite& b : c.expectTx) {
      nlohmann::json e = toJson(b.where);
      e["address"] = b.address.text;
      e["match"] = b.match;
      e["tx_count"] = b.txCount;
      cj["expect_tx"].push_back(std::move(e));
    }
    cj["waits"] = nlohmann::json::array();
    for (const BarrierSite& b : c.waits) {
      nlohmann::json w = toJson(b.where);
      w["address"] = b.address.text;
      w["match"] = b.match;
      w["parity"] = {{"operand", b.parity},
                     {"kind", b.parityIsImmediate ? "immediate" : "register"}};
      if (b.phase) w["parity"]["phase"] = toJson(*b.phase);
      cj["waits"].push_back(std::move(w));
    }
  } else {
    cj["family"] = c.family;
    cj["commit"] = c.commit ? toJson(*c.commit) : nlohmann::json(nullptr);
    cj["waits"] = nlohmann::json::array();
    for (const GroupSite& g : c.groupWaits) {
      nlohmann::json w = toJson(g);
      w["after_commit"] = g.afterCommit;
      cj["waits"].push_back(std::move(w));
    }
  }
  j["completion"] = std::move(cj);
  return j;
}

nlohmann::json toJson(const std::vector<OpSite>& sites) {
  nlohmann::json j = nlohmann::json::array();
  for (const OpSite& s : sites) j.push_back(toJson(s));
  return j;
}

}  // namespace argus::analysis
