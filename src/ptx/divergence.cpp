#include "argus/ptx/divergence.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "argus/ptx/parser.h"

namespace argus::ptx {
namespace {

/// What the lanes of one warp may hold in a register.
struct Spread {
  enum class Kind : uint8_t {
    Uniform,      ///< The same value in every lane of the warp.
    ThreadIndex,  ///< %tid.x + offset in a one-dimensional block: a warp's lanes hold 32
                  ///< consecutive values from offset + a multiple of 32.
    Divergent,    ///< Anything else.
  };
  Kind kind = Kind::Uniform;
  int64_t offset = 0;  ///< ThreadIndex: the offset, or only its residue modulo 32 (!exact).
  bool exact = true;

  static Spread uniform() { return {}; }
  static Spread divergent() { return {Kind::Divergent, 0, true}; }
  static Spread threadIndex(int64_t offset, bool exact = true) {
    return {Kind::ThreadIndex, exact ? offset : ((offset % 32) + 32) % 32, exact};
  }
  [[nodiscard]] bool isUniform() const { return kind == Kind::Uniform; }
  [[nodiscard]] int64_t residue() const { return ((offset % 32) + 32) % 32; }
  bool operator==(const Spread&) const = default;
};

/// The least spread covering both (a register defined in two places). A uniform value and
/// %tid.x + k join to %tid.x + k: where the two definitions sit on the arms of a branch that
/// parts a warp's lanes, those arms are blocks it may run without some lanes, whose definitions
/// are divergent (transfer), so a warp that reaches the join holds one of the two forms in all
/// its lanes. Two offsets that differ by a multiple of 32 (a loop's index stepping by whole
/// warps) keep their residue.
Spread join(Spread a, Spread b) {
  if (a.kind == Spread::Kind::Divergent || b.kind == Spread::Kind::Divergent)
    return Spread::divergent();
  if (a.kind == Spread::Kind::Uniform) return b;
  if (b.kind == Spread::Kind::Uniform) return a;
  if (a == b) return a;
  return a.residue() == b.residue() ? Spread::threadIndex(a.offset, false) : Spread::divergent();
}

/// The largest offset from %tid.x followed (beyond it, wrapping arithmetic or an address).
constexpr int64_t kMaxOffset = int64_t{1} << 20;

/// Special registers with one value per warp (per grid, CTA, cluster or SM).
constexpr std::array<std::string_view, 19> kUniformSpecials = {"%ctaid",
                                                               "%nctaid",
                                                               "%ntid",
                                                               "%nsmid",
                                                               "%smid",
                                                               "%warpid",
                                                               "%nwarpid",
                                                               "%gridid",
                                                               "%clusterid",
                                                               "%nclusterid",
                                                               "%cluster_ctaid",
                                                               "%cluster_nctaid",
                                                               "%cluster_ctarank",
                                                               "%cluster_nctarank",
                                                               "%is_explicit_cluster",
                                                               "%envreg",
                                                               "%total_smem_size",
                                                               "%aggr_smem_size",
                                                               "%dynamic_smem_size"};

/// A special register's name: `special` itself or with a component or number (`%ctaid.x`,
/// `%envreg3`).
bool names(std::string_view name, std::string_view special) {
  if (!name.starts_with(special)) return false;
  const std::string_view rest = name.substr(special.size());
  return rest.empty() || rest.front() == '.' ||
         std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// The numbers of a `.maxntid`/`.reqntid` directive's text ("128, 1, 1").
std::vector<uint64_t> numbers(std::string_view text) {
  std::vector<uint64_t> out;
  uint64_t value = 0;
  bool in = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      value = value * 10 + static_cast<uint64_t>(c - '0');
      in = true;
    } else if (in) {
      out.push_back(value);
      value = 0;
      in = false;
    }
  }
  if (in) out.push_back(value);
  return out;
}

/// Whether a block shape makes %tid.x the thread's linear index in its warp's numbering: one
/// dimension (y and z 1), or an x extent that is a multiple of 32.
bool linearShape(const std::vector<uint64_t>& n) {
  return !n.empty() &&
         (n.size() == 1 || (n[1] == 1 && (n.size() < 3 || n[2] == 1)) || n[0] % 32 == 0);
}

/// Whether %tid.x is the thread's linear index in its warp's numbering: by `block` (the shape the
/// program spec says every launch uses) or `.reqntid`. `.maxntid` does not say: it bounds only the
/// thread count, so a `.maxntid 128, 1, 1` kernel may run with 48 x 2 threads.
bool linearThreadX(const Function& kernel, const std::optional<std::array<uint32_t, 3>>& block) {
  if (block && linearShape({(*block)[0], (*block)[1], (*block)[2]})) return true;
  for (const auto& d : kernel.performanceDirectives)
    if (d.name == ".reqntid" && linearShape(numbers(d.text))) return true;
  return false;
}

/// An integer immediate's value (a PTX integer literal, parseSigned); none for other operands.
std::optional<int64_t> immediate(const Operand& o) {
  if (o.kind != Operand::Kind::Immediate) return std::nullopt;
  return parseSigned(o.text);
}

/// An immediate as the operation of `opcode` reads it: sign-extended from 32 bits for a 32-bit
/// (or narrower) type, so that `add.s32 %r, %r, 0xFFFFFFF0` subtracts 16.
std::optional<int64_t> operandValue(const Operand& o, const std::string& opcode) {
  auto v = immediate(o);
  if (!v || opcode.find("64") != std::string::npos) return v;
  return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(*v)));
}

/// The last instruction of block `b` of `kernel`, or nullptr.
const Instruction* lastInstruction(const Function& kernel, const ControlFlowGraph& cfg, size_t b) {
  const BasicBlock& block = cfg.blocks[b];
  for (size_t i = block.end; i-- > block.begin;)
    if (kernel.body[i].kind == Statement::Kind::Instruction) return &kernel.body[i].instruction;
  return nullptr;
}

/// Blocks that only a warp's lane 0 can reach: every path from the entry to them takes a branch
/// edge that only lane 0 takes (a guard like `threadIdx.x == 0`, `threadIdx.x % 128 == 0` with
/// %tid.x in warp numbering, or `%laneid == 0`). When such a block runs, lane 0 runs it, so its
/// markers need no lost count. Values are followed flow-insensitively (every definition of a
/// register must give the same form), through the arithmetic nvcc emits for these guards:
/// masks, `rem` by a power of two, and the signed-modulo sequence (x - (x + (x >> 31 >>> k) & -m),
/// where x >> 31 is 0 for a thread index).
class LaneZeroGuards {
 public:
  LaneZeroGuards(const Function& kernel, const ControlFlowGraph& cfg, bool linearX)
      : kernel_(kernel), cfg_(cfg), linearX_(linearX) {}

  std::vector<bool> run() {
    // From nothing known, each round recomputes every register from the last round's facts; a
    // register whose definitions disagree (or that depends on itself) stays unknown.
    for (int round = 0; round < 64; ++round) {
      std::unordered_map<std::string, Form> forms;
      std::unordered_map<std::string, Zero> zeros;
      for (const auto& st : kernel_.body) {
        if (st.kind != Statement::Kind::Instruction || st.instruction.operands.empty()) continue;
        const Instruction& inst = st.instruction;
        const Operand& dst = inst.operands.front();
        if (dst.kind != Operand::Kind::Register) continue;
        const std::string base = inst.baseOpcode();
        if (base == "bra" || base == "brx") continue;
        const bool guarded = inst.guard.has_value();
        if (inst.opcode.find(".pred") != std::string::npos || base == "setp") {
          const Zero z = guarded ? Zero::None : zeroOf(inst, base);
          auto [it, added] = zeros.try_emplace(dst.text, z);
          if (!added && it->second != z) it->second = Zero::None;
        } else {
          const Form f = guarded ? Form{} : formOf(inst, base);
          auto [it, added] = forms.try_emplace(dst.text, f);
          if (!added && !(it->second == f)) it->second = Form{};
        }
      }
      const bool changed = forms != forms_ || zeros != zeros_;
      forms_ = std::move(forms);
      zeros_ = std::move(zeros);
      if (!changed) break;
    }
    // Reachable from the entry without taking an edge only lane 0 takes.
    const size_t n = cfg_.blocks.size();
    std::vector<bool> reached(n, false);
    std::vector<uint32_t> work = {0};
    while (!work.empty()) {
      const uint32_t b = work.back();
      work.pop_back();
      if (b >= n || reached[b]) continue;
      reached[b] = true;
      const std::optional<uint32_t> only = laneZeroEdge(b);
      for (uint32_t c : cfg_.blocks[b].successors)
        if (!only || c != *only) work.push_back(c);
    }
    std::vector<bool> out(n);
    for (size_t b = 0; b < n; ++b) out[b] = !reached[b];
    return out;
  }

 private:
  /// An integer register's value: unknown, a constant, or %tid.x / %laneid masked.
  struct Form {
    enum class Kind : uint8_t { Unknown, Constant, Tid, Lane } kind = Kind::Unknown;
    int64_t value = 0;      ///< Constant
    uint64_t mask = ~0ull;  ///< Tid, Lane: the bits kept
    bool operator==(const Form&) const = default;
  };
  /// What a predicate's value says of the lane: lane 0 if it is true, or if it is false.
  enum class Zero : uint8_t { None, IfTrue, IfFalse };

  static Zero flip(Zero z) {
    return z == Zero::IfTrue ? Zero::IfFalse : z == Zero::IfFalse ? Zero::IfTrue : Zero::None;
  }

  Form formOf(const Operand& o, const std::string& opcode) const {
    if (auto v = operandValue(o, opcode)) return {Form::Kind::Constant, *v, 0};
    if (o.kind != Operand::Kind::Register) return {};
    if (o.text == "%tid.x") return {Form::Kind::Tid, 0, ~0ull};
    if (o.text == "%laneid") return {Form::Kind::Lane, 0, ~0ull};
    if (auto it = forms_.find(o.text); it != forms_.end()) return it->second;
    return {};
  }

  /// Zero of a value: it is 0 only in lane 0.
  bool zeroInLaneZeroOnly(const Form& f) const {
    return (f.kind == Form::Kind::Lane || (f.kind == Form::Kind::Tid && linearX_)) &&
           (f.mask & 31) == 31;
  }

  Form formOf(const Instruction& inst, const std::string& base) const {
    const auto& ops = inst.operands;
    if ((base == "mov" || base == "cvt") && ops.size() == 2) return formOf(ops[1], inst.opcode);
    if (ops.size() != 3) return {};
    const Form a = formOf(ops[1], inst.opcode);
    const Form b = formOf(ops[2], inst.opcode);
    const bool masked = a.kind == Form::Kind::Tid || a.kind == Form::Kind::Lane;
    const bool constant = b.kind == Form::Kind::Constant;
    if (a.kind == Form::Kind::Constant && constant) {
      if (base == "add") return {Form::Kind::Constant, a.value + b.value, 0};
      if (base == "shr" && b.value >= 0 && b.value < 64)
        return {Form::Kind::Constant, a.value >> b.value, 0};
      return {};
    }
    // Thread and lane indices are below 1024: shifted right by 10 or more, nothing is left.
    if (base == "shr" && masked && constant && b.value >= 10) return {Form::Kind::Constant, 0, 0};
    if (base == "add" && masked && constant && b.value == 0) return a;
    if (base == "add" && a.kind == Form::Kind::Constant && a.value == 0 &&
        (b.kind == Form::Kind::Tid || b.kind == Form::Kind::Lane))
      return b;
    if (base == "and" && masked && constant)
      return {a.kind, 0, a.mask & static_cast<uint64_t>(b.value)};
    // x & m1 - x & m2 = x & (m1 & ~m2) when m2's bits are m1's.
    if (base == "sub" && masked && b.kind == a.kind && (b.mask & ~a.mask) == 0)
      return {a.kind, 0, a.mask & ~b.mask};
    if (base == "sub" && masked && constant && b.value == 0) return a;
    if (base == "rem" && masked && constant && b.value > 0 && (b.value & (b.value - 1)) == 0)
      return {a.kind, 0, a.mask & static_cast<uint64_t>(b.value - 1)};
    return {};
  }

  /// What predicate register `name` (negated: `!name`) says of the lane.
  Zero zeroOf(const std::string& name, bool negated) const {
    auto it = zeros_.find(name);
    const Zero z = it == zeros_.end() ? Zero::None : it->second;
    return negated ? flip(z) : z;
  }

  Zero zeroOf(const Operand& o) const {
    return o.kind == Operand::Kind::Register ? zeroOf(o.text, o.negated) : Zero::None;
  }

  Zero zeroOf(const Instruction& inst, const std::string& base) const {
    const auto& ops = inst.operands;
    if (base == "mov" && ops.size() == 2) return zeroOf(ops[1]);
    if (base == "not" && ops.size() == 2) return flip(zeroOf(ops[1]));
    if ((base == "or" || base == "and") && ops.size() == 3) {
      // p = a | b false: both false. p = a & b true: both true.
      const Zero wanted = base == "or" ? Zero::IfFalse : Zero::IfTrue;
      return zeroOf(ops[1]) == wanted || zeroOf(ops[2]) == wanted ? wanted : Zero::None;
    }
    if (base != "setp" || ops.size() < 3 || ops[0].kind != Operand::Kind::Register)
      return Zero::None;
    // setp.eq/ne of a value that is 0 only in lane 0 with 0 (either side); `.and`/`.or` with a
    // further predicate keep what the comparison's truth (.and) or falsehood (.or) says.
    const std::string& op = inst.opcode;
    const bool eq = op.starts_with("setp.eq.");
    const bool ne = op.starts_with("setp.ne.");
    if (!eq && !ne) return Zero::None;
    const Form a = formOf(ops[1], op);
    const Form b = formOf(ops[2], op);
    const bool zeroTest =
        (zeroInLaneZeroOnly(a) && b.kind == Form::Kind::Constant && b.value == 0) ||
        (zeroInLaneZeroOnly(b) && a.kind == Form::Kind::Constant && a.value == 0);
    if (!zeroTest) return Zero::None;
    const Zero compare = eq ? Zero::IfTrue : Zero::IfFalse;
    if (ops.size() == 3) return compare;
    if (op.find(".and.") != std::string::npos)
      return compare == Zero::IfTrue ? compare : Zero::None;
    if (op.find(".or.") != std::string::npos)
      return compare == Zero::IfFalse ? compare : Zero::None;
    return Zero::None;
  }

  /// The successor of block `b` that only lane 0 goes to, if its branch says so.
  std::optional<uint32_t> laneZeroEdge(uint32_t b) const {
    const BasicBlock& block = cfg_.blocks[b];
    const Instruction* last = lastInstruction(kernel_, cfg_, b);
    if (last == nullptr || last->baseOpcode() != "bra" || !last->guard) return std::nullopt;
    const Zero z = zeroOf(last->guard->predicate, last->guard->negated);
    if (z == Zero::None) return std::nullopt;
    // A guarded branch's two successors: the fall-through (the next block) and the target (the
    // other one, as the CFG resolved its label); one successor when both are the same block.
    const uint32_t next = b + 1;
    const auto& s = block.successors;
    if (s.size() != 2 || next >= cfg_.blocks.size() || cfg_.blocks[next].begin != block.end ||
        (s[0] != next && s[1] != next))
      return std::nullopt;
    const uint32_t target = s[0] == next ? s[1] : s[0];
    return z == Zero::IfTrue ? target : next;
  }

  const Function& kernel_;
  const ControlFlowGraph& cfg_;
  const bool linearX_;
  std::unordered_map<std::string, Form> forms_;
  std::unordered_map<std::string, Zero> zeros_;
};

class Analysis {
 public:
  Analysis(const Function& kernel, const ControlFlowGraph& cfg, bool linearX)
      : kernel_(kernel), cfg_(cfg), linearX_(linearX) {
    for (const auto& p : kernel.params) params_.insert(p.name);
    for (const auto& st : kernel.body) {
      if (st.kind != Statement::Kind::Variable || st.variable.stateSpace != ".reg") continue;
      if (st.variable.registerCount) {
        counted_[st.variable.name] = *st.variable.registerCount;
      } else {
        regs_.try_emplace(st.variable.name, Spread::uniform());
      }
    }
  }

  std::vector<bool> run() {
    const size_t n = cfg_.blocks.size();
    unsafe_.assign(n, false);
    if (n == 0) return unsafe_;
    postDominators();
    // Values and blocks only ever move up (Uniform -> Divergent, safe -> unsafe): a fixed point.
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t b = 0; b < n; ++b)
        for (size_t i = cfg_.blocks[b].begin; i < cfg_.blocks[b].end; ++i)
          changed |= transfer(kernel_.body[i], unsafe_[b]);
      for (size_t b = 0; b < n; ++b) changed |= propagate(b);
    }
    return unsafe_;
  }

 private:
  /// A register's spread: a declared register's as defined so far, a special register's by its
  /// kind; any other name (undeclared, unknown special) is divergent.
  Spread spreadOf(const std::string& name) const {
    if (auto it = regs_.find(name); it != regs_.end()) return it->second;
    if (name == "%tid.x") return linearX_ ? Spread::threadIndex(0) : Spread::divergent();
    for (auto special : kUniformSpecials)
      if (names(name, special)) return Spread::uniform();
    // `%r12` of `.reg .b32 %r<20>`: not defined yet.
    const size_t digits = name.find_last_not_of("0123456789") + 1;
    if (digits < name.size()) {
      uint64_t index = 0;
      std::from_chars(name.data() + digits, name.data() + name.size(), index);
      if (auto it = counted_.find(name.substr(0, digits));
          it != counted_.end() && index < it->second)
        return Spread::uniform();
    }
    return Spread::divergent();
  }

  Spread spreadOf(const Operand& o) const {
    switch (o.kind) {
      case Operand::Kind::Register:
        return spreadOf(o.text);
      case Operand::Kind::Address:
      case Operand::Kind::Vector: {
        Spread s = Spread::uniform();
        for (const auto& e : o.elements) s = join(s, spreadOf(e));
        return s;
      }
      default:
        return Spread::uniform();
    }
  }

  /// The spread of what `inst` computes, before its guard and block are taken into account.
  Spread computed(const Instruction& inst, const std::string& base) const {
    // Per-lane by nature: atomics' old values, shuffles, lane masks, and the matrix instructions'
    // fragments (each lane holds its own part of the tile).
    if (base == "atom" || base == "shfl" || base == "activemask" || base == "match" ||
        base == "elect" || base == "mapa" || base == "getctarank" || base == "ldmatrix" ||
        base == "movmatrix" || base == "wmma" || base == "mma" || base == "wgmma" ||
        base == "tcgen05" || base == "call")
      return Spread::divergent();
    if (base == "vote" || base == "redux") return Spread::uniform();  // one result for its lanes
    bool uniform = true;
    std::optional<size_t> thread;  // the one source holding %tid.x + k, if any
    for (size_t k = 1; k < inst.operands.size(); ++k) {
      const Spread s = spreadOf(inst.operands[k]);
      if (s.kind == Spread::Kind::Divergent || (s.kind == Spread::Kind::ThreadIndex && thread))
        return Spread::divergent();
      if (s.kind == Spread::Kind::ThreadIndex) thread = k;
      uniform = uniform && s.isUniform();
    }
    if (base == "ld" || base == "ldu") {
      // One address for the warp reads one value in the global, shared, constant and kernel
      // parameter spaces; not in the per-thread local space, nor through a generic address (which
      // may be a local one: debug builds keep their locals there), nor from a call's return
      // values.
      const auto space = [&](const char* name) {
        return inst.opcode.find(name) != std::string::npos;
      };
      if (!uniform || !(space(".global") || space(".shared") || space(".const") || space(".param")))
        return Spread::divergent();
      if (inst.opcode.find(".param") != std::string::npos && inst.operands.size() > 1) {
        const Operand& a = inst.operands[1];
        const Operand& root =
            a.kind == Operand::Kind::Address && !a.elements.empty() ? a.elements.front() : a;
        if (!params_.contains(root.text)) return Spread::divergent();
      }
      return Spread::uniform();
    }
    if (uniform) return Spread::uniform();
    return threadIndexResult(inst, base, *thread);
  }

  /// What an instruction makes of %tid.x + k (operand `at`) and uniform operands. A warp's
  /// lanes hold %tid.x from 32 w to 32 w + 31: one value per warp remains after shifting out (or
  /// extracting above) the low 5 bits, dividing by a multiple of 32 or clearing the low 5 bits
  /// of an aligned index, and a comparison with a constant is the same for the whole warp when
  /// its boundary falls on a multiple of 32.
  Spread threadIndexResult(const Instruction& inst, const std::string& base, size_t at) const {
    const Spread t = spreadOf(inst.operands[at]);
    if (base == "mov" || base == "cvt" || base == "cvta") return t;
    const size_t other = at == 1 ? 2 : 1;
    const std::optional<int64_t> c = inst.operands.size() > other
                                         ? operandValue(inst.operands[other], inst.opcode)
                                         : std::nullopt;
    // Offsets far from a thread index (wrapping arithmetic, addresses) are not followed.
    if (!c || *c > kMaxOffset || *c < -kMaxOffset) return Spread::divergent();
    if (base == "add") return Spread::threadIndex(t.offset + *c, t.exact);
    if (base == "sub")
      return at == 1 ? Spread::threadIndex(t.offset - *c, t.exact) : Spread::divergent();
    if (at != 1) return Spread::divergent();
    const bool aligned = t.residue() == 0;
    if ((base == "shr" || base == "bfe") && *c >= 5 && aligned) return Spread::uniform();
    // Signed division truncates towards zero: -31..-1 and -32 part. Unsigned or non-negative
    // values divide like a shift.
    const bool signedNegative =
        inst.opcode.find(".s") != std::string::npos && !(t.exact && t.offset >= 0);
    if (base == "div" && *c > 0 && *c % 32 == 0 && aligned && !signedNegative)
      return Spread::uniform();
    if (base == "and" && (*c & 31) == 0 && aligned) return Spread::uniform();
    if (base == "setp") {
      // %tid.x + k < c holds for %tid.x < c - k: the same for a warp when 32 divides c - k (for
      // <= and >, c - k + 1). Unsigned, a negative (or unknown) k also wraps at %tid.x = -k:
      // 32 must divide k.
      const std::string& op = inst.opcode;
      const bool unsignedCompare =
          op.find(".u") != std::string::npos || op.find(".b") != std::string::npos ||
          op.find(".lo") != std::string::npos || op.find(".hi") != std::string::npos;
      if (unsignedCompare && !aligned && !(t.exact && t.offset >= 0)) return Spread::divergent();
      int64_t boundary = *c - t.offset;
      if (op.find(".le.") != std::string::npos || op.find(".gt.") != std::string::npos ||
          op.find(".ls.") != std::string::npos || op.find(".hi.") != std::string::npos)
        ++boundary;
      const bool ordered =
          op.find(".lt.") != std::string::npos || op.find(".ge.") != std::string::npos ||
          op.find(".le.") != std::string::npos || op.find(".gt.") != std::string::npos ||
          op.find(".lo.") != std::string::npos || op.find(".hs.") != std::string::npos ||
          op.find(".ls.") != std::string::npos || op.find(".hi.") != std::string::npos;
      if (ordered && ((boundary % 32) + 32) % 32 == 0) return Spread::uniform();
    }
    return Spread::divergent();
  }

  /// Raises the spread of the registers `s` defines; true when one rose.
  bool transfer(const Statement& s, bool unsafeBlock) {
    if (s.kind != Statement::Kind::Instruction || s.instruction.operands.empty()) return false;
    const Instruction& inst = s.instruction;
    const Operand& dst = inst.operands.front();
    if (dst.kind != Operand::Kind::Register && dst.kind != Operand::Kind::Vector) return false;
    const std::string base = inst.baseOpcode();
    if (base == "bra" || base == "brx") return false;
    Spread result = computed(inst, base);
    // A guard that differs between lanes leaves some lanes' old values; so does a block that
    // only some lanes run.
    if (inst.guard && !spreadOf(inst.guard->predicate).isUniform()) result = Spread::divergent();
    if (unsafeBlock) result = Spread::divergent();

    bool rose = false;
    const auto define = [&](const Operand& r) {
      if (r.kind != Operand::Kind::Register) return;
      auto [it, added] = regs_.try_emplace(r.text, result);
      if (const Spread joined = join(it->second, result); added || joined != it->second) {
        it->second = joined;
        rose = true;
      }
    };
    if (dst.kind == Operand::Kind::Register) {
      define(dst);
    } else {
      for (const auto& e : dst.elements) define(e);
    }
    return rose;
  }

  /// Whether block `b` may leave the kernel (its last instruction a ret or exit, guarded or not,
  /// or no successor at all).
  bool leaves(size_t b) const {
    const Instruction* last = lastInstruction(kernel_, cfg_, b);
    const std::string base = last != nullptr ? last->baseOpcode() : "";
    return cfg_.blocks[b].successors.empty() || base == "ret" || base == "exit";
  }

  /// Marks what block `b`'s branch or exit may split; true when a block became unsafe.
  bool propagate(size_t b) {
    const BasicBlock& block = cfg_.blocks[b];
    bool changed = false;
    const auto mark = [&](uint32_t c) {
      if (!unsafe_[c]) unsafe_[c] = changed = true;
    };
    const Instruction* last = lastInstruction(kernel_, cfg_, b);
    if (last == nullptr) return false;
    const Instruction& inst = *last;
    const std::string base = inst.baseOpcode();
    const bool splitGuard = inst.guard && !spreadOf(inst.guard->predicate).isUniform() &&
                            inst.opcode.find(".uni") == std::string::npos;
    if ((base == "ret" || base == "exit") && (splitGuard || (inst.guard && unsafe_[b]))) {
      // Some lanes may leave here while the others go on: everything after may lack lane 0.
      std::vector<bool> seen(cfg_.blocks.size(), false);
      std::vector<uint32_t> work(block.successors.begin(), block.successors.end());
      while (!work.empty()) {
        const uint32_t c = work.back();
        work.pop_back();
        if (seen[c]) continue;
        seen[c] = true;
        mark(c);
        work.insert(work.end(), cfg_.blocks[c].successors.begin(), cfg_.blocks[c].successors.end());
      }
      return changed;
    }
    if (block.successors.size() < 2) return false;
    bool split = unsafe_[b];
    if (base == "bra") split = split || splitGuard;
    if (base == "brx" && !inst.operands.empty())
      split = split || (!spreadOf(inst.operands[0]).isUniform() &&
                        inst.opcode.find(".uni") == std::string::npos);
    if (!split && base != "bra" && base != "brx") split = true;  // unknown: assume it splits
    if (!split) return false;
    for (uint32_t c : dependents_[b]) mark(c);
    return changed;
  }

  /// Immediate post-dominators (a virtual exit after every block that may leave the kernel) and,
  /// from them, each branch block's control-dependent blocks. Blocks from which no path leaves
  /// the kernel have no post-dominators and are unsafe.
  void postDominators() {
    const size_t n = cfg_.blocks.size();
    const size_t exitNode = n;
    // The blocks from which some path leaves the kernel.
    std::vector<bool> reaches(n, false);
    std::vector<size_t> work;
    for (size_t b = 0; b < n; ++b)
      if (leaves(b)) work.push_back(b);
    while (!work.empty()) {
      const size_t b = work.back();
      work.pop_back();
      if (reaches[b]) continue;
      reaches[b] = true;
      for (uint32_t p : cfg_.blocks[b].predecessors) work.push_back(p);
    }
    for (size_t b = 0; b < n; ++b)
      if (!reaches[b]) unsafe_[b] = true;
    const size_t words = (n + 1 + 63) / 64;
    std::vector<std::vector<uint64_t>> pdom(n + 1, std::vector<uint64_t>(words, ~uint64_t{0}));
    pdom[exitNode].assign(words, 0);
    pdom[exitNode][exitNode / 64] |= uint64_t{1} << (exitNode % 64);
    // Paths that never leave do not count: only successors from which the kernel can be left.
    const auto successors = [&](size_t b) {
      std::vector<size_t> s;
      for (uint32_t c : cfg_.blocks[b].successors)
        if (reaches[c]) s.push_back(c);
      if (leaves(b)) s.push_back(exitNode);
      return s;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t b = n; b-- > 0;) {
        if (!reaches[b]) continue;
        std::vector<uint64_t> meet(words, ~uint64_t{0});
        for (size_t s : successors(b))
          for (size_t w = 0; w < words; ++w) meet[w] &= pdom[s][w];
        meet[b / 64] |= uint64_t{1} << (b % 64);
        if (meet != pdom[b]) {
          pdom[b] = std::move(meet);
          changed = true;
        }
      }
    }
    const auto has = [&](size_t b, size_t d) { return (pdom[b][d / 64] >> (d % 64)) & 1; };
    const auto count = [&](size_t b) {
      size_t c = 0;
      for (uint64_t w : pdom[b]) c += static_cast<size_t>(__builtin_popcountll(w));
      return c;
    };
    std::vector<size_t> ipdom(n + 1, exitNode);
    for (size_t b = 0; b < n; ++b) {
      if (!reaches[b]) continue;
      const size_t own = count(b);
      for (size_t d = 0; d <= n; ++d)
        if (d != b && has(b, d) && count(d) == own - 1) ipdom[b] = d;
    }
    dependents_.assign(n, {});
    for (size_t b = 0; b < n; ++b) {
      if (cfg_.blocks[b].successors.size() < 2) continue;
      for (uint32_t s : cfg_.blocks[b].successors) {
        // A successor from which the kernel is never left is unsafe already.
        for (size_t r = s; r != exitNode && r != ipdom[b] && reaches[r]; r = ipdom[r])
          dependents_[b].push_back(static_cast<uint32_t>(r));
      }
    }
  }

  const Function& kernel_;
  const ControlFlowGraph& cfg_;
  const bool linearX_;
  std::unordered_set<std::string> params_;
  std::unordered_map<std::string, uint32_t> counted_;  ///< `%r` -> 20 for `.reg .b32 %r<20>`
  std::unordered_map<std::string, Spread> regs_;
  std::vector<bool> unsafe_;
  std::vector<std::vector<uint32_t>> dependents_;
};

}  // namespace

std::optional<std::string> blockShapeConflict(const Function& kernel,
                                              const std::array<uint32_t, 3>& block) {
  for (const auto& d : kernel.performanceDirectives) {
    if (d.name != ".reqntid" && d.name != ".maxntid") continue;
    std::vector<uint64_t> n = numbers(d.text);
    if (n.empty()) continue;
    n.resize(3, 1);
    if (d.name == ".reqntid" && (n[0] != block[0] || n[1] != block[1] || n[2] != block[2]))
      return fmt::format(".reqntid {}, {}, {} makes every launch use that shape", n[0], n[1], n[2]);
    const uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
    if (d.name == ".maxntid" && threads > n[0] * n[1] * n[2])
      return fmt::format(
          ".maxntid {}, {}, {} (__launch_bounds__) allows at most {} threads, not {}", n[0], n[1],
          n[2], n[0] * n[1] * n[2], threads);
  }
  return std::nullopt;
}

std::vector<bool> blocksWithoutLaneZero(const Function& kernel, const ControlFlowGraph& cfg,
                                        const std::optional<std::array<uint32_t, 3>>& block) {
  const bool linearX = linearThreadX(kernel, block);
  std::vector<bool> unsafe = Analysis(kernel, cfg, linearX).run();
  const std::vector<bool> laneZeroOnly = LaneZeroGuards(kernel, cfg, linearX).run();
  for (size_t b = 0; b < unsafe.size() && b < laneZeroOnly.size(); ++b)
    unsafe[b] = unsafe[b] && !laneZeroOnly[b];
  return unsafe;
}

}  // namespace argus::ptx
