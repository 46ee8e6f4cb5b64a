// insert_forced_wait: the forced-completion probe variant of one async op site in one iteration.
//
// Recipe: transforms [insert_forced_wait, lower_markers_to_trace] and a scoped trace with scope
// iter=I. Options (TransformOptions::config):
//   op         op ID from discoverAsyncOps (required)
//   iteration  the iteration coordinate of the selected dynamic instance (required; the value
//              the trace records for the enclosing `iter=` region, 32-bit like the trace)
//   cta        optional: only this linear CTA id (same numbering as the trace records)
//   shared_phase  `refuse` (default) or `wait_after_last`, see "Barrier sites" below
// TransformOptions::kernel restricts the op lookup to one kernel.
//
// What is inserted (all in the site's kernel):
// - Around the site a synthetic region `probe.<kind>.<ordinal>` (the op ID's kind and ordinal:
//   region names may not contain the `:` of op IDs; the ordinal is unique per kernel and kind):
//   `// @argus begin` right before the issue instruction and `// @argus end` right after the
//   forced wait, on every path, so lower_markers_to_trace records issue -> completion. It nests in
//   the site's owning region and takes its iteration coordinate from the enclosing region with
//   `iter=`, exactly like the trace does.
// - After every begin marker of that iteration region, the `iter=` operand is copied into a
//   function-scope register, so the selected instance is tested against the iteration the trace
//   records (the loop counter itself may change before the site).
// - After the site: a skip predicate (iteration != I, or CTA != C, or the site's guard false),
//   a branch around the wait, the wait, a join label, the end marker. The wait therefore executes
//   only in the selected dynamic instance; every other instance only pays the compare and branch.
//
// Waits per completion:
// - cp.async: `cp.async.wait_all` (= commit_group + wait_group 0).
// - wgmma: `wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned 0;`. Both are
//   `.aligned`: every thread of the warp must take the same branch. The skip predicate is
//   warp-uniform because the iteration (a loop counter of the warpgroup) and the CTA are.
// - bulk_group (tma_store, bulk copies to global): `cp.async.bulk.commit_group;
//   cp.async.bulk.wait_group 0` (full completion: writes done and visible, not only the source
//   reads that `.read` waits for).
//   An extra committed group can only make the program's own later wait_group N stronger (the
//   completed extra group pushes a real group out of the N most recent), never weaker, so the
//   variant stays correct.
// - Barrier sites (TMA loads, bulk copies with mbarrier::complete_tx): when the same thread
//   executes `mbarrier.arrive.expect_tx _, [bar], tx` on the exactly matching barrier earlier in
//   the same basic block under the same guard, its `_` sink becomes a fresh .b64 state register
//   and the wait is a `mbarrier.try_wait` loop on that state (the phase this thread armed; no
//   parity inference). Otherwise, when a wait on the exactly matching barrier later in the same
//   iteration region waits for a parity that discovery proved to be ((iter / stages) & 1) ^ inv
//   of that region's `iter=` operand, the parity is that constant for iteration I and the wait is
//   a `mbarrier.try_wait.parity` loop. Otherwise, when another thread armed the phase with an
//   exactly matching expect_tx earlier in the block (Triton: thread 0 arms, an elected lane
//   issues each load), that thread waits on its own arrive's state after the last op of the
//   block that signals the barrier, whoever issues it: every issue of the phase precedes the
//   wait in program order, so the wait cannot hold one up. The probe's markers then go around
//   the wait in that thread only (the issue is in another lane): it times the last issue of the
//   phase to its completion, as the waiting thread sees it. Otherwise the pass refuses, naming
//   the op, the line and the reasons.
// - Loop trips: Triton's software pipeliner issues later stages' loads after the iteration
//   region has ended, in the same loop trip. A site with no enclosing `iter=` region takes the
//   iteration of the last begin marker of an `iter=` region nested in its owner that precedes
//   it in code entered only through that marker; the probe's begin marker names that iteration
//   itself (`iter=`), and the description says `iteration_source: loop_trip` (probe_join then
//   derives the latency only: the wait is outside the iteration region). Such a load may fetch
//   data for a later iteration; the probe selects it by the trip that issues it.
//   One arrive.expect_tx often arms a phase for several loads (tma_gemm: A and B tiles). A wait
//   right after the first load would never return: the phase needs the bytes of the second load,
//   which this thread issues only after the wait. So when later ops of the same basic block
//   signal the same barrier, the pass refuses by default; with shared_phase=wait_after_last it
//   waits after the last of them and the probe times issue of the site -> completion of the
//   whole phase (reported in the probe description as `shared_phase_with`). The residual
//   assumption, which the PTX cannot show, is that the phase needs no arrival or transaction
//   from code after the wait (other threads' arrivals are not waited for by this thread, so they
//   can only delay, not deadlock, unless they wait on this thread): the runtime's timeout
//   catches a probe that hangs.
//
// Registers are named `%argusprobe_*`, not `%argus_*`: lower_markers_to_trace refuses a kernel
// that already declares `%argus_*` registers (its sign of an already traced kernel). They are
// declared at function scope (nvcc wraps inline asm in `{ }` scopes with their own `.reg`s).
//
// Result: statistics (numbers) under "insert_forced_wait", and a description of the probe under
// statistics["probe"] (op, kernel, iteration, region name/path/id, iteration region, completion
// method, PTX lines) for the planner and synthesis (probe_join) to find the probe region.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "argus/analysis/discover.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/ptx/regions.h"
#include "pass.h"

namespace argus::passes {
namespace {

using ptx::Statement;

constexpr std::string_view kPassName = "insert_forced_wait";
constexpr std::string_view kRegPrefix = "%argusprobe_";
constexpr std::string_view kLabelPrefix = "$Largusprobe_";

struct ForcedWaitOptions {
  std::string op;
  int64_t iteration = 0;
  std::optional<int64_t> cta;
  bool waitAfterLast = false;

  static Result<ForcedWaitOptions> fromConfig(const nlohmann::json& config) {
    ForcedWaitOptions o;
    auto bad = [](std::string what) {
      return fail("passes", fmt::format("{}: {}", kPassName, what));
    };
    if (!config.is_object() || !config.contains("op") || !config["op"].is_string())
      return bad("option `op` (an op ID from `argus ptx discover`) is required");
    o.op = config["op"].get<std::string>();
    if (!config.contains("iteration") || !config["iteration"].is_number_integer())
      return bad("option `iteration` (the integer iteration coordinate to probe) is required");
    o.iteration = config["iteration"].get<int64_t>();
    if (o.iteration < 0 || o.iteration > 0xfffffffeLL)
      return bad(
          fmt::format("option iteration is {}; the trace records 32-bit iterations "
                      "(0..4294967294)",
                      o.iteration));
    if (auto it = config.find("cta"); it != config.end()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 0xffffffffLL)
        return bad(fmt::format("option cta is {}; use a linear CTA id", it->dump()));
      o.cta = it->get<int64_t>();
    }
    if (auto it = config.find("shared_phase"); it != config.end()) {
      if (*it == "wait_after_last") {
        o.waitAfterLast = true;
      } else if (*it != "refuse") {
        return bad(fmt::format("option shared_phase is {}; use \"refuse\" or \"wait_after_last\"",
                               it->dump()));
      }
    }
    return o;
  }
};

bool isBlockBoundary(const Statement& s) {
  if (s.kind == Statement::Kind::Label) return true;
  if (s.kind != Statement::Kind::Instruction) return false;
  const std::string base = s.instruction.baseOpcode();
  return base == "bra" || base == "brx" || base == "ret" || base == "exit" || base == "call";
}

/// Whether `reg` is written by any instruction in body[from, to).
bool writtenBetween(const std::vector<Statement>& body, size_t from, size_t to,
                    const std::string& reg) {
  for (size_t i = from; i < to && i < body.size(); ++i) {
    const Statement& s = body[i];
    if (s.kind != Statement::Kind::Instruction || s.instruction.operands.empty()) continue;
    const ptx::Operand& d = s.instruction.operands[0];
    if (d.kind == ptx::Operand::Kind::Register && d.text == reg) return true;
    if (d.kind == ptx::Operand::Kind::Vector)
      for (const auto& e : d.elements)
        if (e.kind == ptx::Operand::Kind::Register && e.text == reg) return true;
  }
  return false;
}

/// Whether body(from, to] can only be entered by falling through body[from]: no label defined
/// there at from's scope level is the target of a branch outside it. (Labels inside nested `{ }`
/// scopes, such as inline asm's wait loops, are local to their scope.)
bool singleEntry(const std::vector<Statement>& body, size_t from, size_t to) {
  std::set<std::string> inside;
  int depth = 0;
  for (size_t i = from + 1; i <= to && i < body.size(); ++i) {
    if (body[i].kind == Statement::Kind::ScopeBegin) ++depth;
    if (body[i].kind == Statement::Kind::ScopeEnd) --depth;
    if (depth < 0) return false;  // the segment leaves from's scope
    if (depth == 0 && body[i].kind == Statement::Kind::Label) inside.insert(body[i].text);
  }
  for (size_t i = 0; i < body.size(); ++i) {
    if (i > from && i <= to) continue;
    const Statement& st = body[i];
    if (st.kind != Statement::Kind::Instruction || st.instruction.baseOpcode() != "bra") continue;
    for (const auto& op : st.instruction.operands)
      if (op.kind == ptx::Operand::Kind::Symbol && inside.contains(op.text)) return false;
  }
  return true;
}

bool sameGuard(const std::optional<ptx::Guard>& a, const std::optional<ptx::Guard>& b) {
  if (!a || !b) return !a && !b;
  return a->predicate == b->predicate && a->negated == b->negated;
}

/// `mov.b32` / `cvt.u32.u64` / `cvt.u32.u16` copying an `iter=` operand to 32 bits (the trace's
/// rule: 64-bit counters keep their low 32 bits).
Result<std::pair<std::string, std::string>> iterationCopy(const ptx::Function& kernel,
                                                          const std::string& op, uint32_t line) {
  auto bad = [&](std::string_view why) {
    return fail("passes", fmt::format("{}: kernel `{}`, PTX line {}: iteration operand `{}` {}",
                                      kPassName, kernel.name, line, op, why));
  };
  if (!op.empty() && op[0] != '%') return std::pair{std::string("mov.b32"), op};
  const ptx::VariableDecl* d = findRegisterDecl(kernel, op);
  if (d != nullptr) {
    const std::string bits = d->type.size() > 2 ? d->type.substr(2) : "";
    if (bits == "32") return std::pair{std::string("mov.b32"), op};
    if (bits == "64") return std::pair{std::string("cvt.u32.u64"), op};
    if (bits == "16") return std::pair{std::string("cvt.u32.u16"), op};
    return bad(fmt::format("has type {}", d->type));
  }
  return bad("is not declared in the kernel");
}

class InsertForcedWaitPass final : public Pass {
 public:
  std::string_view name() const override { return kPassName; }
  std::string_view description() const override {
    return "force one async op site to complete right after issue in one iteration (probe)";
  }

  Result<void> run(ptx::Module& module, const TransformOptions& options,
                   TransformResult& result) override {
    auto opts = ForcedWaitOptions::fromConfig(options.config);
    if (!opts) return std::unexpected(opts.error());
    const ForcedWaitOptions& o = *opts;

    auto sites = analysis::discoverAsyncOps(module, options.kernel, "");
    if (!sites) return std::unexpected(sites.error());
    auto found =
        std::ranges::find_if(*sites, [&](const analysis::OpSite& s) { return s.opId == o.op; });
    if (found == sites->end()) {
      std::vector<std::string> ids;
      for (const auto& s : *sites) ids.push_back(s.opId);
      return fail(
          "passes",
          fmt::format("{}: unknown op `{}`; ops in {}: {}", kPassName, o.op, module.fileName,
                      ids.empty() ? "(none)" : fmt::format("{}", fmt::join(ids, ", "))));
    }
    const analysis::OpSite site = *found;
    const std::string where =
        fmt::format("op `{}` ({} at PTX line {})", site.opId, toString(site.kind), site.where.line);

    ptx::Function* kernel = nullptr;
    for (ptx::Function* f : module.functions())
      if (f->name == site.kernel && f->hasBody) kernel = f;
    if (kernel == nullptr) return fail("passes", "internal error: site kernel not found");
    auto analysis = ptx::analyzeRegions(module);
    if (!analysis) return std::unexpected(analysis.error());
    auto fr = std::ranges::find_if(
        *analysis, [&](const ptx::FunctionRegions& r) { return r.function == kernel->name; });
    if (fr == analysis->end()) return fail("passes", "internal error: no regions for kernel");
    const auto& regions = fr->regions;
    const auto& owners = fr->owners[site.where.statement];
    if (owners.size() != 1) {
      return fail("passes",
                  fmt::format("{}: {}: {}; the probe region must nest in one owning region",
                              kPassName, where,
                              owners.empty() ? "the site is outside every region"
                                             : "the site has several possible owning regions"));
    }
    const uint32_t owner = owners.front();
    // The enclosing region that carries the iteration coordinate.
    std::optional<uint32_t> iterRegion;
    for (std::optional<uint32_t> r = owner; r && !iterRegion; r = regions[*r].parent) {
      if (std::ranges::any_of(regions[*r].begins,
                              [](const ptx::MarkerSite& b) { return !b.iteration.empty(); }))
        iterRegion = *r;
    }
    // Triton's software pipeliner issues later stages' loads after the iteration region has
    // ended, in the same loop trip. Such a site takes the iteration of the trip: that of the
    // last begin marker with `iter=`, of a region nested in the owner, that precedes it in code
    // entered only through that marker (the iteration register keeps the value it captured).
    bool tripIteration = false;
    if (!iterRegion) {
      std::optional<size_t> latest;
      for (uint32_t r = 0; r < regions.size(); ++r) {
        bool nested = false;
        for (std::optional<uint32_t> q = regions[r].parent; q && !nested; q = regions[*q].parent)
          nested = *q == owner;
        if (!nested) continue;
        for (const ptx::MarkerSite& b : regions[r].begins)
          if (!b.iteration.empty() && b.statement < site.where.statement &&
              (!latest || b.statement > *latest) &&
              singleEntry(kernel->body, b.statement, site.where.statement)) {
            latest = b.statement;
            iterRegion = r;
          }
      }
      tripIteration = iterRegion.has_value();
    }
    if (!iterRegion) {
      return fail("passes",
                  fmt::format("{}: {}: no enclosing region of `{}` has an `iter=` operand, and "
                              "no region with one begins before it in the same loop trip, so "
                              "iteration {} cannot be selected; mark the loop with "
                              "ARGUS_REGION_ITER",
                              kPassName, where, regions[owner].path, o.iteration));
    }

    for (const Statement& s : kernel->body) {
      if (s.kind == Statement::Kind::Variable && s.variable.name.starts_with(kRegPrefix))
        return fail("passes", fmt::format("{}: kernel `{}` already has a forced-wait probe ({}); "
                                          "apply the pass to the unprobed PTX",
                                          kPassName, kernel->name, s.variable.name));
    }

    const std::string probeName = probeRegionName(site);
    const std::string probePath = regions[owner].path + "/" + probeName;
    for (std::optional<uint32_t> r = owner; r; r = regions[*r].parent) {
      if (regions[*r].name == probeName)
        return fail("passes", fmt::format("{}: {}: region `{}` already exists on the path",
                                          kPassName, where, probeName));
    }

    std::vector<Statement>& body = kernel->body;
    const size_t at = site.where.statement;
    const Statement& issue = body[at];
    // What goes where: statements inserted before / after a body index.
    std::map<size_t, std::string> before;
    std::map<size_t, std::string> after;
    std::string decls = fmt::format("\t.reg .b32 {0}it;\n\t.reg .pred {0}skip;\n", kRegPrefix);
    std::string entry = fmt::format("\tmov.u32 {}it, -1;\n", kRegPrefix);

    // Iteration capture after each begin marker of the iteration region.
    for (const ptx::MarkerSite& b : regions[*iterRegion].begins) {
      const size_t last = markers::markerSpan(body, b.statement).last;
      if (b.iteration.empty()) {
        after[last] += fmt::format("\tmov.u32 {}it, -1;\n", kRegPrefix);
      } else {
        auto copy = iterationCopy(*kernel, b.iteration, b.ptx.line);
        if (!copy) return std::unexpected(copy.error());
        after[last] += fmt::format("\t{} {}it, {};\n", copy->first, kRegPrefix, copy->second);
      }
      ++iterationCaptures_;
    }

    // The wait and where it goes.
    nlohmann::json probe;
    std::string wait;
    size_t waitAfter = at;
    std::string method;
    const std::optional<ptx::Guard> guard = issue.instruction.guard;
    // The thread that waits (the issuing one, or for method 3 the arming one), and whether the
    // probe region's markers go around the wait in that thread only (method 3: the issue is in
    // another lane, so only the waiter's time from its last issue to completion is recorded).
    std::optional<ptx::Guard> waiterGuard = guard;
    bool markersAroundWait = false;
    const analysis::Completion& c = site.completion;
    auto labels = existingLabels(*kernel);
    const std::string waitLabel = freshLabel(labels, "wait");
    const std::string doneLabel = freshLabel(labels, "done");
    if (c.kind == analysis::Completion::Kind::Group) {
      if (c.family == "cp.async") {
        method = "cp_async_wait_all";
        wait = "\tcp.async.wait_all;\n";
      } else if (c.family == "wgmma") {
        method = "wgmma_wait_group_0";
        wait = "\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;\n";
      } else if (c.family == "cp.async.bulk") {
        method = "bulk_wait_group_0";
        wait = "\tcp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group 0;\n";
      } else {
        return fail("passes", fmt::format("{}: {}: completion family `{}` is not supported",
                                          kPassName, where, c.family));
      }
    } else {
      if (!c.resolved || !c.barrier || !c.barrier->resolved) {
        return fail("passes",
                    fmt::format("{}: {}: its completion is unresolved ({}); no probe is made",
                                kPassName, where, c.reason.empty() ? "no barrier" : c.reason));
      }
      const ptx::Operand* barrier = nullptr;
      {
        size_t n = 0;
        for (const auto& op : issue.instruction.operands)
          if (op.kind == ptx::Operand::Kind::Address && n++ == 2) barrier = &op;
      }
      if (barrier == nullptr)
        return fail("passes", fmt::format("{}: {}: no mbarrier operand", kPassName, where));
      const std::string barrierText = ptx::printOperand(*barrier);

      // Later ops of the same block signalling the same barrier share the phase, whichever
      // thread issues them.
      std::vector<const analysis::OpSite*> phaseOps;
      for (const auto& other : *sites) {
        if (other.kernel != site.kernel || other.where.statement <= at) continue;
        if (other.completion.kind != analysis::Completion::Kind::Barrier ||
            !other.completion.barrier || !other.completion.barrier->resolved)
          continue;
        const auto& a = *c.barrier;
        const auto& b = *other.completion.barrier;
        if (a.base != b.base || a.offset != b.offset || a.dynamicTerms != b.dynamicTerms) continue;
        bool straight = true;
        for (size_t i = at + 1; i < other.where.statement && straight; ++i)
          straight = !isBlockBoundary(body[i]);
        if (straight) phaseOps.push_back(&other);
      }
      // Another guard may select another thread (Triton: elect.sync per load); only ops under
      // the same guard are provably this thread's.
      std::vector<const analysis::OpSite*> sharing;
      for (const auto* other : phaseOps)
        if (sameGuard(body[other->where.statement].instruction.guard, guard))
          sharing.push_back(other);
      const auto opLines = [](const std::vector<const analysis::OpSite*>& ops) {
        std::vector<std::string> lines;
        for (const auto* s : ops)
          lines.push_back(fmt::format("`{}` at line {}", s->opId, s->where.line));
        return fmt::format("{}", fmt::join(lines, ", "));
      };
      const auto sharePhaseWith = [&](const std::vector<const analysis::OpSite*>& ops) {
        probe["shared_phase_with"] = nlohmann::json::array();
        for (const auto* s : ops) probe["shared_phase_with"].push_back(s->opId);
      };
      // The wait on the phase that the arrive.expect_tx at `expectAt` armed: its `_` sink
      // becomes a state register, and the wait loops on that state.
      const auto waitOnArriveState = [&](size_t expectAt) {
        decls += fmt::format("\t.reg .b64 {0}st;\n\t.reg .pred {0}done;\n", kRegPrefix);
        ptx::Operand state;
        state.kind = ptx::Operand::Kind::Register;
        state.text = std::string(kRegPrefix) + "st";
        body[expectAt].instruction.operands[0] = state;
        ++sinksRewritten_;
        probe["expect_tx_line"] = body[expectAt].loc.line;
        wait = fmt::format(
            "{0}:\n\tmbarrier.try_wait.shared::cta.b64 {1}done, {2}, {1}st;\n"
            "\t@!{1}done bra {0};\n",
            waitLabel, kRegPrefix, barrierText);
      };
      if (!sharing.empty()) {
        if (!o.waitAfterLast) {
          return fail("passes",
                      fmt::format("{}: {}: the same thread signals the same barrier phase later "
                                  "in the block ({}); a wait right after this op would never "
                                  "return because the phase also needs their bytes. Probe the "
                                  "last of them, or set option shared_phase=\"wait_after_last\" "
                                  "to time this op's issue to the completion of the whole phase",
                                  kPassName, where, opLines(sharing)));
        }
        waitAfter = sharing.back()->where.statement;
        sharePhaseWith(sharing);
      }

      // Method 1: the state returned by this thread's own arrive.expect_tx.
      std::string refusal;
      std::optional<size_t> expect;
      std::optional<size_t> armedByOther;  // an exact expect_tx of another thread (method 3)
      for (const analysis::BarrierSite& e : c.expectTx) {
        if (e.match != "exact" || e.where.statement >= at) continue;
        const Statement& es = body[e.where.statement];
        bool straight = true;
        for (size_t i = e.where.statement + 1; i < at && straight; ++i)
          straight = !isBlockBoundary(body[i]);
        if (!straight) {
          refusal += fmt::format("; expect_tx at line {} is in another basic block", e.where.line);
          continue;
        }
        if (!sameGuard(es.instruction.guard, guard)) {
          if (!es.instruction.operands.empty() &&
              es.instruction.operands[0].kind == ptx::Operand::Kind::Sink)
            armedByOther = e.where.statement;
          refusal += fmt::format(
              "; expect_tx at line {} and the site have different guards "
              "(not provably the same thread)",
              e.where.line);
          continue;
        }
        if (guard && writtenBetween(body, e.where.statement, waitAfter + 1, guard->predicate)) {
          refusal += fmt::format("; guard {} is redefined after the expect_tx at line {}",
                                 guard->predicate, e.where.line);
          continue;
        }
        if (es.instruction.operands.empty() ||
            es.instruction.operands[0].kind != ptx::Operand::Kind::Sink) {
          refusal += fmt::format("; expect_tx at line {} has no `_` state sink", e.where.line);
          continue;
        }
        expect = e.where.statement;
      }
      if (expect) {
        method = "mbarrier_state";
        waitOnArriveState(*expect);
      } else {
        // Method 2: a proven parity phase of the iteration region.
        if (c.expectTx.empty())
          refusal += "; no arrive.expect_tx on this barrier";
        else if (refusal.empty())
          refusal += "; no arrive.expect_tx on the exact barrier before the site in this thread";
        std::optional<analysis::BarrierSite> parityWait;
        for (const analysis::BarrierSite& w : c.waits) {
          if (w.match != "exact" || w.where.statement <= waitAfter) {
            refusal +=
                fmt::format("; wait at line {} {}", w.where.line,
                            w.match != "exact" ? "is not on the exact barrier (" + w.match + ")"
                                               : "precedes the site");
            continue;
          }
          if (!w.phase || w.phase->form != "iteration" ||
              w.phase->iterationRegion != regions[*iterRegion].path || !w.phase->stages) {
            refusal += fmt::format(
                "; wait at line {}: parity not proven an iteration phase of `{}` ({})",
                w.where.line, regions[*iterRegion].path,
                w.phase ? (w.phase->reason.empty() ? w.phase->expression : w.phase->reason)
                        : "no parity");
            continue;
          }
          const auto& wo = fr->owners[w.where.statement];
          bool inRegion = false;
          if (wo.size() == 1)
            for (std::optional<uint32_t> r = wo.front(); r && !inRegion; r = regions[*r].parent)
              inRegion = *r == *iterRegion;
          if (!inRegion) {
            refusal += fmt::format("; wait at line {} is not inside `{}`", w.where.line,
                                   regions[*iterRegion].path);
            continue;
          }
          parityWait = w;
          break;
        }
        if (!parityWait && armedByOther && sharing.empty()) {
          // Method 3: the thread that armed the phase waits on its own arrive's state, after the
          // last op of the block that signals this barrier (whichever thread issues it: Triton
          // arms with thread 0 and issues each load from an elected lane). Every issue then
          // precedes the wait in program order, so the wait cannot hold up an issue of its phase.
          const Statement& es = body[*armedByOther];
          if (!phaseOps.empty() && !o.waitAfterLast) {
            return fail("passes",
                        fmt::format("{}: {}: later ops of the block signal the same barrier "
                                    "phase ({}); its completion needs their bytes too. Probe "
                                    "the last of them, or set option "
                                    "shared_phase=\"wait_after_last\" to time this op's issue "
                                    "to the completion of the whole phase",
                                    kPassName, where, opLines(phaseOps)));
          }
          const size_t last = phaseOps.empty() ? at : phaseOps.back()->where.statement;
          const std::optional<ptx::Guard> armGuard = es.instruction.guard;
          if (armGuard && writtenBetween(body, *armedByOther, last + 1, armGuard->predicate)) {
            return fail("passes", fmt::format("{}: {}: cannot force its completion: the guard "
                                              "{} of the expect_tx at line {} is redefined "
                                              "before the wait; no probe is made",
                                              kPassName, where, armGuard->predicate, es.loc.line));
          }
          waitAfter = last;
          waiterGuard = armGuard;
          markersAroundWait = true;
          method = "mbarrier_state_arming_thread";
          waitOnArriveState(*armedByOther);
          probe["waiter"] = "the thread of the expect_tx";
          if (!phaseOps.empty()) sharePhaseWith(phaseOps);
        } else if (!parityWait) {
          return fail("passes", fmt::format("{}: {}: cannot force its completion: {}; no probe "
                                            "is made (nothing is guessed)",
                                            kPassName, where, refusal.substr(2)));
        } else {
          method = "mbarrier_parity";
          const auto& ph = *parityWait->phase;
          const int64_t parity = ((o.iteration / *ph.stages) & 1) ^ (ph.inverted ? 1 : 0);
          decls += fmt::format("\t.reg .pred {}done;\n", kRegPrefix);
          probe["parity"] = parity;
          probe["parity_from_wait_line"] = parityWait->where.line;
          probe["parity_phase"] = ph.expression;
          wait = fmt::format(
              "{0}:\n\tmbarrier.try_wait.parity.shared::cta.b64 {1}done, {2}, {3};\n"
              "\t@!{1}done bra {0};\n",
              waitLabel, kRegPrefix, barrierText, parity);
        }
      }
    }

    // Skip predicate: not the selected iteration / CTA / the waiter's guard is false.
    std::string skip = fmt::format("\tsetp.ne.u32 {0}skip, {0}it, {1};\n", kRegPrefix, o.iteration);
    if (o.cta) {
      decls += fmt::format("\t.reg .b32 {}cta;\n\t.reg .b32 {}t<3>;\n", kRegPrefix, kRegPrefix);
      entry += fmt::format(
          "\tmov.u32 {0}t0, %ctaid.z;\n\tmov.u32 {0}t1, %nctaid.y;\n\tmov.u32 {0}t2, %ctaid.y;\n"
          "\tmad.lo.u32 {0}t0, {0}t0, {0}t1, {0}t2;\n\tmov.u32 {0}t1, %nctaid.x;\n"
          "\tmov.u32 {0}t2, %ctaid.x;\n\tmad.lo.u32 {0}cta, {0}t0, {0}t1, {0}t2;\n",
          kRegPrefix);
      skip += fmt::format("\tsetp.ne.or.u32 {0}skip, {0}cta, {1}, {0}skip;\n", kRegPrefix, *o.cta);
    }
    if (waiterGuard) {
      if (waiterGuard->negated) {
        skip +=
            fmt::format("\tor.pred {0}skip, {0}skip, {1};\n", kRegPrefix, waiterGuard->predicate);
      } else {
        decls += fmt::format("\t.reg .pred {}g;\n", kRegPrefix);
        skip += fmt::format("\tnot.pred {0}g, {1};\n\tor.pred {0}skip, {0}skip, {0}g;\n",
                            kRegPrefix, waiterGuard->predicate);
      }
    }
    // A site outside its iteration region (loop-trip iteration) names the iteration itself.
    const std::string beginMarker =
        tripIteration ? fmt::format("\t// @argus begin {} iter={}it\n", probeName, kRegPrefix)
                      : fmt::format("\t// @argus begin {}\n", probeName);
    // Outside nvcc's `// begin inline asm` / `// end inline asm` comments around the site.
    auto isAsmComment = [&](size_t i, std::string_view text) {
      return i < body.size() && body[i].kind == Statement::Kind::Comment &&
             body[i].text.find(text) != std::string::npos && body[i].text.size() < text.size() + 4;
    };
    const size_t beginAt = at > 0 && isAsmComment(at - 1, "begin inline asm") ? at - 1 : at;
    const size_t endAt = isAsmComment(waitAfter + 1, "end inline asm") ? waitAfter + 1 : waitAfter;
    if (markersAroundWait) {
      after[endAt] += fmt::format(
          "\t// argus probe: forced wait for {} in iteration {} ({})\n{}\t@{}skip bra {};\n{}{}"
          "\t// @argus end {}\n{}:\n",
          site.opId, o.iteration, method, skip, kRegPrefix, doneLabel, beginMarker, wait, probeName,
          doneLabel);
    } else {
      before[beginAt] += beginMarker;
      after[endAt] += fmt::format(
          "\t// argus probe: forced wait for {} in iteration {} ({})\n{}\t@{}skip bra {};\n{}{}:"
          "\n\t// @argus end {}\n",
          site.opId, o.iteration, method, skip, kRegPrefix, doneLabel, wait, doneLabel, probeName);
    }

    const uint32_t waitLine = body[waitAfter].loc.line;
    // Rebuild the body.
    auto declStatements = parseSnippet(decls + entry, module.target(), kPassName);
    if (!declStatements) return std::unexpected(declStatements.error());
    std::vector<Statement> out;
    out.reserve(body.size() + 64);
    size_t entryAt = 0;
    while (entryAt < body.size() && body[entryAt].kind == Statement::Kind::Variable) ++entryAt;
    for (size_t i = 0; i <= body.size(); ++i) {
      if (i == entryAt)
        for (auto& s : *declStatements) out.push_back(std::move(s));
      if (i == body.size()) break;
      if (auto it = before.find(i); it != before.end()) {
        auto statements = parseSnippet(it->second, module.target(), kPassName);
        if (!statements) return std::unexpected(statements.error());
        for (auto& s : *statements) out.push_back(std::move(s));
      }
      out.push_back(std::move(body[i]));
      if (auto it = after.find(i); it != after.end()) {
        auto statements = parseSnippet(it->second, module.target(), kPassName);
        if (!statements) return std::unexpected(statements.error());
        for (auto& s : *statements) out.push_back(std::move(s));
      }
    }
    body = std::move(out);
    ++probes_;

    // The probed kernel's markers must still form a valid region tree.
    auto check = ptx::analyzeRegions(module);
    if (!check) {
      return fail("passes", fmt::format("{}: internal error, the probe region does not nest: {}",
                                        kPassName, check.error().message));
    }

    probe["op"] = site.opId;
    probe["kind"] = std::string(toString(site.kind));
    probe["kernel"] = kernel->name;
    probe["iteration"] = o.iteration;
    probe["cta"] = o.cta ? nlohmann::json(*o.cta) : nlohmann::json(nullptr);
    probe["completion_method"] = method;
    probe["site_line"] = site.where.line;
    probe["wait_after_line"] = waitLine;
    probe["region"] = {
        {"name", probeName}, {"path", probePath}, {"id", ptx::regionId(kernel->name, probePath)}};
    probe["owner_region"] = {{"path", regions[owner].path}, {"id", regions[owner].id}};
    probe["iteration_region"] = {{"path", regions[*iterRegion].path},
                                 {"id", regions[*iterRegion].id}};
    // `region`: the probe nests in the iteration region; `loop_trip`: the site follows it in the
    // same loop trip, so the probe's wait is outside it (no slack against it can be derived).
    probe["iteration_source"] = tripIteration ? "loop_trip" : "region";
    probe["timed_from"] =
        markersAroundWait ? "last issue of the phase, in the waiting thread" : "issue of the site";
    result.statistics["probe"] = std::move(probe);
    return {};
  }

 private:
  Statistic probes_{this, "probes", "forced waits inserted"};
  Statistic iterationCaptures_{this, "iteration_captures",
                               "iteration copies after the iteration region's begin markers"};
  Statistic sinksRewritten_{this, "state_sinks",
                            "arrive.expect_tx `_` sinks turned into a state register"};

  /// `probe.<kind>.<ordinal>` from `<owner>:<kind>:<ordinal>`.
  static std::string probeRegionName(const analysis::OpSite& site) {
    const size_t last = site.opId.rfind(':');
    return fmt::format("probe.{}.{}", toString(site.kind),
                       last == std::string::npos ? site.opId : site.opId.substr(last + 1));
  }

  static std::set<std::string> existingLabels(const ptx::Function& f) {
    std::set<std::string> labels;
    for (const Statement& s : f.body)
      if (s.kind == Statement::Kind::Label) labels.insert(s.text);
    return labels;
  }

  static std::string freshLabel(std::set<std::string>& labels, std::string_view stem) {
    for (int n = 0;; ++n) {
      std::string name = fmt::format("{}{}{}", kLabelPrefix, stem, n);
      if (labels.insert(name).second) return name;
    }
  }
};

}  // namespace

std::unique_ptr<Pass> createInsertForcedWaitPass() {
  return std::make_unique<InsertForcedWaitPass>();
}

}  // namespace argus::passes
