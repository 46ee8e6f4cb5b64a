// Derived regions (argus/ptx/derive.h): selectors pick instruction sets of a kernel, and each set
// becomes marker comments on its entry and exit edges of an instruction-level control-flow graph.
//
// Placement of the markers one edge p -> q needs, in this order of preference:
//   1. before q, when every edge into q needs the same markers (ends right after q's labels,
//      begins right before q), e.g. a run of ops inside a block, or a block only the region's
//      exits reach;
//   2. right after p, when the edge falls through (p is not a taken branch);
//   3. on a trampoline: p branches to a new label at the function's end that holds the markers
//      and branches on to p's target. Only the trace variants turn the markers into code; in the
//      other builds the trampoline is one unconditional branch ptxas threads away.
// The region analysis then checks the result: derived regions must nest with each other and
// with the marked regions, and every error it finds names the selector that caused it.
#include "argus/ptx/derive.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "argus/ptx/cfg.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/ptx/regions.h"

namespace argus::ptx {
namespace {

constexpr uint32_t kEntry = UINT32_MAX;  // the edge into the function's first instruction

/// A region name made from free text: invalid characters become '_'.
std::string nameFrom(std::string_view text) {
  std::string name;
  for (char c : text) name.push_back(isRegionNameChar(c) ? c : '_');
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) != 0 || name[0] == '.' ||
      name[0] == '-')
    name.insert(name.begin(), '_');
  return name;
}

std::string_view stem(std::string_view file) {
  if (auto slash = file.find_last_of('/'); slash != std::string_view::npos)
    file.remove_prefix(slash + 1);
  if (auto dot = file.find('.'); dot != std::string_view::npos && dot > 0)
    file = file.substr(0, dot);
  return file;
}

bool fileMatches(std::string_view wanted, std::string_view file) {
  if (wanted.empty()) return true;
  if (file == wanted) return true;
  return file.size() > wanted.size() && file.ends_with(wanted) &&
         file[file.size() - wanted.size() - 1] == '/';
}

std::optional<uint32_t> number(std::string_view text) {
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

/// `[FILE:]REST`: the file part (may hold ':' only before the last one) and the rest.
std::pair<std::string, std::string> splitFile(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return {"", std::string(text)};
  return {std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
}

// ---- operation kinds ------------------------------------------------------------------------

/// Whether a `cp.async.bulk`-family opcode copies global -> shared (dst names come first).
bool bulkLoad(std::string_view op) {
  auto g = op.find(".global");
  auto s = op.find(".shared::");
  return g != std::string_view::npos && s != std::string_view::npos && s < g;
}

bool matchesOp(std::string_view kind, const Instruction& inst) {
  std::string_view op = inst.opcode;
  const bool bulk = op.starts_with("cp.async.bulk") && !op.starts_with("cp.async.bulk.prefetch") &&
                    !op.starts_with("cp.async.bulk.commit_group") &&
                    !op.starts_with("cp.async.bulk.wait_group");
  if (kind == "tma_load") return bulk && bulkLoad(op);
  if (kind == "tma_store")
    return (bulk && !bulkLoad(op)) || (op.starts_with("cp.reduce.async.bulk") && !bulkLoad(op));
  if (kind == "wgmma") return op.starts_with("wgmma.mma_async");
  if (kind == "wgmma_wait") return op.starts_with("wgmma.wait_group");
  if (kind == "cp_async") return op.starts_with("cp.async.") && !op.starts_with("cp.async.bulk");
  if (kind == "mbarrier_wait")
    return op.starts_with("mbarrier.try_wait") || op.starts_with("mbarrier.test_wait");
  if (kind == "bar_sync")
    return op.starts_with("bar.sync") || op.starts_with("barrier.sync") ||
           op.starts_with("barrier.cta.sync") || op.starts_with("bar.cta.sync") ||
           op.starts_with("bar.red") || op.starts_with("barrier.red") ||
           op.starts_with("barrier.cta.red");
  if (kind == "ld_global") return op.starts_with("ld.global");
  if (kind == "st_global") return op.starts_with("st.global");
  return false;
}

/// Kinds whose instructions sit in a spin loop of an inline-asm `{ }` block: the region takes
/// the whole block, so that it times the wait and not one probe of it.
bool takesAsmBlock(std::string_view kind) {
  return kind == "mbarrier_wait";
}

std::string_view callee(const Instruction& inst) {
  if (inst.baseOpcode() != "call") return {};
  for (const auto& o : inst.operands)
    if (o.kind == Operand::Kind::Symbol) return o.text;
  return {};
}

// ---- the instruction-level graph ------------------------------------------------------------

struct Edge {
  uint32_t from = kEntry;     // instruction index, or kEntry
  uint32_t to = 0;            // instruction index
  bool branch = false;        // p branches to q (else falls through)
  bool retargetable = false;  // a `bra` whose label operand can be replaced
  size_t label = 0;           // branch: the target block's label statement
};

struct Graph {
  std::vector<size_t> instr;      // body index of every instruction
  std::vector<uint32_t> instrAt;  // body index -> instruction index (UINT32_MAX if none)
  std::vector<Edge> edges;
  std::vector<std::vector<uint32_t>> in, out;  // edge ids by instruction
  std::vector<uint32_t> scopeDepth;            // by body index
};

Graph buildGraph(const Function& f, const ControlFlowGraph& cfg) {
  Graph g;
  g.instrAt.assign(f.body.size(), UINT32_MAX);
  g.scopeDepth.assign(f.body.size(), 0);
  uint32_t depth = 0;
  for (size_t i = 0; i < f.body.size(); ++i) {
    if (f.body[i].kind == Statement::Kind::ScopeBegin) ++depth;
    g.scopeDepth[i] = depth;
    if (f.body[i].kind == Statement::Kind::ScopeEnd && depth > 0) --depth;
    if (f.body[i].kind == Statement::Kind::Instruction) {
      g.instrAt[i] = static_cast<uint32_t>(g.instr.size());
      g.instr.push_back(i);
    }
  }
  g.in.resize(g.instr.size());
  g.out.resize(g.instr.size());
  auto add = [&](Edge e) {
    const auto id = static_cast<uint32_t>(g.edges.size());
    if (e.from != kEntry) g.out[e.from].push_back(id);
    g.in[e.to].push_back(id);
    g.edges.push_back(e);
  };
  // The first instruction reached from the start of block t (blocks without one fall through).
  auto firstFrom = [&](uint32_t t) -> std::optional<uint32_t> {
    for (; t < cfg.blocks.size(); ++t) {
      for (size_t i = cfg.blocks[t].begin; i < cfg.blocks[t].end; ++i)
        if (g.instrAt[i] != UINT32_MAX) return g.instrAt[i];
    }
    return std::nullopt;
  };
  if (auto first = firstFrom(0)) add(Edge{kEntry, *first, false, false, 0});
  for (uint32_t b = 0; b < cfg.blocks.size(); ++b) {
    const auto& block = cfg.blocks[b];
    std::optional<uint32_t> last;
    for (size_t i = block.begin; i < block.end; ++i) {
      if (g.instrAt[i] == UINT32_MAX) continue;
      if (last) add(Edge{*last, g.instrAt[i], false, false, 0});
      last = g.instrAt[i];
    }
    if (!last) continue;  // reached through: firstFrom passes it
    const Instruction& p = f.body[g.instr[*last]].instruction;
    const std::string base = p.baseOpcode();
    const bool flowEnds = endsFlow(base);
    const bool unconditional = flowEnds && !p.guard.has_value();
    for (uint32_t t : block.successors) {
      auto q = firstFrom(t);
      if (!q) continue;
      const bool next = t == b + 1;
      const bool branchTo =
          flowEnds && (base == "bra" || base == "brx") && (!next || block.successors.size() == 1);
      if (branchTo) add(Edge{*last, *q, true, base == "bra", cfg.blocks[t].begin});
      if (next && !unconditional) add(Edge{*last, *q, false, false, 0});
    }
  }
  return g;
}

// ---- occurrences ----------------------------------------------------------------------------

using InstrSet = std::vector<uint32_t>;  // sorted instruction indices

bool has(const InstrSet& set, uint32_t i) {
  return std::binary_search(set.begin(), set.end(), i);
}

InstrSet intersect(const InstrSet& a, const InstrSet& b) {
  InstrSet out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

struct Occurrence {
  std::string name;
  std::string selector;
  uint32_t depth = 0;  // definition depth: a child nests inside its parent on equal sets
  InstrSet set;
  std::string iteration;  // `iter=` of its begin markers: a trip counter, or empty
};

/// The trip counter of one loop (see TripCounterStep): reset where the loop is entered from
/// (the enclosing loop's header, else the kernel's start), stepped at its own header.
struct TripCounter {
  std::string reg;
  std::string header;        // the loop header's label
  std::string parentHeader;  // the enclosing loop header's label; empty: the kernel's start
};

struct Loop {
  uint32_t header = 0;  // block
  std::vector<uint32_t> blocks;
  SourcePosition line;
};

struct Kernel {
  const Function& function;
  const Module& module;
  ControlFlowGraph cfg;
  Graph graph;
  std::vector<SourcePosition> positions;
  std::vector<Loop> loops;  // outer loops before the loops they hold
  const FunctionRegions* marked = nullptr;

  std::string where(uint32_t instruction) const {
    const size_t s = graph.instr[instruction];
    const auto& loc = function.body[s].loc;
    std::string ptx = fmt::format("{}:{}:{}", module.fileName, loc.line, loc.column);
    const auto& src = positions[s];
    return src.file.empty() ? ptx : fmt::format("{}:{} ({})", src.file, src.line, ptx);
  }
  bool terminal(uint32_t i) const {
    const std::string base = function.body[graph.instr[i]].instruction.baseOpcode();
    return base == "ret" || base == "exit" || base == "trap";
  }
  InstrSet all() const {
    InstrSet s;
    for (uint32_t i = 0; i < graph.instr.size(); ++i)
      if (!terminal(i)) s.push_back(i);
    return s;
  }
};

std::vector<Loop> naturalLoops(const Kernel& k) {
  const auto& cfg = k.cfg;
  const DominatorTree dom(cfg);
  std::map<uint32_t, std::set<uint32_t>> bodies;        // header -> blocks
  std::map<uint32_t, std::vector<uint32_t>> latchesOf;  // header -> latches
  for (uint32_t b = 0; b < cfg.blocks.size(); ++b)
    for (uint32_t h : cfg.blocks[b].successors) {
      if (!dom.dominates(h, b)) continue;
      auto& body = bodies[h];
      latchesOf[h].push_back(b);
      body.insert(h);
      std::vector<uint32_t> work{b};
      while (!work.empty()) {
        const uint32_t x = work.back();
        work.pop_back();
        if (!body.insert(x).second) continue;  // the header is in from the start
        for (uint32_t p : cfg.blocks[x].predecessors) work.push_back(p);
      }
    }
  std::vector<Loop> loops;
  for (auto& [h, body] : bodies) {
    // A spin loop inside an inline-asm `{ }` (an mbarrier wait) is not a loop of the source.
    if (k.graph.scopeDepth[cfg.blocks[h].begin] > 0) continue;
    Loop loop{h, {body.begin(), body.end()}, {}};
    // The loop's line: its back edge's branch (the `for`/`while` condition), else its header.
    for (uint32_t latch : latchesOf[h]) {
      const auto& block = cfg.blocks[latch];
      for (size_t i = block.end; i-- > block.begin;) {
        if (k.function.body[i].kind != Statement::Kind::Instruction) continue;
        const auto& pos = k.positions[i];
        if (pos.line != 0 && (loop.line.line == 0 || pos.line < loop.line.line)) loop.line = pos;
        break;
      }
    }
    for (size_t i = cfg.blocks[h].begin; loop.line.line == 0 && i < cfg.blocks[h].end; ++i)
      if (k.function.body[i].kind == Statement::Kind::Instruction && k.positions[i].line != 0)
        loop.line = k.positions[i];
    loops.push_back(std::move(loop));
  }
  std::sort(loops.begin(), loops.end(), [](const Loop& a, const Loop& b) {
    return a.blocks.size() != b.blocks.size() ? a.blocks.size() > b.blocks.size()
                                              : a.header < b.header;
  });
  return loops;
}

InstrSet loopInstructions(const Kernel& k, const Loop& loop) {
  InstrSet set;
  for (uint32_t b : loop.blocks)
    for (size_t i = k.cfg.blocks[b].begin; i < k.cfg.blocks[b].end; ++i)
      if (k.graph.instrAt[i] != UINT32_MAX && !k.terminal(k.graph.instrAt[i]))
        set.push_back(k.graph.instrAt[i]);
  std::sort(set.begin(), set.end());
  return set;
}

std::string loopName(const Loop& loop) {
  if (loop.line.line == 0) return fmt::format("loop_b{}", loop.header);
  return nameFrom(fmt::format("loop_{}_{}", stem(loop.line.file), loop.line.line));
}

std::string describeLoops(const Kernel& k) {
  std::string list;
  for (const auto& loop : k.loops)
    list += (list.empty() ? "" : ", ") +
            (loop.line.line == 0 ? fmt::format("one without .loc (block {})", loop.header)
                                 : fmt::format("{}:{}", loop.line.file, loop.line.line));
  return list.empty() ? "it has none" : "its loops are at " + list;
}

/// Runs of one op kind: maximal sequences of adjacent matching instructions in one block (an
/// inline-asm block for the kinds that spin, the call's `{ }` for calls).
std::vector<InstrSet> opRuns(const Kernel& k, const std::function<bool(const Instruction&)>& pick,
                             bool wholeScope) {
  const auto& body = k.function.body;
  std::vector<InstrSet> runs;
  std::vector<bool> taken(k.graph.instr.size(), false);
  for (uint32_t i = 0; i < k.graph.instr.size(); ++i) {
    if (taken[i] || !pick(body[k.graph.instr[i]].instruction)) continue;
    const size_t s = k.graph.instr[i];
    InstrSet run;
    if (wholeScope && k.graph.scopeDepth[s] > 0) {
      // The innermost `{ }` holding s: back to its `{`, forward to its `}`.
      const uint32_t depth = k.graph.scopeDepth[s];
      size_t open = s, close = s;
      while (open > 0 &&
             !(body[open].kind == Statement::Kind::ScopeBegin && k.graph.scopeDepth[open] == depth))
        --open;
      while (close + 1 < body.size() &&
             !(body[close].kind == Statement::Kind::ScopeEnd && k.graph.scopeDepth[close] == depth))
        ++close;
      for (size_t j = open; j <= close; ++j)
        if (k.graph.instrAt[j] != UINT32_MAX && !k.terminal(k.graph.instrAt[j]))
          run.push_back(k.graph.instrAt[j]);
    } else {
      const uint32_t block = k.cfg.blockOf[s];
      for (uint32_t j = i; j < k.graph.instr.size() && k.cfg.blockOf[k.graph.instr[j]] == block &&
                           pick(body[k.graph.instr[j]].instruction);
           ++j)
        run.push_back(j);
    }
    for (uint32_t j : run) taken[j] = true;
    if (!run.empty()) runs.push_back(std::move(run));
  }
  return runs;
}

/// The instructions of lines A..B: `.loc` line 0 (code the compiler made) belongs to the line
/// before it in its block, else to the line after.
InstrSet lineInstructions(const Kernel& k, const Selector& sel) {
  const auto& g = k.graph;
  std::vector<SourcePosition> effective(g.instr.size());
  for (uint32_t i = 0; i < g.instr.size(); ++i) effective[i] = k.positions[g.instr[i]];
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t n = 0; n < g.instr.size(); ++n) {
      const uint32_t i = pass == 0 ? n : static_cast<uint32_t>(g.instr.size() - 1 - n);
      if (effective[i].line != 0 || effective[i].file.empty()) continue;
      const int32_t from = pass == 0 ? static_cast<int32_t>(i) - 1 : static_cast<int32_t>(i) + 1;
      if (from < 0 || from >= static_cast<int32_t>(g.instr.size())) continue;
      if (k.cfg.blockOf[g.instr[from]] == k.cfg.blockOf[g.instr[i]]) effective[i] = effective[from];
    }
  InstrSet set;
  for (uint32_t i = 0; i < g.instr.size(); ++i)
    if (!k.terminal(i) && effective[i].line >= sel.first && effective[i].line <= sel.last &&
        fileMatches(sel.file, effective[i].file))
      set.push_back(i);
  return set;
}

/// The instructions a marked region (with its subregions) can own.
Result<InstrSet> markedInstructions(const Kernel& k, const std::string& path,
                                    const std::string& origin) {
  if (k.marked == nullptr)
    return fail("regions", fmt::format("{}: `refine: {}`: kernel `{}` has no marked regions",
                                       origin, path, k.function.name));
  std::vector<bool> inside(k.marked->regions.size(), false);
  bool found = false;
  for (size_t r = 0; r < k.marked->regions.size(); ++r) {
    const auto& region = k.marked->regions[r];
    inside[r] = region.path == path || (region.parent && inside[*region.parent]);
    found = found || region.path == path;
  }
  if (!found) {
    std::string list;
    for (const auto& region : k.marked->regions) list += (list.empty() ? "" : ", ") + region.path;
    return fail("regions",
                fmt::format("{}: `refine: {}`: kernel `{}` has no marked region `{}` "
                            "(its regions: {})",
                            origin, path, k.function.name, path, list.empty() ? "none" : list));
  }
  InstrSet set;
  for (uint32_t i = 0; i < k.graph.instr.size(); ++i)
    for (uint32_t owner : k.marked->owners[k.graph.instr[i]])
      if (inside[owner] && !k.terminal(i)) {
        set.push_back(i);
        break;
      }
  return set;
}

std::string defaultName(const Selector& sel) {
  switch (sel.kind) {
    case Selector::Kind::Loops:
    case Selector::Kind::Loop:
      return "loop";
    case Selector::Kind::Op:
      return sel.op;
    case Selector::Kind::Call:
      return nameFrom(sel.function);
    case Selector::Kind::Lines:
      return nameFrom(sel.file.empty()
                          ? fmt::format("lines_{}_{}", sel.first, sel.last)
                          : fmt::format("lines_{}_{}_{}", stem(sel.file), sel.first, sel.last));
  }
  return "region";
}

class Deriver {
 public:
  explicit Deriver(Kernel& k) : k_(k) {}

  /// Appends the occurrences of `def` (and its children) inside `parent`.
  Result<void> add(const RegionDefinition& def, const InstrSet& parent, uint32_t depth) {
    if (!def.refine.empty()) {
      if (depth != 0)
        return fail("regions", fmt::format("{}: `refine: {}` must be at the top level of a "
                                           "region file; inside another region give `select`",
                                           def.origin, def.refine));
      auto set = markedInstructions(k_, def.refine, def.origin);
      if (!set) return std::unexpected(set.error());
      for (const auto& child : def.children)
        if (auto ok = add(child, *set, depth + 1); !ok) return ok;
      return {};
    }
    auto sel = parseSelector(def.select);
    if (!sel) return fail("regions", fmt::format("{}: {}", def.origin, sel.error().message));
    const std::string name = def.name.empty() ? defaultName(*sel) : def.name;
    std::vector<InstrSet> parts;
    std::vector<std::string> names;
    std::string none;  // why nothing was selected
    switch (sel->kind) {
      case Selector::Kind::Loops:
      case Selector::Kind::Loop: {
        for (const auto& loop : k_.loops) {
          if (sel->kind == Selector::Kind::Loop &&
              (loop.line.line != sel->first || !fileMatches(sel->file, loop.line.file)))
            continue;
          InstrSet set = loopInstructions(k_, loop);
          if (set.empty() || intersect(set, parent).size() != set.size()) continue;
          if (sel->kind == Selector::Kind::Loops && (onlyWaits(set) || holdsMarkers(loop)))
            continue;
          parts.push_back(std::move(set));
          names.push_back(def.name.empty() || sel->kind == Selector::Kind::Loops ? loopName(loop)
                                                                                 : def.name);
        }
        if (sel->kind == Selector::Kind::Loops && !def.name.empty() && !parts.empty())
          return fail("regions", fmt::format("{}: `{}` derives one region per loop, named after "
                                             "its line; drop `name`, or select one loop with "
                                             "loop:[FILE:]LINE",
                                             def.origin, sel->text));
        none =
            sel->kind == Selector::Kind::Loops
                ? "it has no loop (a loop unrolled completely has no back edge)"
                : fmt::format(
                      "no loop has its back edge at {}{}; {} (a loop the compiler "
                      "unrolled completely has none: give it `#pragma unroll 1`, or "
                      "select its lines with lines:FILE:A-B)",
                      sel->file.empty() ? "line " : sel->file + ":", sel->first, describeLoops(k_));
        break;
      }
      case Selector::Kind::Op:
      case Selector::Kind::Call: {
        const std::string op = sel->op, fn = sel->function;
        auto pick = [&](const Instruction& inst) {
          if (sel->kind == Selector::Kind::Op) return matchesOp(op, inst);
          const std::string_view c = callee(inst);
          return !c.empty() && (c == fn || c.starts_with(fn));
        };
        for (auto& run : opRuns(k_, pick, sel->kind == Selector::Kind::Call || takesAsmBlock(op))) {
          if (takesAsmBlock(op)) run = spinLoopAround(run);
          if (sel->kind == Selector::Kind::Op && op == "wgmma") {
            run = wgmmaStage(run);
            if (!parts.empty() && names.back() == name && parts.back() == intersect(run, parent))
              continue;  // another WGMMA of the stage just taken
          }
          run = intersect(run, parent);
          if (run.empty()) continue;
          // Already a marked region of that name (`tma_load` around the TMA loads): it is the
          // region; a second one inside it could not have its name.
          if (def.name.empty() && insideMarkedNamed(run, name)) continue;
          parts.push_back(std::move(run));
          names.push_back(name);
        }
        none = sel->kind == Selector::Kind::Op
                   ? fmt::format("it has no {} instruction{}", op, presentKinds())
                   : fmt::format("it calls no function named `{}`{}", fn, calledFunctions());
        break;
      }
      case Selector::Kind::Lines: {
        InstrSet set = intersect(lineInstructions(k_, *sel), parent);
        if (!set.empty()) {
          if (auto ok = singleEntry(set, *sel, def.origin); !ok) return ok;
          parts.push_back(std::move(set));
          names.push_back(name);
        }
        none =
            "no instruction has a `.loc` in that range (build with -lineinfo; code of those "
            "lines may have been removed or merged into other lines)";
        break;
      }
    }
    if (parts.empty()) {
      if (def.optional) return {};
      return fail("regions", fmt::format("{}: `{}` selects nothing in kernel `{}`{}: {}",
                                         def.origin, sel->text, k_.function.name,
                                         depth > 0 ? " inside its parent region" : "", none));
    }
    InstrSet childParent;
    for (size_t p = 0; p < parts.size(); ++p) {
      occurrences_.push_back(Occurrence{names[p], sel->text, depth, parts[p], {}});
      childParent.insert(childParent.end(), parts[p].begin(), parts[p].end());
    }
    std::sort(childParent.begin(), childParent.end());
    childParent.erase(std::unique(childParent.begin(), childParent.end()), childParent.end());
    if (!def.children.empty() && sel->kind == Selector::Kind::Loops)
      return fail("regions", fmt::format("{}: `loops` derives several regions; to nest regions "
                                         "in one loop select it with loop:[FILE:]LINE",
                                         def.origin));
    for (const auto& child : def.children)
      if (auto ok = add(child, childParent, depth + 1); !ok) return ok;
    return {};
  }

  const std::vector<Occurrence>& occurrences() const { return occurrences_; }

  /// Gives every occurrence that lies inside a loop the iteration coordinate of its innermost
  /// one: the loop's trip number since it was entered (from 0), so that scopes (`iter=`) and
  /// op_latency's per-iteration probes work on derived regions as on ARGUS_REGION_ITER ones.
  /// Spin loops of a wait do not count as loops here. Returns the counters used.
  std::vector<TripCounter> assignIterations() {
    std::vector<InstrSet> sets;
    std::vector<bool> counts;  // a loop of the algorithm, not a wait's spin loop
    for (const auto& loop : k_.loops) {
      sets.push_back(loopInstructions(k_, loop));
      counts.push_back(!onlyWaits(sets.back()));
    }
    // The innermost counted loop strictly holding `set` (loops are outer first).
    auto innermost = [&](const InstrSet& set, std::optional<size_t> skip) -> std::optional<size_t> {
      for (size_t l = sets.size(); l-- > 0;)
        if (counts[l] && l != skip && sets[l].size() > set.size() &&
            intersect(sets[l], set).size() == set.size())
          return l;
      return std::nullopt;
    };
    std::map<size_t, size_t> counterOf;  // loop -> counter
    std::vector<TripCounter> counters;
    for (auto& o : occurrences_) {
      auto loop = innermost(o.set, std::nullopt);
      if (!loop) continue;
      auto it = counterOf.find(*loop);
      if (it == counterOf.end()) {
        // A header without a label cannot be stepped at, nor reset at as an enclosing one:
        // such a loop gives no iteration (PTX branches to labels, so every header has one).
        TripCounter c;
        c.header = headerLabel(k_.loops[*loop]);
        if (auto parent = innermost(sets[*loop], *loop)) {
          c.parentHeader = headerLabel(k_.loops[*parent]);
          if (c.parentHeader.empty()) continue;
        }
        if (c.header.empty()) continue;
        c.reg = "%argustrip_" + c.header.substr(c.header.starts_with('$') ? 1 : 0);
        it = counterOf.emplace(*loop, counters.size()).first;
        counters.push_back(std::move(c));
      }
      o.iteration = counters[it->second].reg;
    }
    return counters;
  }

 private:
  Result<void> singleEntry(const InstrSet& set, const Selector& sel, const std::string& origin) {
    std::set<uint32_t> entries;
    for (uint32_t i : set)
      for (uint32_t e : k_.graph.in[i]) {
        const auto& edge = k_.graph.edges[e];
        if (edge.from == kEntry || !has(set, edge.from)) entries.insert(i);
      }
    if (entries.size() <= 1) return {};
    std::string list;
    for (uint32_t i : entries) list += (list.empty() ? "" : ", ") + k_.where(i);
    return fail("regions", fmt::format("{}: `{}` is entered at {} places in kernel `{}` ({}): a "
                                       "region needs one entry; the compiler moved code of these "
                                       "lines apart. Widen the range to the whole statement, or "
                                       "select its loop (loop:LINE) or its operations (op:KIND)",
                                       origin, sel.text, entries.size(), k_.function.name, list));
  }

  /// A wait polled in a loop of its own (`while (!try_wait(...))`): the loop, when it holds
  /// little besides the wait, so that the region times the whole wait.
  InstrSet spinLoopAround(const InstrSet& run) const {
    constexpr size_t kSpinExtra = 4;  // the test of the wait's result and the branch back
    for (auto it = k_.loops.rbegin(); it != k_.loops.rend(); ++it) {  // inner loops first
      InstrSet set = loopInstructions(k_, *it);
      if (intersect(set, run).size() != run.size()) continue;
      return set.size() <= run.size() + kSpinExtra ? set : run;
    }
    return run;
  }

  /// The WGMMA pipeline stage a run of wgmma.mma_async belongs to: from the wgmma.fence before
  /// it to the wgmma.commit_group after it, in its block (the run itself where either is
  /// missing). ptxas serializes a stage's WGMMAs (warning C7514) when other code, such as a
  /// trace record, runs inside the stage, so a region boundary must not fall inside one.
  InstrSet wgmmaStage(const InstrSet& run) const {
    const auto& body = k_.function.body;
    auto opcode = [&](uint32_t i) -> std::string_view {
      return body[k_.graph.instr[i]].instruction.opcode;
    };
    auto block = [&](uint32_t i) { return k_.cfg.blockOf[k_.graph.instr[i]]; };
    uint32_t first = run.front(), last = run.back();
    for (uint32_t i = first; i-- > 0 && block(i) == block(run.front());) {
      if (opcode(i).starts_with("wgmma.fence")) {
        first = i;
        break;
      }
      if (opcode(i).starts_with("wgmma.commit_group") || opcode(i).starts_with("wgmma.wait_group"))
        break;
    }
    for (uint32_t i = last + 1; i < k_.graph.instr.size() && block(i) == block(run.back()); ++i) {
      if (opcode(i).starts_with("wgmma.commit_group")) {
        last = i;
        break;
      }
      if (opcode(i).starts_with("wgmma.fence") || opcode(i).starts_with("wgmma.wait_group")) break;
    }
    InstrSet stage;
    for (uint32_t i = first; i <= last; ++i)
      if (!k_.terminal(i)) stage.push_back(i);
    return stage;
  }

  /// A loop that only polls an mbarrier is a wait (op:mbarrier_wait), not a loop of the
  /// algorithm: `loops` leaves it out.
  bool onlyWaits(const InstrSet& loop) const {
    size_t waits = 0;
    for (uint32_t i : loop)
      if (matchesOp("mbarrier_wait", k_.function.body[k_.graph.instr[i]].instruction)) ++waits;
    return waits != 0 && spinLoopAround(opRunsIn(loop)) == loop;
  }

  InstrSet opRunsIn(const InstrSet& loop) const {
    InstrSet waits;
    for (const auto& run : opRuns(
             k_, [](const Instruction& inst) { return matchesOp("mbarrier_wait", inst); }, true))
      if (intersect(run, loop).size() == run.size())
        waits.insert(waits.end(), run.begin(), run.end());
    std::sort(waits.begin(), waits.end());
    return waits;
  }

  /// A loop holding marked regions' markers: `loops` leaves it out, since wrapping the marked
  /// regions would change their paths (and IDs); loop:LINE still selects it.
  bool holdsMarkers(const Loop& loop) const {
    for (uint32_t b : loop.blocks)
      for (size_t i = k_.cfg.blocks[b].begin; i < k_.cfg.blocks[b].end; ++i) {
        const Statement& s = k_.function.body[i];
        if (s.kind != Statement::Kind::Comment) continue;
        auto marker = parseMarker(s.text);
        if (marker && *marker && (*marker)->derived.empty()) return true;
      }
    return false;
  }

  /// The label the loop's header block starts with, or empty.
  std::string headerLabel(const Loop& loop) const {
    const auto& block = k_.cfg.blocks[loop.header];
    for (size_t i = block.begin; i < block.end; ++i) {
      const Statement& s = k_.function.body[i];
      if (s.kind == Statement::Kind::Label) return s.text;
      if (s.kind == Statement::Kind::Instruction) break;
    }
    return "";
  }

  bool insideMarkedNamed(const InstrSet& run, const std::string& name) const {
    if (k_.marked == nullptr) return false;
    for (uint32_t i : run)
      for (uint32_t owner : k_.marked->owners[k_.graph.instr[i]])
        for (std::optional<uint32_t> r = owner; r; r = k_.marked->regions[*r].parent)
          if (k_.marked->regions[*r].name == name) return true;
    return false;
  }

  std::string presentKinds() const {
    std::string list;
    for (const auto& kind : opKinds()) {
      size_t n = 0;
      for (size_t s : k_.graph.instr)
        if (matchesOp(kind.name, k_.function.body[s].instruction)) ++n;
      if (n != 0) list += fmt::format("{}{} x{}", list.empty() ? "" : ", ", kind.name, n);
    }
    return list.empty() ? " (nor of any other kind op: selects)" : " (kinds present: " + list + ")";
  }

  std::string calledFunctions() const {
    std::set<std::string> names;
    for (size_t s : k_.graph.instr)
      if (auto c = callee(k_.function.body[s].instruction); !c.empty()) names.emplace(c);
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return list.empty() ? " (it calls none)" : " (it calls " + list + ")";
  }

  Kernel& k_;
  std::vector<Occurrence> occurrences_;
};

// ---- placement ------------------------------------------------------------------------------

struct EdgeMarker {
  bool end = false;
  uint32_t occurrence = 0;
};

struct Insertion {
  size_t position = 0;  // before body[position]
  int phase = 0;        // ends (0) before begins (1) at one position
  size_t order = 0;
  Statement statement;
};

Statement comment(std::string text) {
  Statement s;
  s.kind = Statement::Kind::Comment;
  s.text = std::move(text);
  return s;
}

std::string markerText(const Occurrence& o, bool end) {
  if (end) return fmt::format("@argus end {}", o.name);
  if (o.iteration.empty()) return fmt::format("@argus begin {} derived={}", o.name, o.selector);
  return fmt::format("@argus begin {} iter={} derived={}", o.name, o.iteration, o.selector);
}

std::string tripText(const std::string& reg, bool reset) {
  return fmt::format("@argus trip {} {}", reg, reset ? "reset" : "step");
}

/// Writes each counter's comments: its step right after its header's label, its reset right
/// after the enclosing header's label or before the kernel's first label or instruction. A
/// counter already there (a second derivation on the same module) is not written twice.
void placeTripCounters(Function& f, const std::vector<TripCounter>& counters) {
  auto afterLabel = [&](const std::string& label) -> std::optional<size_t> {
    for (size_t i = 0; i < f.body.size(); ++i)
      if (f.body[i].kind == Statement::Kind::Label && f.body[i].text == label) return i + 1;
    return std::nullopt;
  };
  auto present = [&](const std::string& text) {
    return std::any_of(f.body.begin(), f.body.end(), [&](const Statement& s) {
      return s.kind == Statement::Kind::Comment && s.text == text;
    });
  };
  for (const auto& c : counters) {
    const std::string step = tripText(c.reg, false), reset = tripText(c.reg, true);
    if (present(step)) continue;
    auto at = afterLabel(c.header);
    if (!at) continue;  // not reachable: the header's label is the loop's
    f.body.insert(f.body.begin() + static_cast<std::ptrdiff_t>(*at), comment(step));
    std::optional<size_t> resetAt;
    if (!c.parentHeader.empty()) resetAt = afterLabel(c.parentHeader);
    if (!resetAt) {
      resetAt = 0;
      while (*resetAt < f.body.size() && f.body[*resetAt].kind != Statement::Kind::Label &&
             f.body[*resetAt].kind != Statement::Kind::Instruction)
        ++*resetAt;
    }
    f.body.insert(f.body.begin() + static_cast<std::ptrdiff_t>(*resetAt), comment(reset));
  }
}

Result<void> place(Function& f, const Kernel& k, const std::vector<Occurrence>& occ) {
  const Graph& g = k.graph;
  std::vector<std::vector<EdgeMarker>> onEdge(g.edges.size());
  for (uint32_t o = 0; o < occ.size(); ++o) {
    const InstrSet& set = occ[o].set;
    for (uint32_t i : set) {
      for (uint32_t e : g.in[i])
        if (g.edges[e].from == kEntry || !has(set, g.edges[e].from))
          onEdge[e].push_back({false, o});
      for (uint32_t e : g.out[i])
        if (!has(set, g.edges[e].to)) onEdge[e].push_back({true, o});
    }
  }
  // Inner regions end first and begin last: a subset is inner; on equal sets the deeper
  // definition (a child) is, then the later one (`--derive loops,ops`: a spin loop's wait).
  auto inner = [&](uint32_t a, uint32_t b) {
    if (occ[a].set.size() != occ[b].set.size()) return occ[a].set.size() < occ[b].set.size();
    return occ[a].depth != occ[b].depth ? occ[a].depth > occ[b].depth : a > b;
  };
  for (auto& markers : onEdge)
    std::stable_sort(markers.begin(), markers.end(), [&](const EdgeMarker& a, const EdgeMarker& b) {
      if (a.end != b.end) return a.end;
      return a.end ? inner(a.occurrence, b.occurrence) : inner(b.occurrence, a.occurrence);
    });
  auto same = [](const std::vector<EdgeMarker>& a, const std::vector<EdgeMarker>& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](const EdgeMarker& x, const EdgeMarker& y) {
             return x.end == y.end && x.occurrence == y.occurrence;
           });
  };

  std::vector<Insertion> insertions;
  std::vector<Statement> trampolines;
  size_t order = 0;
  auto insertAt = [&](size_t position, const std::vector<EdgeMarker>& markers, bool ends,
                      bool begins) {
    for (const auto& m : markers)
      if ((m.end && ends) || (!m.end && begins))
        insertions.push_back(
            {position, m.end ? 0 : 1, order++, comment(markerText(occ[m.occurrence], m.end))});
  };
  std::set<std::string> labels;
  for (const auto& s : f.body)
    if (s.kind == Statement::Kind::Label) labels.insert(s.text);
  std::vector<std::string> newTarget(g.edges.size());
  auto part = [](const std::vector<EdgeMarker>& markers, bool ends) {
    std::vector<EdgeMarker> out;
    for (const auto& m : markers)
      if (m.end == ends) out.push_back(m);
    return out;
  };
  // The `.loc` in force at a statement, for a trampoline's markers.
  auto locBefore = [&](size_t statement) -> std::optional<Statement> {
    for (size_t i = statement; i-- > 0;)
      if (f.body[i].kind == Statement::Kind::Directive && f.body[i].directive.name == ".loc")
        return f.body[i];
    return std::nullopt;
  };
  // Whether every way into the label at `label` is one of `into`'s branch edges to it with
  // the markers `own` (no fall-through into it).
  auto onlyThese = [&](size_t label, const std::vector<uint32_t>& into,
                       const std::vector<EdgeMarker>& own, const auto& ownOf) {
    if (f.body[label].kind != Statement::Kind::Label) return false;
    size_t before = label;
    while (before > 0 && f.body[before - 1].kind != Statement::Kind::Instruction) --before;
    if (before > 0) {
      const Instruction& p = f.body[before - 1].instruction;
      if (!endsFlow(p.baseOpcode()) || p.guard) return false;
    }
    for (uint32_t e : into)
      if (g.edges[e].branch && g.edges[e].label == label && !same(ownOf(e), own)) return false;
    return true;
  };
  for (uint32_t q = 0; q < g.instr.size(); ++q) {
    const auto& into = g.in[q];
    bool any = false, sameEnds = true, sameBegins = true;
    for (uint32_t e : into) {
      any = any || !onEdge[e].empty();
      sameEnds = sameEnds && same(part(onEdge[e], true), part(onEdge[into.front()], true));
      sameBegins = sameBegins && same(part(onEdge[e], false), part(onEdge[into.front()], false));
    }
    if (!any) continue;
    const size_t at = g.instr[q];
    // Begins every edge into q needs go right before q. Ends every edge needs go right after
    // q's labels, unless some edge's own begins must come after them (they cannot: an edge's
    // own markers sit before the labels), then each edge takes its ends itself.
    const bool commonEnds = sameEnds && (sameBegins || part(onEdge[into.front()], true).empty());
    if (sameBegins) insertAt(at, onEdge[into.front()], false, true);
    if (commonEnds) {
      size_t afterLabels = at;
      while (afterLabels > 0 && f.body[afterLabels - 1].kind != Statement::Kind::Instruction &&
             f.body[afterLabels - 1].kind != Statement::Kind::Label)
        --afterLabels;
      insertAt(afterLabels, onEdge[into.front()], true, false);
    }
    if (sameBegins && commonEnds) continue;
    auto ownOf = [&](uint32_t e) {
      std::vector<EdgeMarker> own;
      for (const auto& m : onEdge[e])
        if ((m.end && !commonEnds) || (!m.end && !sameBegins)) own.push_back(m);
      return own;
    };
    for (uint32_t e : into) {
      const std::vector<EdgeMarker> own = ownOf(e);
      if (own.empty()) continue;
      const Edge& edge = g.edges[e];
      if (!edge.branch) {
        // Ends right after p (inside any marked region that ends on this edge too), begins
        // before the first label on the way to q (after the marked regions' markers there).
        size_t beginsAt = edge.from == kEntry ? 0 : g.instr[edge.from] + 1;
        while (beginsAt < at && f.body[beginsAt].kind != Statement::Kind::Label) ++beginsAt;
        if (edge.from != kEntry) insertAt(g.instr[edge.from] + 1, own, true, false);
        insertAt(beginsAt, own, false, true);
        continue;
      }
      // A label only such edges reach (an inline-asm wait's `DONE:`, after an unconditional
      // branch back): the markers go right after it.
      if (onlyThese(edge.label, into, own, ownOf)) {
        insertAt(edge.label + 1, own, true, true);
        continue;
      }
      const Statement& label = f.body[edge.label];
      if (!edge.retargetable || label.kind != Statement::Kind::Label ||
          g.scopeDepth[edge.label] != 0)
        return fail(
            "regions",
            fmt::format("the boundary of derived region `{}` ({}) falls on the branch at "
                        "{} into {}, which other paths also take and which cannot be "
                        "redirected ({}); select a region whose boundary is elsewhere",
                        occ[own.front().occurrence].name, occ[own.front().occurrence].selector,
                        k.where(edge.from), k.where(q),
                        !edge.retargetable ? "an indirect brx.idx"
                                           : "its label is inside an inline-asm block"));
      std::string name;
      for (size_t n = order;; ++n) {
        name = fmt::format("$argus_derived_{}", n);
        if (labels.insert(name).second) break;
      }
      Statement l;
      l.kind = Statement::Kind::Label;
      l.text = name;
      trampolines.push_back(l);
      // Markers that begin a region take the source line of its first instruction.
      const bool begins =
          std::any_of(own.begin(), own.end(), [](const EdgeMarker& m) { return !m.end; });
      if (auto loc = locBefore(begins ? at : g.instr[edge.from])) trampolines.push_back(*loc);
      for (const auto& m : own)
        trampolines.push_back(comment(markerText(occ[m.occurrence], m.end)));
      Statement bra;
      bra.kind = Statement::Kind::Instruction;
      bra.instruction.opcode = "bra.uni";
      Operand target;
      target.kind = Operand::Kind::Symbol;
      target.text = label.text;
      bra.instruction.operands.push_back(target);
      trampolines.push_back(bra);
      newTarget[e] = name;
      ++order;
    }
  }
  // Redirect the trampolined branches, then insert (from the back, so positions stay valid).
  for (uint32_t e = 0; e < g.edges.size(); ++e)
    if (!newTarget[e].empty())
      f.body[g.instr[g.edges[e].from]].instruction.operands.back().text = newTarget[e];
  if (!trampolines.empty()) {
    size_t last = f.body.size();
    while (last > 0 && f.body[last - 1].kind != Statement::Kind::Instruction) --last;
    const bool closed = last > 0 && endsFlow(f.body[last - 1].instruction.baseOpcode()) &&
                        !f.body[last - 1].instruction.guard;
    if (!closed)
      return fail("regions", fmt::format("kernel `{}` does not end in ret, exit or an "
                                         "unconditional branch: no place for the derived "
                                         "regions' trampolines",
                                         f.name));
  }
  std::stable_sort(insertions.begin(), insertions.end(),
                   [](const Insertion& a, const Insertion& b) {
                     return a.position != b.position ? a.position > b.position
                            : a.phase != b.phase     ? a.phase > b.phase
                                                     : a.order > b.order;
                   });
  for (auto& ins : insertions)
    f.body.insert(f.body.begin() + static_cast<std::ptrdiff_t>(ins.position),
                  std::move(ins.statement));
  f.body.insert(f.body.end(), trampolines.begin(), trampolines.end());
  return {};
}

std::string kernelList(const Module& module) {
  std::string list;
  for (const Function* f : module.functions())
    if (f->isEntry && f->hasBody) list += (list.empty() ? "" : ", ") + f->name;
  return list.empty() ? "none" : list;
}

bool kernelMatches(const std::string& wanted, const std::string& name) {
  return wanted.empty() || wanted == name || name.find(wanted) != std::string::npos;
}

}  // namespace

const std::vector<OpKind>& opKinds() {
  static const std::vector<OpKind> kinds{
      {"tma_load", "cp.async.bulk[.tensor] global -> shared (TMA loads)"},
      {"tma_store", "cp.async.bulk[.tensor] / cp.reduce.async.bulk shared -> global (TMA stores)"},
      {"wgmma", "wgmma.mma_async: its pipeline stage, wgmma.fence to commit_group"},
      {"wgmma_wait", "wgmma.wait_group"},
      {"cp_async", "cp.async.ca/cg, commit_group, wait_group, wait_all (not bulk)"},
      {"mbarrier_wait", "mbarrier.try_wait / test_wait, with the inline-asm spin loop around it"},
      {"bar_sync", "bar.sync, barrier.sync, bar.red (CTA barriers)"},
      {"ld_global", "ld.global"},
      {"st_global", "st.global"},
  };
  return kinds;
}

Result<Selector> parseSelector(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail("regions", fmt::format("selector `{}`: {}; selectors are loops, "
                                       "loop:[FILE:]LINE, op:KIND, op:call=NAME, func:NAME and "
                                       "lines:[FILE:]A-B",
                                       text, why));
  };
  Selector sel;
  sel.text = std::string(text);
  if (text.find_first_of(" \t\r\n") != std::string_view::npos) return bad("it holds a blank");
  if (text == "loops") {
    sel.kind = Selector::Kind::Loops;
    return sel;
  }
  auto colon = text.find(':');
  if (colon == std::string_view::npos) return bad("unknown selector");
  const std::string_view head = text.substr(0, colon), rest = text.substr(colon + 1);
  if (head == "loop") {
    sel.kind = Selector::Kind::Loop;
    auto [file, line] = splitFile(rest);
    auto n = number(line);
    if (!n || *n == 0) return bad("give the loop's line, e.g. loop:gemm.cu:42");
    sel.file = file;
    sel.first = *n;
    return sel;
  }
  if (head == "op") {
    if (rest.starts_with("call=")) {
      sel.kind = Selector::Kind::Call;
      sel.function = std::string(rest.substr(5));
      if (sel.function.empty()) return bad("give the function after call=");
      return sel;
    }
    sel.kind = Selector::Kind::Op;
    sel.op = std::string(rest);
    for (const auto& kind : opKinds())
      if (kind.name == rest) return sel;
    std::string list;
    for (const auto& kind : opKinds()) list += (list.empty() ? "" : ", ") + std::string(kind.name);
    return bad(fmt::format("unknown op kind `{}` (kinds: {})", rest, list));
  }
  if (head == "func") {
    sel.kind = Selector::Kind::Call;
    sel.function = std::string(rest);
    if (sel.function.empty()) return bad("give the function's name");
    return sel;
  }
  if (head == "lines") {
    sel.kind = Selector::Kind::Lines;
    auto [file, range] = splitFile(rest);
    auto dash = range.find('-');
    auto a = number(range.substr(0, dash));
    auto b = dash == std::string::npos ? a : number(range.substr(dash + 1));
    if (!a || !b || *a == 0 || *b < *a) return bad("give a line range A-B with 0 < A <= B");
    sel.file = file;
    sel.first = *a;
    sel.last = *b;
    return sel;
  }
  return bad(fmt::format("unknown selector kind `{}`", head));
}

Result<RegionDefinitions> definitionsFromList(std::string_view list) {
  RegionDefinitions defs;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string_view item =
        list.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) return fail("regions", fmt::format("--derive `{}` has an empty entry", list));
    if (item == "ops") {
      for (const auto& kind : opKinds()) {
        if (kind.name == "ld_global" || kind.name == "st_global") continue;  // too fine for `ops`
        RegionDefinition def;
        def.select = "op:" + std::string(kind.name);
        def.optional = true;
        def.origin = "--derive ops";
        defs.regions.push_back(std::move(def));
      }
    } else {
      if (auto sel = parseSelector(item); !sel) return std::unexpected(sel.error());
      RegionDefinition def;
      def.select = std::string(item);
      def.optional = item == "loops";
      def.origin = fmt::format("--derive {}", item);
      defs.regions.push_back(std::move(def));
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return defs;
}

Result<std::vector<DerivedRegion>> deriveRegions(Module& module, const RegionDefinitions& defs) {
  std::vector<DerivedRegion> placed;
  if (defs.regions.empty()) return placed;
  auto marked = analyzeRegions(module);
  if (!marked) return std::unexpected(marked.error());
  bool anyKernel = false;
  for (Function* f : module.functions()) {
    if (!f->isEntry || !f->hasBody || !kernelMatches(defs.kernel, f->name)) continue;
    anyKernel = true;
    auto cfg = buildControlFlowGraph(*f, module.fileName);
    if (!cfg) return std::unexpected(cfg.error());
    Kernel k{*f, module, std::move(*cfg), {}, sourcePositions(module, *f), {}, nullptr};
    k.graph = buildGraph(*f, k.cfg);
    k.loops = naturalLoops(k);
    for (const auto& r : *marked)
      if (r.function == f->name) k.marked = &r;
    Deriver deriver(k);
    const InstrSet all = k.all();
    for (const auto& def : defs.regions)
      if (auto ok = deriver.add(def, all, 0); !ok) return std::unexpected(ok.error());
    const std::vector<TripCounter> counters = deriver.assignIterations();
    if (auto ok = place(*f, k, deriver.occurrences()); !ok) return std::unexpected(ok.error());
    placeTripCounters(*f, counters);
    std::map<std::pair<std::string, std::string>, uint32_t> count;
    for (const auto& o : deriver.occurrences()) ++count[{o.name, o.selector}];
    for (const auto& [key, n] : count) placed.push_back({f->name, key.first, key.second, n});
  }
  if (!anyKernel)
    return fail("regions",
                defs.kernel.empty()
                    ? fmt::format("{}: has no kernel (.entry with a body) to derive regions in",
                                  module.fileName)
                    : fmt::format("{}: no kernel's name contains `{}` (the region file's "
                                  "`kernel`); its kernels: {}",
                                  module.fileName, defs.kernel, kernelList(module)));
  // The derived markers must nest with each other and with the marked ones: the region analysis
  // of the printed module says so, with the places (the PTX the later passes read).
  auto printed = printModule(module);
  auto reparsed = parseModule(printed, module.fileName);
  if (!reparsed) return std::unexpected(reparsed.error());
  if (auto check = analyzeRegions(*reparsed); !check)
    return fail("regions", fmt::format("the derived regions do not nest with each other or with "
                                       "the marked regions: {}; derive fewer kinds at once, or "
                                       "refine the marked region instead (region file `refine:`)",
                                       check.error().message));
  return placed;
}

size_t lowerTripCounters(Function& f) {
  std::set<std::string> regs;
  size_t lowered = 0;
  for (Statement& s : f.body) {
    if (s.kind != Statement::Kind::Comment) continue;
    auto trip = parseTripCounter(s.text);
    if (!trip) continue;
    Operand reg;
    reg.kind = Operand::Kind::Register;
    reg.text = trip->reg;
    Operand imm;
    imm.kind = Operand::Kind::Immediate;
    Statement code;
    code.kind = Statement::Kind::Instruction;
    code.loc = s.loc;
    if (trip->reset) {
      imm.text = "-1";
      code.instruction.opcode = "mov.b32";
      code.instruction.operands = {reg, imm};
    } else {
      imm.text = "1";
      code.instruction.opcode = "add.s32";
      code.instruction.operands = {reg, reg, imm};
    }
    s = std::move(code);
    regs.insert(trip->reg);
    ++lowered;
  }
  std::vector<Statement> declarations;
  for (const auto& r : regs) {
    Statement d;
    d.kind = Statement::Kind::Variable;
    d.variable.stateSpace = ".reg";
    d.variable.type = ".b32";
    d.variable.name = r;
    declarations.push_back(std::move(d));
  }
  f.body.insert(f.body.begin(), declarations.begin(), declarations.end());
  return lowered;
}

size_t lowerTripCounters(Module& module, std::string_view kernel) {
  size_t lowered = 0;
  for (Function* f : module.functions())
    if (f->isEntry && f->hasBody && (kernel.empty() || f->name == kernel))
      lowered += lowerTripCounters(*f);
  return lowered;
}

}  // namespace argus::ptx
