// Async-op discovery over the flat PTX IR (see include/argus/analysis/discover.h).
#include "argus/analysis/discover.h"

#include <algorithm>
#include <map>
#include <unordered_map>

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

/// Recovers how a wait's parity operand is computed (see ParityPhase). Only single-definition
/// chains are followed, except for the toggle register itself, whose definitions must be exactly
/// initialising `mov`s plus one in-place `xor`.
class ParityProver {
 public:
  ParityProver(const ptx::Function& f, const Resolver& resolver,
               const std::map<std::string, std::string>& iterRegions)
      : f_(f), resolver_(resolver), iterRegions_(iterRegions) {}

  ParityPhase prove(const Operand& op) {
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

 private:
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

  const ptx::Function& f_;
  const Resolver& resolver_;
  const std::map<std::string, std::string>& iterRegions_;
};

Completion barrierCompletion(const ptx::Function& f, Resolver& resolver, size_t site,
                             const std::map<std::string, std::string>& iterRegions) {
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
          b.phase = ParityProver(f, resolver, iterRegions).prove(ops[addrIndex + 1]);
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
                         const std::map<std::string, std::string>& iterRegions) {
  const std::string& op = f.body[site].instruction.opcode;
  switch (kind) {
    case OpKind::TmaLoad:
    case OpKind::BulkCopy:
      if (contains(op, "mbarrier::complete_tx"))
        return barrierCompletion(f, resolver, site, iterRegions);
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
      site.completion = completionFor(f, resolver, i, *kind, iterRegions);
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
