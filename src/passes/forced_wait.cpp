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
//
// Structure (the MLIR habit): typed options (ForcedWaitOptions) declared once in
// kForcedWaitOptions and parsed by pass_options.h; then analyzeSite (the site, its owning and
// iteration regions, the probe region's name; refusals), placeProbe (a ProbePlacement: the
// iteration captures, where the wait goes, which completion method, the waiting thread) and the
// emission (probeText, spliceProbe, probeDescription: the PTX of that placement and the probe's
// description).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "argus/analysis/discover.h"
#include "argus/ptx/derive.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/ptx/regions.h"
#include "pass.h"
#include "pass_options.h"

namespace argus::passes {
namespace {

using ptx::Statement;

constexpr std::string_view kPassName = "insert_forced_wait";
constexpr std::string_view kRegPrefix = "%argusprobe_";
constexpr std::string_view kLabelPrefix = "$Largusprobe_";

constexpr std::string_view kSharedPhaseValues[] = {"refuse", "wait_after_last"};

/// The pass's options, declared once (name, type, default, help, allowed values).
constexpr OptionInfo kForcedWaitOptions[] = {
    {.name = "op",
     .type = "an op ID from `argus ptx discover`",
     .help = "the async op site to probe",
     .required = true},
    {.name = "iteration",
     .type = "the integer iteration coordinate to probe",
     .help = "the iteration of the selected dynamic instance (the value the trace records for "
             "the enclosing `iter=` region, 32-bit like the trace)",
     .required = true},
    {.name = "cta",
     .type = "a linear CTA id",
     .help = "only this linear CTA id (the trace records' numbering); every CTA when unset"},
    {.name = "shared_phase",
     .type = "choice",
     .defaultValue = R"("refuse")",
     .help = "when later ops of the block signal the same barrier phase: refuse, or wait after "
             "the last of them (see \"Barrier sites\" above)",
     .allowed = kSharedPhaseValues},
};

/// shared_phase; the enumerators follow kSharedPhaseValues.
enum class SharedPhase { Refuse, WaitAfterLast };

/// The pass's options, typed; parsed from kForcedWaitOptions.
struct ForcedWaitOptions {
  std::string op;
  int64_t iteration = 0;
  std::optional<int64_t> cta;
  SharedPhase sharedPhase = SharedPhase::Refuse;

  [[nodiscard]] bool waitAfterLast() const { return sharedPhase == SharedPhase::WaitAfterLast; }

  static Result<ForcedWaitOptions> parse(const nlohmann::json& config) {
    static const std::vector<OptionBinding<ForcedWaitOptions>> table = {
        bindString(kForcedWaitOptions[0], &ForcedWaitOptions::op),
        bindInteger(kForcedWaitOptions[1], &ForcedWaitOptions::iteration, 0, 0xfffffffeLL,
                    "the trace records 32-bit iterations (0..4294967294)"),
        bindInteger(kForcedWaitOptions[2], &ForcedWaitOptions::cta, 0, 0xffffffffLL),
        bindChoice(kForcedWaitOptions[3], &ForcedWaitOptions::sharedPhase),
    };
    return parseOptions<ForcedWaitOptions>(
        kPassName, table, config,
        [](ForcedWaitOptions&, const GivenOptions&) -> OptionCheck { return {}; });
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

// --- analysis ------------------------------------------------------------------------------------

/// What the probe of one op site needs to know (analyzeSite): the site, its kernel, regions,
/// owning and iteration regions, and the probe region's name.
struct SiteFacts {
  /// Every async op site of the module (discoverAsyncOps), for the ops sharing a phase.
  std::vector<analysis::OpSite> sites;
  analysis::OpSite site;
  /// "op `<id>` (<kind> at PTX line <n>)", for messages.
  std::string where;
  ptx::Function* kernel = nullptr;
  std::vector<ptx::FunctionRegions> analysis;
  const ptx::FunctionRegions* fr = nullptr;
  uint32_t owner = 0;
  /// The region whose `iter=` operand selects the instance.
  uint32_t iterRegion = 0;
  /// The site follows the iteration region in the same loop trip (loop-trip iteration).
  bool tripIteration = false;
  std::string probeName;
  std::string probePath;

  [[nodiscard]] const std::vector<ptx::Region>& regions() const { return fr->regions; }
};

/// The enclosing region of `owner` (itself included) that carries the iteration coordinate.
std::optional<uint32_t> enclosingIterationRegion(const std::vector<ptx::Region>& regions,
                                                 uint32_t owner) {
  for (std::optional<uint32_t> r = owner; r; r = regions[*r].parent) {
    if (std::ranges::any_of(regions[*r].begins,
                            [](const ptx::MarkerSite& b) { return !b.iteration.empty(); }))
      return *r;
  }
  return std::nullopt;
}

/// Triton's software pipeliner issues later stages' loads after the iteration region has
/// ended, in the same loop trip. Such a site takes the iteration of the trip: that of the
/// last begin marker with `iter=`, of a region nested in the owner, that precedes it in code
/// entered only through that marker (the iteration register keeps the value it captured).
std::optional<uint32_t> loopTripIterationRegion(const std::vector<ptx::Region>& regions,
                                                const ptx::Function& kernel, uint32_t owner,
                                                size_t statement) {
  std::optional<uint32_t> found;
  std::optional<size_t> latest;
  for (uint32_t r = 0; r < regions.size(); ++r) {
    bool nested = false;
    for (std::optional<uint32_t> q = regions[r].parent; q && !nested; q = regions[*q].parent)
      nested = *q == owner;
    if (!nested) continue;
    for (const ptx::MarkerSite& b : regions[r].begins)
      if (!b.iteration.empty() && b.statement < statement && (!latest || b.statement > *latest) &&
          singleEntry(kernel.body, b.statement, statement)) {
        latest = b.statement;
        found = r;
      }
  }
  return found;
}

/// `probe.<kind>.<ordinal>` from `<owner>:<kind>:<ordinal>`.
std::string probeRegionName(const analysis::OpSite& site) {
  const size_t last = site.opId.rfind(':');
  return fmt::format("probe.{}.{}", toString(site.kind),
                     last == std::string::npos ? site.opId : site.opId.substr(last + 1));
}

/// The selected op site among the module's (TransformOptions::kernel restricts the lookup);
/// an unknown op is refused with the ones there are.
Result<void> findSite(ptx::Module& module, const std::string& kernel, const ForcedWaitOptions& o,
                      SiteFacts& facts) {
  auto sites = analysis::discoverAsyncOps(module, kernel, "");
  if (!sites) return std::unexpected(sites.error());
  facts.sites = std::move(*sites);
  auto found =
      std::ranges::find_if(facts.sites, [&](const analysis::OpSite& s) { return s.opId == o.op; });
  if (found == facts.sites.end()) {
    std::vector<std::string> ids;
    for (const auto& s : facts.sites) ids.push_back(s.opId);
    return fail("passes",
                fmt::format("{}: unknown op `{}`; ops in {}: {}", kPassName, o.op, module.fileName,
                            ids.empty() ? "(none)" : fmt::format("{}", fmt::join(ids, ", "))));
  }
  facts.site = *found;
  facts.where = fmt::format("op `{}` ({} at PTX line {})", facts.site.opId,
                            toString(facts.site.kind), facts.site.where.line);
  for (ptx::Function* f : module.functions())
    if (f->name == facts.site.kernel && f->hasBody) facts.kernel = f;
  if (facts.kernel == nullptr) return fail("passes", "internal error: site kernel not found");
  return {};
}

/// The analysis step: the site, its owning region, the region that gives its iteration, and
/// the probe region's name. Refuses a site outside one owning region or without an iteration
/// region, a kernel probed before, and a probe name already on the path.
Result<SiteFacts> analyzeSite(ptx::Module& module, const std::string& kernelName,
                              const ForcedWaitOptions& o) {
  SiteFacts facts;
  if (auto found = findSite(module, kernelName, o, facts); !found)
    return std::unexpected(found.error());
  auto analysis = ptx::analyzeRegions(module);
  if (!analysis) return std::unexpected(analysis.error());
  facts.analysis = std::move(*analysis);
  auto fr = std::ranges::find_if(facts.analysis, [&](const ptx::FunctionRegions& r) {
    return r.function == facts.kernel->name;
  });
  if (fr == facts.analysis.end()) return fail("passes", "internal error: no regions for kernel");
  facts.fr = &*fr;
  const auto& regions = facts.regions();
  const auto& owners = fr->owners[facts.site.where.statement];
  if (owners.size() != 1) {
    return fail("passes",
                fmt::format("{}: {}: {}; the probe region must nest in one owning region",
                            kPassName, facts.where,
                            owners.empty() ? "the site is outside every region"
                                           : "the site has several possible owning regions"));
  }
  facts.owner = owners.front();
  std::optional<uint32_t> iterRegion = enclosingIterationRegion(regions, facts.owner);
  if (!iterRegion) {
    iterRegion =
        loopTripIterationRegion(regions, *facts.kernel, facts.owner, facts.site.where.statement);
    facts.tripIteration = iterRegion.has_value();
  }
  if (!iterRegion) {
    return fail("passes",
                fmt::format("{}: {}: no enclosing region of `{}` has an `iter=` operand, and "
                            "no region with one begins before it in the same loop trip, so "
                            "iteration {} cannot be selected; mark the loop with "
                            "ARGUS_REGION_ITER",
                            kPassName, facts.where, regions[facts.owner].path, o.iteration));
  }
  facts.iterRegion = *iterRegion;
  for (const Statement& s : facts.kernel->body) {
    if (s.kind == Statement::Kind::Variable && s.variable.name.starts_with(kRegPrefix))
      return fail("passes", fmt::format("{}: kernel `{}` already has a forced-wait probe ({}); "
                                        "apply the pass to the unprobed PTX",
                                        kPassName, facts.kernel->name, s.variable.name));
  }
  facts.probeName = probeRegionName(facts.site);
  facts.probePath = regions[facts.owner].path + "/" + facts.probeName;
  for (std::optional<uint32_t> r = facts.owner; r; r = regions[*r].parent) {
    if (regions[*r].name == facts.probeName)
      return fail("passes", fmt::format("{}: {}: region `{}` already exists on the path", kPassName,
                                        facts.where, facts.probeName));
  }
  return facts;
}

// --- placement -----------------------------------------------------------------------------------

/// A copy of the iteration region's `iter=` operand into %argusprobe_it, after a begin marker.
struct IterationCapture {
  size_t after = 0;         ///< The last statement of the begin marker's span.
  std::string instruction;  ///< `mov.u32` (-1: the marker has no iteration), `mov.b32`, `cvt...`
  std::string operand;
};

/// How the forced wait completes the op.
enum class WaitKind {
  CpAsyncAll,   ///< cp.async.wait_all
  WgmmaGroup,   ///< wgmma commit + wait_group 0
  BulkGroup,    ///< cp.async.bulk commit + wait_group 0
  ArriveState,  ///< try_wait on the state an arrive.expect_tx returned (its `_` sink rewritten)
  Parity,       ///< try_wait.parity on a proven iteration phase
};

/// Where the probe's captures, wait and markers go, and how it waits: plain decisions that the
/// emission step writes.
struct ProbePlacement {
  std::vector<IterationCapture> captures;
  WaitKind wait = WaitKind::CpAsyncAll;
  /// The probe description's completion_method.
  std::string method;
  /// The statement the wait follows (the site, or the last op of its phase).
  size_t waitAfter = 0;
  /// The waiting thread's guard (the issuing one's, or for the arming thread its expect_tx's).
  std::optional<ptx::Guard> waiterGuard;
  /// The probe's markers go around the wait in the waiting thread only (the issue is in another
  /// lane): it times the last issue of the phase to completion.
  bool markersAroundWait = false;
  /// ArriveState: the arrive.expect_tx whose `_` sink becomes the state register.
  std::optional<size_t> stateSink;
  /// The mbarrier operand (ArriveState, Parity).
  std::string barrier;
  /// Parity: the phase parity of the selected iteration.
  int64_t parity = 0;
  /// What the description says of these decisions (shared_phase_with, expect_tx_line, parity...).
  nlohmann::json description = nlohmann::json::object();
};

/// After each begin marker of the iteration region, the copy of its iteration.
Result<std::vector<IterationCapture>> placeCaptures(const SiteFacts& facts) {
  std::vector<IterationCapture> captures;
  const auto& body = facts.kernel->body;
  for (const ptx::MarkerSite& b : facts.regions()[facts.iterRegion].begins) {
    const size_t last = markers::markerSpan(body, b.statement).last;
    if (b.iteration.empty()) {
      captures.push_back({last, "mov.u32", "-1"});
      continue;
    }
    auto copy = iterationCopy(*facts.kernel, b.iteration, b.ptx.line);
    if (!copy) return std::unexpected(copy.error());
    captures.push_back({last, copy->first, copy->second});
  }
  return captures;
}

/// Group completions (cp.async, wgmma, bulk groups): a wait for every group of the family.
Result<void> placeGroupWait(const SiteFacts& facts, ProbePlacement& p) {
  const analysis::Completion& c = facts.site.completion;
  if (c.family == "cp.async") {
    p.method = "cp_async_wait_all";
    p.wait = WaitKind::CpAsyncAll;
  } else if (c.family == "wgmma") {
    p.method = "wgmma_wait_group_0";
    p.wait = WaitKind::WgmmaGroup;
  } else if (c.family == "cp.async.bulk") {
    p.method = "bulk_wait_group_0";
    p.wait = WaitKind::BulkGroup;
  } else {
    return fail("passes", fmt::format("{}: {}: completion family `{}` is not supported", kPassName,
                                      facts.where, c.family));
  }
  return {};
}

/// Later ops of the site's block that signal the same barrier: they share its phase, whichever
/// thread issues them.
std::vector<const analysis::OpSite*> phaseOps(const SiteFacts& facts) {
  const auto& body = facts.kernel->body;
  const size_t at = facts.site.where.statement;
  const analysis::Completion& c = facts.site.completion;
  std::vector<const analysis::OpSite*> ops;
  for (const auto& other : facts.sites) {
    if (other.kernel != facts.site.kernel || other.where.statement <= at) continue;
    if (other.completion.kind != analysis::Completion::Kind::Barrier || !other.completion.barrier ||
        !other.completion.barrier->resolved)
      continue;
    const auto& a = *c.barrier;
    const auto& b = *other.completion.barrier;
    if (a.base != b.base || a.offset != b.offset || a.dynamicTerms != b.dynamicTerms) continue;
    bool straight = true;
    for (size_t i = at + 1; i < other.where.statement && straight; ++i)
      straight = !isBlockBoundary(body[i]);
    if (straight) ops.push_back(&other);
  }
  return ops;
}

std::string opLines(const std::vector<const analysis::OpSite*>& ops) {
  std::vector<std::string> lines;
  for (const auto* s : ops) lines.push_back(fmt::format("`{}` at line {}", s->opId, s->where.line));
  return fmt::format("{}", fmt::join(lines, ", "));
}

void sharePhaseWith(ProbePlacement& p, const std::vector<const analysis::OpSite*>& ops) {
  p.description["shared_phase_with"] = nlohmann::json::array();
  for (const auto* s : ops) p.description["shared_phase_with"].push_back(s->opId);
}

/// The wait on the phase that the arrive.expect_tx at `expectAt` armed: its `_` sink becomes a
/// state register, and the wait loops on that state.
void waitOnArriveState(const SiteFacts& facts, size_t expectAt, ProbePlacement& p) {
  p.wait = WaitKind::ArriveState;
  p.stateSink = expectAt;
  p.description["expect_tx_line"] = facts.kernel->body[expectAt].loc.line;
}

/// An arrive.expect_tx that selects its thread by a guard: its own, or the branch that runs it.
struct ArmingThread {
  size_t statement = 0;
  std::optional<ptx::Guard> guard;
};

/// How many branches of the body name `label` as their target.
size_t branchesTo(const std::vector<Statement>& body, const std::string& label) {
  size_t n = 0;
  for (const Statement& st : body)
    if (st.kind == Statement::Kind::Instruction && st.instruction.baseOpcode() == "bra" &&
        !st.instruction.operands.empty() && st.instruction.operands.back().text == label)
      ++n;
  return n;
}

/// The guard an expect_tx in a branch's arm effectively runs under, when the arm holds only it
/// and rejoins straight into the site's block, and nothing else enters the arm or the join:
///   `@%p bra ARM; bra JOIN; ARM: expect_tx; JOIN: ... site`   (under %p; CUTLASS's producer)
///   `@%p bra JOIN; expect_tx; JOIN: ... site`                  (under !%p)
/// The arming thread is then the one the guard selects at the site.
std::optional<ptx::Guard> armGuardByBranch(const std::vector<Statement>& body, size_t expect,
                                           size_t site) {
  auto code = [&](size_t i) {
    return body[i].kind == Statement::Kind::Instruction || body[i].kind == Statement::Kind::Label;
  };
  auto isBra = [](const Statement& st) {
    return st.kind == Statement::Kind::Instruction && st.instruction.baseOpcode() == "bra" &&
           !st.instruction.operands.empty();
  };
  size_t join = expect + 1;
  while (join < site && !code(join)) ++join;
  if (join >= site || body[join].kind != Statement::Kind::Label) return std::nullopt;
  for (size_t i = join + 1; i < site; ++i)
    if (isBlockBoundary(body[i])) return std::nullopt;
  const std::string& joinLabel = body[join].text;
  auto before = [&](size_t i) -> std::optional<size_t> {
    while (i > 0) {
      --i;
      if (code(i)) return i;
    }
    return std::nullopt;
  };
  auto first = before(expect);
  if (!first) return std::nullopt;
  const Statement& a = body[*first];
  if (isBra(a) && a.instruction.guard && a.instruction.operands.back().text == joinLabel) {
    if (branchesTo(body, joinLabel) != 1) return std::nullopt;
    ptx::Guard g = *a.instruction.guard;
    g.negated = !g.negated;
    return g;
  }
  if (a.kind != Statement::Kind::Label) return std::nullopt;
  const std::string& armLabel = a.text;
  auto jump = before(*first);
  if (!jump || !isBra(body[*jump]) || body[*jump].instruction.guard ||
      body[*jump].instruction.operands.back().text != joinLabel)
    return std::nullopt;
  auto cond = before(*jump);
  if (!cond || !isBra(body[*cond]) || !body[*cond].instruction.guard ||
      body[*cond].instruction.operands.back().text != armLabel)
    return std::nullopt;
  if (branchesTo(body, armLabel) != 1 || branchesTo(body, joinLabel) != 1) return std::nullopt;
  return body[*cond].instruction.guard;
}

/// Method 1's search: an exact arrive.expect_tx of this thread (same block, same guard, not
/// redefined, a `_` sink) before the site; else why not (appended to `refusal`), and an exact
/// one of another thread (method 3) in `armedByOther`: of another guard in the block, or in a
/// branch's arm that rejoins the site's block (armGuardByBranch).
std::optional<size_t> ownArrive(const SiteFacts& facts, const ProbePlacement& p,
                                std::string& refusal, std::optional<ArmingThread>& armedByOther) {
  const auto& body = facts.kernel->body;
  const size_t at = facts.site.where.statement;
  const std::optional<ptx::Guard>& guard = body[at].instruction.guard;
  std::optional<size_t> expect;
  for (const analysis::BarrierSite& e : facts.site.completion.expectTx) {
    if (e.match != "exact" || e.where.statement >= at) continue;
    const Statement& es = body[e.where.statement];
    const bool sink = !es.instruction.operands.empty() &&
                      es.instruction.operands[0].kind == ptx::Operand::Kind::Sink;
    bool straight = true;
    for (size_t i = e.where.statement + 1; i < at && straight; ++i)
      straight = !isBlockBoundary(body[i]);
    if (!straight) {
      auto byBranch =
          es.instruction.guard ? std::nullopt : armGuardByBranch(body, e.where.statement, at);
      if (byBranch && sink) {
        armedByOther = ArmingThread{e.where.statement, byBranch};
        refusal += fmt::format("; expect_tx at line {} runs in a branch's arm (under {}{})",
                               e.where.line, byBranch->negated ? "!" : "", byBranch->predicate);
        continue;
      }
      refusal += fmt::format("; expect_tx at line {} is in another basic block", e.where.line);
      continue;
    }
    if (!sameGuard(es.instruction.guard, guard)) {
      if (sink) armedByOther = ArmingThread{e.where.statement, es.instruction.guard};
      refusal += fmt::format(
          "; expect_tx at line {} and the site have different guards "
          "(not provably the same thread)",
          e.where.line);
      continue;
    }
    if (guard && writtenBetween(body, e.where.statement, p.waitAfter + 1, guard->predicate)) {
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
  return expect;
}

/// Method 2's search: a later wait on the exact barrier, inside the iteration region, whose
/// parity discovery proved an iteration phase of that region; else why not (in `refusal`).
std::optional<analysis::BarrierSite> parityWait(const SiteFacts& facts, const ProbePlacement& p,
                                                std::string& refusal) {
  const auto& regions = facts.regions();
  const std::string& iterPath = regions[facts.iterRegion].path;
  for (const analysis::BarrierSite& w : facts.site.completion.waits) {
    if (w.match != "exact" || w.where.statement <= p.waitAfter) {
      refusal += fmt::format("; wait at line {} {}", w.where.line,
                             w.match != "exact" ? "is not on the exact barrier (" + w.match + ")"
                                                : "precedes the site");
      continue;
    }
    if (!w.phase || w.phase->form != "iteration" || w.phase->iterationRegion != iterPath ||
        !w.phase->stages) {
      refusal +=
          fmt::format("; wait at line {}: parity not proven an iteration phase of `{}` ({})",
                      w.where.line, iterPath,
                      w.phase ? (w.phase->reason.empty() ? w.phase->expression : w.phase->reason)
                              : "no parity");
      continue;
    }
    const auto& wo = facts.fr->owners[w.where.statement];
    bool inRegion = false;
    if (wo.size() == 1)
      for (std::optional<uint32_t> r = wo.front(); r && !inRegion; r = regions[*r].parent)
        inRegion = *r == facts.iterRegion;
    if (!inRegion) {
      refusal += fmt::format("; wait at line {} is not inside `{}`", w.where.line, iterPath);
      continue;
    }
    return w;
  }
  return std::nullopt;
}

/// Method 3: the thread that armed the phase waits on its own arrive's state, after the last op
/// of the block that signals this barrier (whichever thread issues it: Triton arms with thread 0
/// and issues each load from an elected lane). Every issue then precedes the wait in program
/// order, so the wait cannot hold up an issue of its phase.
Result<void> placeArmingThreadWait(const SiteFacts& facts, const ForcedWaitOptions& o,
                                   const std::vector<const analysis::OpSite*>& phase,
                                   const ArmingThread& armed, ProbePlacement& p) {
  const size_t armedAt = armed.statement;
  const Statement& es = facts.kernel->body[armedAt];
  if (!phase.empty() && !o.waitAfterLast()) {
    return fail("passes", fmt::format("{}: {}: later ops of the block signal the same barrier "
                                      "phase ({}); its completion needs their bytes too. Probe "
                                      "the last of them, or set option "
                                      "shared_phase=\"wait_after_last\" to time this op's issue "
                                      "to the completion of the whole phase",
                                      kPassName, facts.where, opLines(phase)));
  }
  const size_t last = phase.empty() ? facts.site.where.statement : phase.back()->where.statement;
  const std::optional<ptx::Guard> armGuard = armed.guard;
  if (armGuard && writtenBetween(facts.kernel->body, armedAt, last + 1, armGuard->predicate)) {
    return fail("passes", fmt::format("{}: {}: cannot force its completion: the guard "
                                      "{} of the expect_tx at line {} is redefined "
                                      "before the wait; no probe is made",
                                      kPassName, facts.where, armGuard->predicate, es.loc.line));
  }
  p.waitAfter = last;
  p.waiterGuard = armGuard;
  p.markersAroundWait = true;
  p.method = "mbarrier_state_arming_thread";
  waitOnArriveState(facts, armedAt, p);
  p.description["waiter"] = "the thread of the expect_tx";
  if (!phase.empty()) sharePhaseWith(p, phase);
  return {};
}

/// Barrier completions (TMA loads, bulk copies with complete_tx): the state of this thread's
/// arrive.expect_tx (method 1), a proven parity phase (method 2), or the arming thread's state
/// (method 3); else refused with every reason.
Result<void> placeBarrierWait(const SiteFacts& facts, const ForcedWaitOptions& o,
                              ProbePlacement& p) {
  const analysis::Completion& c = facts.site.completion;
  if (!c.resolved || !c.barrier || !c.barrier->resolved) {
    return fail("passes",
                fmt::format("{}: {}: its completion is unresolved ({}); no probe is made",
                            kPassName, facts.where, c.reason.empty() ? "no barrier" : c.reason));
  }
  const Statement& issue = facts.kernel->body[facts.site.where.statement];
  const ptx::Operand* barrier = nullptr;
  {
    size_t n = 0;
    for (const auto& op : issue.instruction.operands)
      if (op.kind == ptx::Operand::Kind::Address && n++ == 2) barrier = &op;
  }
  if (barrier == nullptr)
    return fail("passes", fmt::format("{}: {}: no mbarrier operand", kPassName, facts.where));
  p.barrier = ptx::printOperand(*barrier);

  const std::vector<const analysis::OpSite*> phase = phaseOps(facts);
  // Another guard may select another thread (Triton: elect.sync per load); only ops under
  // the same guard are provably this thread's.
  std::vector<const analysis::OpSite*> sharing;
  for (const auto* other : phase)
    if (sameGuard(facts.kernel->body[other->where.statement].instruction.guard,
                  issue.instruction.guard))
      sharing.push_back(other);
  if (!sharing.empty()) {
    if (!o.waitAfterLast()) {
      return fail("passes",
                  fmt::format("{}: {}: the same thread signals the same barrier phase later "
                              "in the block ({}); a wait right after this op would never "
                              "return because the phase also needs their bytes. Probe the "
                              "last of them, or set option shared_phase=\"wait_after_last\" "
                              "to time this op's issue to the completion of the whole phase",
                              kPassName, facts.where, opLines(sharing)));
    }
    p.waitAfter = sharing.back()->where.statement;
    sharePhaseWith(p, sharing);
  }

  std::string refusal;
  std::optional<ArmingThread> armedByOther;  // an exact expect_tx of another thread (method 3)
  if (const std::optional<size_t> expect = ownArrive(facts, p, refusal, armedByOther)) {
    p.method = "mbarrier_state";
    waitOnArriveState(facts, *expect, p);
    return {};
  }
  if (c.expectTx.empty())
    refusal += "; no arrive.expect_tx on this barrier";
  else if (refusal.empty())
    refusal += "; no arrive.expect_tx on the exact barrier before the site in this thread";
  const std::optional<analysis::BarrierSite> parity = parityWait(facts, p, refusal);
  // Later ops of this thread on the phase (`sharing`) got here only with wait_after_last, which
  // method 3 honours the same way: it waits after the last of them.
  if (!parity && armedByOther) return placeArmingThreadWait(facts, o, phase, *armedByOther, p);
  if (!parity) {
    return fail("passes", fmt::format("{}: {}: cannot force its completion: {}; no probe "
                                      "is made (nothing is guessed)",
                                      kPassName, facts.where, refusal.substr(2)));
  }
  p.method = "mbarrier_parity";
  p.wait = WaitKind::Parity;
  const auto& ph = *parity->phase;
  p.parity = ((o.iteration / *ph.stages) & 1) ^ (ph.inverted ? 1 : 0);
  p.description["parity"] = p.parity;
  p.description["parity_from_wait_line"] = parity->where.line;
  p.description["parity_phase"] = ph.expression;
  return {};
}

/// The placement step: the iteration captures, then where the wait goes and how it completes.
Result<ProbePlacement> placeProbe(const SiteFacts& facts, const ForcedWaitOptions& o) {
  ProbePlacement p;
  auto captures = placeCaptures(facts);
  if (!captures) return std::unexpected(captures.error());
  p.captures = std::move(*captures);
  p.waitAfter = facts.site.where.statement;
  p.waiterGuard = facts.kernel->body[p.waitAfter].instruction.guard;
  const Result<void> placed = facts.site.completion.kind == analysis::Completion::Kind::Group
                                  ? placeGroupWait(facts, p)
                                  : placeBarrierWait(facts, o, p);
  if (!placed) return std::unexpected(placed.error());
  return p;
}

// --- emission ------------------------------------------------------------------------------------

/// The probe's PTX text, by insertion point: declarations and entry code at the kernel's entry,
/// and snippets before / after body indices.
struct ProbeText {
  std::string decls;
  std::string entry;
  std::map<size_t, std::string> before;
  std::map<size_t, std::string> after;
};

std::set<std::string> existingLabels(const ptx::Function& f) {
  std::set<std::string> labels;
  for (const Statement& s : f.body)
    if (s.kind == Statement::Kind::Label) labels.insert(s.text);
  return labels;
}

std::string freshLabel(std::set<std::string>& labels, std::string_view stem) {
  for (int n = 0;; ++n) {
    std::string name = fmt::format("{}{}{}", kLabelPrefix, stem, n);
    if (labels.insert(name).second) return name;
  }
}

/// The wait instructions of the placement (with their loop label), declaring what they need.
std::string waitCode(const ProbePlacement& p, const std::string& waitLabel, ProbeText& t) {
  switch (p.wait) {
    case WaitKind::CpAsyncAll:
      return "\tcp.async.wait_all;\n";
    case WaitKind::WgmmaGroup:
      return "\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;\n";
    case WaitKind::BulkGroup:
      return "\tcp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group 0;\n";
    case WaitKind::ArriveState:
      t.decls += fmt::format("\t.reg .b64 {0}st;\n\t.reg .pred {0}done;\n", kRegPrefix);
      return fmt::format(
          "{0}:\n\tmbarrier.try_wait.shared::cta.b64 {1}done, {2}, {1}st;\n"
          "\t@!{1}done bra {0};\n",
          waitLabel, kRegPrefix, p.barrier);
    case WaitKind::Parity:
      t.decls += fmt::format("\t.reg .pred {}done;\n", kRegPrefix);
      return fmt::format(
          "{0}:\n\tmbarrier.try_wait.parity.shared::cta.b64 {1}done, {2}, {3};\n"
          "\t@!{1}done bra {0};\n",
          waitLabel, kRegPrefix, p.barrier, p.parity);
  }
  return {};
}

/// The skip predicate: not the selected iteration, not the selected CTA, or the waiter's guard
/// false (with the CTA id computed at entry).
std::string skipCode(const ProbePlacement& p, const ForcedWaitOptions& o, ProbeText& t) {
  std::string skip = fmt::format("\tsetp.ne.u32 {0}skip, {0}it, {1};\n", kRegPrefix, o.iteration);
  if (o.cta) {
    t.decls += fmt::format("\t.reg .b32 {}cta;\n\t.reg .b32 {}t<3>;\n", kRegPrefix, kRegPrefix);
    t.entry += fmt::format(
        "\tmov.u32 {0}t0, %ctaid.z;\n\tmov.u32 {0}t1, %nctaid.y;\n\tmov.u32 {0}t2, %ctaid.y;\n"
        "\tmad.lo.u32 {0}t0, {0}t0, {0}t1, {0}t2;\n\tmov.u32 {0}t1, %nctaid.x;\n"
        "\tmov.u32 {0}t2, %ctaid.x;\n\tmad.lo.u32 {0}cta, {0}t0, {0}t1, {0}t2;\n",
        kRegPrefix);
    skip += fmt::format("\tsetp.ne.or.u32 {0}skip, {0}cta, {1}, {0}skip;\n", kRegPrefix, *o.cta);
  }
  if (p.waiterGuard) {
    if (p.waiterGuard->negated) {
      skip +=
          fmt::format("\tor.pred {0}skip, {0}skip, {1};\n", kRegPrefix, p.waiterGuard->predicate);
    } else {
      t.decls += fmt::format("\t.reg .pred {}g;\n", kRegPrefix);
      skip += fmt::format("\tnot.pred {0}g, {1};\n\tor.pred {0}skip, {0}skip, {0}g;\n", kRegPrefix,
                          p.waiterGuard->predicate);
    }
  }
  return skip;
}

/// The emission step's text: captures, wait, skip branch and the probe region's markers, placed
/// outside nvcc's `// begin inline asm` / `// end inline asm` comments around the site.
ProbeText probeText(const SiteFacts& facts, const ProbePlacement& p, const ForcedWaitOptions& o) {
  const auto& body = facts.kernel->body;
  ProbeText t;
  t.decls = fmt::format("\t.reg .b32 {0}it;\n\t.reg .pred {0}skip;\n", kRegPrefix);
  t.entry = fmt::format("\tmov.u32 {}it, -1;\n", kRegPrefix);
  for (const IterationCapture& c : p.captures)
    t.after[c.after] += fmt::format("\t{} {}it, {};\n", c.instruction, kRegPrefix, c.operand);
  auto labels = existingLabels(*facts.kernel);
  const std::string waitLabel = freshLabel(labels, "wait");
  const std::string doneLabel = freshLabel(labels, "done");
  const std::string wait = waitCode(p, waitLabel, t);
  const std::string skip = skipCode(p, o, t);
  // A site outside its iteration region (loop-trip iteration) names the iteration itself.
  const std::string beginMarker =
      facts.tripIteration
          ? fmt::format("\t// @argus begin {} iter={}it\n", facts.probeName, kRegPrefix)
          : fmt::format("\t// @argus begin {}\n", facts.probeName);
  auto isAsmComment = [&](size_t i, std::string_view text) {
    return i < body.size() && body[i].kind == Statement::Kind::Comment &&
           body[i].text.find(text) != std::string::npos && body[i].text.size() < text.size() + 4;
  };
  const size_t at = facts.site.where.statement;
  const size_t beginAt = at > 0 && isAsmComment(at - 1, "begin inline asm") ? at - 1 : at;
  const size_t endAt =
      isAsmComment(p.waitAfter + 1, "end inline asm") ? p.waitAfter + 1 : p.waitAfter;
  if (p.markersAroundWait) {
    t.after[endAt] += fmt::format(
        "\t// argus probe: forced wait for {} in iteration {} ({})\n{}\t@{}skip bra {};\n{}{}"
        "\t// @argus end {}\n{}:\n",
        facts.site.opId, o.iteration, p.method, skip, kRegPrefix, doneLabel, beginMarker, wait,
        facts.probeName, doneLabel);
  } else {
    t.before[beginAt] += beginMarker;
    t.after[endAt] += fmt::format(
        "\t// argus probe: forced wait for {} in iteration {} ({})\n{}\t@{}skip bra {};\n{}{}:"
        "\n\t// @argus end {}\n",
        facts.site.opId, o.iteration, p.method, skip, kRegPrefix, doneLabel, wait, doneLabel,
        facts.probeName);
  }
  return t;
}

/// Rebuilds the body: declarations and entry code after the leading declarations, each snippet
/// before / after its statement.
Result<void> spliceProbe(std::vector<Statement>& body, const std::string& target,
                         const ProbeText& t) {
  auto declStatements = parseSnippet(t.decls + t.entry, target, kPassName);
  if (!declStatements) return std::unexpected(declStatements.error());
  std::vector<Statement> out;
  out.reserve(body.size() + 64);
  size_t entryAt = 0;
  while (entryAt < body.size() && body[entryAt].kind == Statement::Kind::Variable) ++entryAt;
  for (size_t i = 0; i <= body.size(); ++i) {
    if (i == entryAt)
      for (auto& s : *declStatements) out.push_back(std::move(s));
    if (i == body.size()) break;
    if (auto it = t.before.find(i); it != t.before.end()) {
      auto statements = parseSnippet(it->second, target, kPassName);
      if (!statements) return std::unexpected(statements.error());
      for (auto& s : *statements) out.push_back(std::move(s));
    }
    out.push_back(std::move(body[i]));
    if (auto it = t.after.find(i); it != t.after.end()) {
      auto statements = parseSnippet(it->second, target, kPassName);
      if (!statements) return std::unexpected(statements.error());
      for (auto& s : *statements) out.push_back(std::move(s));
    }
  }
  body = std::move(out);
  return {};
}

/// The probe's description for the planner and synthesis (probe_join).
nlohmann::json probeDescription(const SiteFacts& facts, const ProbePlacement& p,
                                const ForcedWaitOptions& o, uint32_t waitLine) {
  const auto& regions = facts.regions();
  const std::string& kernel = facts.kernel->name;
  nlohmann::json probe = p.description;
  probe["op"] = facts.site.opId;
  probe["kind"] = std::string(toString(facts.site.kind));
  probe["kernel"] = kernel;
  probe["iteration"] = o.iteration;
  probe["cta"] = o.cta ? nlohmann::json(*o.cta) : nlohmann::json(nullptr);
  probe["completion_method"] = p.method;
  probe["site_line"] = facts.site.where.line;
  probe["wait_after_line"] = waitLine;
  probe["region"] = {{"name", facts.probeName},
                     {"path", facts.probePath},
                     {"id", ptx::regionId(kernel, facts.probePath)}};
  probe["owner_region"] = {{"path", regions[facts.owner].path}, {"id", regions[facts.owner].id}};
  probe["iteration_region"] = {{"path", regions[facts.iterRegion].path},
                               {"id", regions[facts.iterRegion].id}};
  // `region`: the probe nests in the iteration region; `loop_trip`: the site follows it in the
  // same loop trip, so the probe's wait is outside it (no slack against it can be derived).
  probe["iteration_source"] = facts.tripIteration ? "loop_trip" : "region";
  probe["timed_from"] =
      p.markersAroundWait ? "last issue of the phase, in the waiting thread" : "issue of the site";
  return probe;
}

class InsertForcedWaitPass final : public Pass {
 public:
  std::string_view name() const override { return kPassName; }
  std::string_view description() const override {
    return "force one async op site to complete right after issue in one iteration (probe)";
  }

  Result<void> run(ptx::Module& module, const TransformOptions& options,
                   TransformResult& result) override {
    auto o = ForcedWaitOptions::parse(options.config);
    if (!o) return std::unexpected(o.error());
    // A derived region's iteration is a trip counter: the probe compares it, so it is code.
    tripCounters_ += ptx::lowerTripCounters(module, options.kernel);
    auto facts = analyzeSite(module, options.kernel, *o);
    if (!facts) return std::unexpected(facts.error());
    auto placement = placeProbe(*facts, *o);
    if (!placement) return std::unexpected(placement.error());
    iterationCaptures_ += placement->captures.size();
    auto description = emit(module, *facts, *placement, *o);
    if (!description) return std::unexpected(description.error());
    result.statistics["probe"] = std::move(*description);
    return {};
  }

 private:
  Statistic probes_{this, "probes", "forced waits inserted"};
  Statistic tripCounters_{this, "trip_counters",
                          "derived regions' loop-trip counter steps and resets made code"};
  Statistic iterationCaptures_{this, "iteration_captures",
                               "iteration copies after the iteration region's begin markers"};
  Statistic sinksRewritten_{this, "state_sinks",
                            "arrive.expect_tx `_` sinks turned into a state register"};

  /// The emission step: rewrites the state sink, splices the probe's text into the kernel,
  /// checks that the markers still nest, and returns the probe's description.
  Result<nlohmann::json> emit(ptx::Module& module, const SiteFacts& facts, const ProbePlacement& p,
                              const ForcedWaitOptions& o) {
    std::vector<Statement>& body = facts.kernel->body;
    const ProbeText text = probeText(facts, p, o);
    if (p.stateSink) {
      ptx::Operand state;
      state.kind = ptx::Operand::Kind::Register;
      state.text = std::string(kRegPrefix) + "st";
      body[*p.stateSink].instruction.operands[0] = state;
      ++sinksRewritten_;
    }
    const uint32_t waitLine = body[p.waitAfter].loc.line;
    if (auto spliced = spliceProbe(body, module.target(), text); !spliced)
      return std::unexpected(spliced.error());
    ++probes_;
    // The probed kernel's markers must still form a valid region tree.
    auto check = ptx::analyzeRegions(module);
    if (!check) {
      return fail("passes", fmt::format("{}: internal error, the probe region does not nest: {}",
                                        kPassName, check.error().message));
    }
    return probeDescription(facts, p, o, waitLine);
  }
};

}  // namespace

std::unique_ptr<Pass> createInsertForcedWaitPass() {
  return std::make_unique<InsertForcedWaitPass>();
}

}  // namespace argus::passes
