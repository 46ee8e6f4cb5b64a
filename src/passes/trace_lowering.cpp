// lower_markers_to_trace: the traced variants (full and scoped reference traces).
//
// Every begin/end marker of an instrumented kernel becomes a few PTX instructions that write one
// TraceRecord (include/argus/trace/format.h) per selected region occurrence into the warp's slot
// of the buffer that `__argus_trace` points to. Design, after docs/architecture.md "Reference
// tracing":
//
// - Per kernel entry (once): load the header pointer; `%argus_on` = pointer != 0 (and the static
//   scope clauses sm/cta/warp/warpgroup hold for this thread); read capacityPerWarp and
//   warpsPerCta from the header; compute the linear warp-in-CTA and CTA ids, the warp's slot base
//   address and the constant part of `meta` (valid bit | SM id). The per-warp record counter is
//   a register (`%argus_cnt`): no atomics on the common path.
// - Begin marker of region k: the iteration (own `iter=` operand, else the enclosing region's,
//   else kNoIteration) into `%argus_i<k>`, the meta word (region index, role: own `role=` tag,
//   else the enclosing region's) into `%argus_m<k>`, for scoped variants the scope predicate
//   `%argus_s<k>`, and *last* the begin timestamp `%argus_b<k>`, so that the bookkeeping is not
//   timed.
// - End marker of region k: *first* the end timestamp, then lane 0 stores the record with two
//   16-byte predicated stores (st.global.cs: evict-first, the buffer is never re-read on the
//   device); every lane that runs the marker advances its counter; a full slot adds 1 to
//   header.dropped with one red.global (lane 0 only). No branches: the instrumentation does not
//   split blocks. The default record layout, `compact`, differs (option record_layout below).
//
// Time base (option `time_base`): `globaltimer` (default; nanoseconds, comparable across SMs, but
// updated with a coarse granularity on some GPUs) or `clock64` (SM cycles, fine-grained, only
// comparable within one SM). Both reads are special-register moves that ptxas keeps in program
// order with respect to other volatile operations (markers sit next to barriers, TMA and WGMMA
// asm); ordinary arithmetic may still be scheduled across them, like for any inline-asm timer.
// The chosen base goes into the trace map (`time_base`), not into header.timeBase: writing the
// header from the device would cost every kernel an extra predicated store for information the
// host already has. The decoder reads the base from the trace map.
//
// Markers in functions the kernel calls are traced as the kernel's regions under the calling
// region (ptx::composeCalleeRegions): the callee writes their records into the calling warp's
// slot, with the state that records change carried across each call in the trace cell
// (TraceEmitter::saveState), a parameter added to every function on the way; a callee reached
// under several calling regions is first copied per region (clone_shared_callees). Markers of
// kernels that are not instrumented, and of functions only they reach, are stripped.
//
// Structure (the MLIR habit): the options are typed (LoweringOptions), declared once in
// trace::kTraceOptions and parsed by pass_options.h; each instrumented kernel then goes through
// three steps: analyzeKernel (what the kernel has: regions, roles, markers, the end markers a warp
// may run without lane 0, iteration operands; refusals), placeRecords (a TracePlacement: where
// places are taken, how each end marker stores, which markers count lost occurrences, where the
// closing records go) and TraceEmitter + spliceTrace (the PTX text of that placement, spliced into
// the body, and the trace map).
#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "argus/ptx/callee_regions.h"
#include "argus/ptx/cfg.h"
#include "argus/ptx/derive.h"
#include "argus/ptx/divergence.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/regions.h"
#include "argus/trace/format.h"
#include "argus/trace/options.h"
#include "pass.h"
#include "pass_options.h"

namespace argus::passes {
namespace {

using ptx::Statement;

constexpr std::string_view kPassName = "lower_markers_to_trace";
constexpr std::string_view kRegPrefix = "%argus_";
/// The trace cell's parameter, added last to every function a traced callee is reached through,
/// and its layout (TraceEmitter::saveState).
constexpr std::string_view kCellParam = "__argus_cellp";
constexpr size_t kCellBytes = 32;
constexpr size_t kCellPlace = 0, kCellCount = 4, kCellPending = 8, kCellPendingMeta = 12,
                 kCellIteration = 16, kCellMeta = 20, kCellRole = 24;

// The choices' enumerators follow their values' order in trace::kTraceOptions (bindChoice).
enum class RecordLayout { Full, Compact };
enum class RecordPlace { End, Begin };
enum class Overflow { Count, Clamp };
enum class RecordStore { Leader, Paired };
enum class Parted { Count, Record };

/// The pass's options, typed; declared (name, type, default, help, allowed values) in
/// trace::kTraceOptions and read from TransformOptions::config by LoweringOptions::parse.
struct LoweringOptions {
  trace::TimeBase timeBase = trace::TimeBase::GlobalTimer;
  /// Records per warp the host should allocate (written into the trace map; the device reads
  /// the actual capacity from the header).
  uint32_t capacityHint = 256;
  /// Cache operator of the record stores: `cs` (evict-first, default), `wb`, `cg`.
  std::string storeCache = "cs";
  /// Overflow accounting. `clamp` (default): branch-free; records past the capacity overwrite
  /// the slot's last record and each record carries its sequence number (TraceRecord::warp bits
  /// 8..31), from which the decoder counts the dropped ones. `count`: a full slot adds 1 to
  /// header.dropped (an atomic that ptxas wraps in a convergence region). Measured on the H200
  /// (seed benchmark, same session): clamp added 0.6-1.4 us less per launch of 64 occurrences.
  Overflow overflow = Overflow::Clamp;
  /// Who writes a record's two 16-byte halves. `leader` (default): lane 0, with two store
  /// instructions. `paired`: when the whole warp is converged, lanes 0 and 1 write one half
  /// each with a single store instruction (a diverged warp falls back to its elected lane).
  /// Measured on the H200 (experiments/HISTORY.md, bisection): each record store instruction costs
  /// ~1 us per launch of 64 occurrences; timers, election and the counter cost nothing measurable.
  /// `paired` itself is not yet measured or checked on a GPU
  /// (experiments/trace-overhead/record-store-experiment.sh does both), so it is not the default.
  /// Needs `clamp`.
  RecordStore recordStore = RecordStore::Leader;
  /// Device record layout. `full`: the 32-byte TraceRecord, two 16-byte stores at the end
  /// marker by lane 0 (the layout when overflow=count or record_store=paired is asked
  /// for without a layout). `compact` (default): one 16-byte CompactRecord (format.h: the low 32
  /// bits of the begin timestamp, the iteration, the low 32 bits of the end timestamp, meta) in
  /// half-size places, stored by lane 0: a leaf region's
  /// (record_place=begin) in two 8-byte halves, {begin, iteration} at its begin marker right
  /// after the place is taken (format.h kLayoutHalves; no copies; measured on the H200,
  /// sixteenth session: +0.71-0.74 us per launch at compute 512 against +0.93 for one store at
  /// the end marker) and {end, meta}, read at its end marker, when the warp takes its next place
  /// or leaves (format.h kLayoutCountFirst: the end marker is a timer read; unless a leaf region
  /// is open at a ret on some path, then at the end marker); other regions' at the end marker
  /// from registers no nearby instruction overwrites (the begin timestamp and the iteration are
  /// copied there under a predicate, so ptxas keeps them apart from the next timer read and the
  /// loop counter), at record min(count, 2 cap - 3) (no compare before the store), plus
  /// at every `ret`/`exit` the lanes' highest count and lane 0's closing record with its count
  /// and a whole timestamp; the injection library expands it to full records when it reads the
  /// buffer back and counts what a full slot or lanes that ran markers lane 0 did not lost
  /// (at end markers a warp may run without lane 0, by ptx::blocksWithoutLaneZero, the lowest
  /// running lane that began the occurrence without lane 0 counts it in the slot).
  /// Measured on the H200 (experiments/HISTORY.md, eighth session): +1.4-1.6 us per launch of the
  /// seed's compute kernel (64 occurrences) against the full layout's +2.1-2.9; the exits' red.max
  /// 0.1 us of it. Not with overflow=count or record_store=paired.
  RecordLayout recordLayout = RecordLayout::Compact;
  /// Where the compact layout takes a record's place (the previous place's address + 16,
  /// clamped to the slot's last record place, and the count raised). `begin` (default): for leaf
  /// regions (no region nested in them) at the begin marker, off the end marker's path to its
  /// store, while the warp waits for the occurrence's first operands anyway; no other marker runs
  /// between a leaf's begin and end, so the places, and the records, are the same as with `end`;
  /// an exit between them (analyzeRegions refuses a ret or exit inside a region open on every
  /// path to it, and warns of one open on some paths) leaves the claimed place without its end
  /// half, which the expansion drops and counts. `end`: at the end marker, for every region.
  /// Measured on the seed kernels' compute variant at inner 8 over 8 loop placements: +1.28 us per
  /// launch against +1.54 with `end` (experiments/HISTORY.md, issue 5). The full layout ignores it;
  /// naming `begin` with it is an error.
  RecordPlace recordPlace = RecordPlace::Begin;
  /// Occurrences a warp begins without lane 0 (one pass of a diverged warp: an if/else on the
  /// lane or on data, with markers in it), which lane 0's stores do not cover. `count`
  /// (default): the lowest lane of such a pass adds 1 to the slot's lost word, and the
  /// occurrence is reported lost. `record` (compact layout only): that lane also claims a place
  /// with the returned count (atom instead of red) and stores the record itself, from the
  /// slot's last record place downward (format.h), so that such regions are traced whole; it
  /// waits for the atomic there, in those passes only.
  Parted parted = Parted::Count;
  /// `blocks`: {kernel: [x, y, z]}, the block shape every launch of a kernel uses (the program
  /// spec's kernels[].block, which argus build and the planner pass on). The lane-0 analysis
  /// (ptx::blocksWithoutLaneZero) then keeps warp-index branches uniform as `.reqntid` would,
  /// so role branches under `.maxntid` need no lost count; the trace map keeps the shape
  /// (`block`), and launches with another one are noted when the trace is decoded.
  std::map<std::string, std::array<uint32_t, 3>> blocks;

  [[nodiscard]] bool compact() const { return recordLayout == RecordLayout::Compact; }

  /// The declared option `name` (a row of trace::kTraceOptions).
  static const OptionInfo& declared(std::string_view name) {
    for (const OptionInfo& info : trace::kTraceOptions)
      if (info.name == name) return info;
    std::abort();  // a binding names an undeclared option: a programming error
  }

  /// Each declared option bound to its field.
  static const std::vector<OptionBinding<LoweringOptions>>& table() {
    static const std::vector<OptionBinding<LoweringOptions>> rows = {
        bindChoice(declared("parted"), &LoweringOptions::parted),
        bindChoice(declared("record_layout"), &LoweringOptions::recordLayout),
        bindChoice(declared("record_place"), &LoweringOptions::recordPlace),
        bindChoice(declared("time_base"), &LoweringOptions::timeBase),
        bindChoice(declared("store_cache"), &LoweringOptions::storeCache),
        bindChoice(declared("overflow"), &LoweringOptions::overflow),
        bindChoice(declared("record_store"), &LoweringOptions::recordStore),
        bindInteger(declared("capacity_hint"), &LoweringOptions::capacityHint, 1, 0xffffffffLL),
        bindCustom<LoweringOptions>(declared("blocks"), &readBlocks),
    };
    return rows;
  }

  /// `blocks`: {"kernel": [x, y, z]} with positive 32-bit extents.
  static bool readBlocks(const nlohmann::json& value, LoweringOptions& o) {
    if (!value.is_object()) return false;
    for (const auto& [kernel, shape] : value.items()) {
      if (!shape.is_array() || shape.size() != 3) return false;
      std::array<uint32_t, 3> b{};
      for (size_t d = 0; d < 3; ++d) {
        if (!shape[d].is_number_integer() || shape[d].get<int64_t>() <= 0 ||
            shape[d].get<int64_t>() > 0xffffffff)
          return false;
        b[d] = shape[d].get<uint32_t>();
      }
      o.blocks[kernel] = b;
    }
    return true;
  }

  /// The rules between options: the full layout's own options choose it when no layout is
  /// named, and the combinations a layout cannot do are refused.
  static OptionCheck resolve(LoweringOptions& o, const GivenOptions& given) {
    const bool fullOnly = o.overflow != Overflow::Clamp || o.recordStore != RecordStore::Leader;
    if (!given.contains("record_layout") && fullOnly) o.recordLayout = RecordLayout::Full;
    if (o.compact() && fullOnly)
      return std::unexpected(std::string(
          "record_layout \"compact\" needs overflow \"clamp\" and record_store \"leader\" (lane 0 "
          "writes its records, and its closing record counts the dropped ones); add "
          "record_layout=full for the others"));
    if (given.contains("record_place") && o.recordPlace == RecordPlace::Begin && !o.compact())
      return std::unexpected(std::string(
          "record_place \"begin\" is for record_layout \"compact\"; drop it, or the other layout "
          "options"));
    if (o.parted == Parted::Record && !o.compact())
      return std::unexpected(std::string(
          "parted \"record\" is for record_layout \"compact\" (the full layout only counts the "
          "occurrences begun without lane 0); drop one of them"));
    if (o.recordStore == RecordStore::Paired && o.overflow != Overflow::Clamp)
      return std::unexpected(
          std::string("record_store \"paired\" needs overflow \"clamp\"; drop overflow=count"));
    return {};
  }

  static Result<LoweringOptions> parse(const nlohmann::json& config) {
    return parseOptions<LoweringOptions>(kPassName, table(), config, &resolve);
  }

  /// A choice option's value as the trace map writes it.
  template <class T>
  static std::string name(std::string_view option, T value) {
    return std::string(choiceName(declared(option), value));
  }
};

std::string_view timeBaseName(trace::TimeBase base) {
  return base == trace::TimeBase::SmClock ? "clock64" : "globaltimer";
}

/// The special register with the time base's low 32 bits (the compact layout's timestamps).
std::string_view timeBaseLow(trace::TimeBase base) {
  return base == trace::TimeBase::SmClock ? "clock" : "globaltimer_lo";
}

/// A `ret` or `exit` instruction: where the compact layout's closing record goes.
bool isExit(const Statement& s) {
  return s.kind == Statement::Kind::Instruction &&
         (s.instruction.baseOpcode() == "ret" || s.instruction.baseOpcode() == "exit");
}

/// Smallest SM number of `sm_NN[a]`, 0 when unknown.
int smVersion(const std::string& target) {
  int v = 0;
  if (target.starts_with("sm_")) {
    const char* b = target.data() + 3;
    std::from_chars(b, target.data() + target.size(), v);
  }
  return v;
}

/// The lowest active lane into %argus_lead (activemask in %argus_t0; elect.sync on sm_90+,
/// %lanemask_lt otherwise).
std::string electLeader(bool elect) {
  std::string text = "\tactivemask.b32 %argus_t0;\n";
  if (elect) return text + "\telect.sync _|%argus_lead, %argus_t0;\n";
  return text +
         "\tmov.u32 %argus_t1, %lanemask_lt;\n"
         "\tand.b32 %argus_t1, %argus_t1, %argus_t0;\n"
         "\tsetp.eq.u32 %argus_lead, %argus_t1, 0;\n";
}

/// Emits `pred = value in ranges` (unsigned 32-bit compare per range, or-combined).
void emitInSet(std::string& out, std::string_view value, const std::vector<query::Range>& ranges,
               std::string_view pred) {
  bool first = true;
  for (const auto& r : ranges) {
    if (r.lo > 0xffffffffLL || r.hi < 0) continue;
    const uint64_t lo = static_cast<uint64_t>(std::max<int64_t>(r.lo, 0));
    const uint64_t hi = static_cast<uint64_t>(std::min<int64_t>(r.hi, 0xffffffffLL));
    std::string_view v = value;
    if (lo != 0) {
      out += fmt::format("\tsub.u32 %argus_t3, {}, {};\n", value, lo);
      v = "%argus_t3";
    }
    if (first) {
      out += fmt::format("\tsetp.le.u32 {}, {}, {};\n", pred, v, hi - lo);
    } else {
      out += fmt::format("\tsetp.le.or.u32 {}, {}, {}, {};\n", pred, v, hi - lo, pred);
    }
    first = false;
  }
  if (first) out += fmt::format("\tmov.pred {}, 0;\n", pred);
}

/// How a begin marker's iteration operand is copied into a 32-bit register.
struct IterationSource {
  std::string instruction;  ///< `mov.b32` or `cvt.u32.u64` / `cvt.u32.u16`
  std::string operand;
};

std::string where(const ptx::Function& kernel, const ptx::MarkerSite& site) {
  return fmt::format("kernel `{}`, PTX line {}", kernel.name, site.ptx.line);
}

/// Resolves an `iter=` operand to a 32-bit source.
Result<IterationSource> iterationSource(const ptx::Function& kernel, const ptx::MarkerSite& site) {
  const std::string& op = site.iteration;
  auto bad = [&](std::string_view why) {
    return fail("passes", fmt::format("{}: {}: iteration operand `{}` {}; use a 32-bit "
                                      "register or an immediate",
                                      kPassName, where(kernel, site), op, why));
  };
  if (!op.empty() && op[0] != '%') {
    int64_t value = 0;
    const bool hex = op.starts_with("0x") || op.starts_with("0X");
    const char* b = op.data() + (hex ? 2 : 0);
    auto [ptr, ec] = std::from_chars(b, op.data() + op.size(), value, hex ? 16 : 10);
    if (ec != std::errc{} || ptr != op.data() + op.size()) return bad("is not a register");
    if (value < 0 || value > 0xffffffffLL) return bad("does not fit in 32 bits");
    return IterationSource{"mov.b32", op};
  }
  if (const ptx::VariableDecl* d = findRegisterDecl(kernel, op); d != nullptr) {
    const bool integer =
        d->type.size() > 2 && (d->type[1] == 'b' || d->type[1] == 'u' || d->type[1] == 's');
    if (!integer) return bad(fmt::format("has type {}", d->type));
    const std::string bits = d->type.substr(2);
    if (bits == "32") return IterationSource{"mov.b32", op};
    // 64-bit iteration counters are truncated to the record's 32-bit field (low bits kept).
    if (bits == "64") return IterationSource{"cvt.u32.u64", op};
    if (bits == "16") return IterationSource{"cvt.u32.u16", op};
    return bad(fmt::format("has type {}", d->type));
  }
  return bad("is not declared in the kernel");
}

// --- analysis ------------------------------------------------------------------------------------

/// A marker statement of the kernel: the one region it begins or ends.
struct Site {
  bool begin = true;
  uint32_t region = 0;
  const ptx::MarkerSite* site = nullptr;
};

/// What one function of an instrumented kernel has (analyzeKernel): the kernel's regions (its
/// own, then those of the functions it calls: ptx::composeCalleeRegions), the roles, this
/// function's markers, the end markers a warp may run without lane 0, and how each begin
/// marker's iteration is read. For the kernel and for each traced callee.
struct KernelFacts {
  const std::vector<ptx::Region>* all = nullptr;
  /// Per statement of this function: the regions (indices into `all`) that can own it.
  std::vector<std::vector<uint32_t>> owners;
  /// Roles in order of first appearance (at most 15; index kNoRole means none).
  std::vector<std::string> roles;
  /// Marker statement -> the region it begins or ends.
  std::map<size_t, Site> sites;
  /// Per statement: an end marker a warp may run without lane 0 (ptx::blocksWithoutLaneZero;
  /// none with record_store=paired, whose elected lane stores).
  std::vector<bool> withoutLaneZero;
  /// Begin marker statement with an `iter=` operand -> how it is copied.
  std::map<size_t, IterationSource> iterations;
  /// Per statement: a warp may run it without lane 0 (a call there passes that on).
  std::vector<bool> statementWithoutLaneZero;

  [[nodiscard]] const std::vector<ptx::Region>& regions() const { return *all; }
  [[nodiscard]] uint32_t roleIndex(const std::string& role) const {
    return static_cast<uint32_t>(std::ranges::find(roles, role) - roles.begin());
  }
};

/// The kernel's roles in order of first appearance; refuses a 16th.
Result<std::vector<std::string>> collectRoles(const ptx::Function& kernel,
                                              const std::vector<ptx::Region>& regions) {
  std::vector<std::string> roles;
  for (const auto& region : regions) {
    for (const auto& site : region.begins) {
      if (site.role.empty() || std::ranges::find(roles, site.role) != roles.end()) continue;
      if (roles.size() == trace::kNoRole) {
        return fail("passes", fmt::format("{}: {}: role `{}` is the 16th role of the kernel; a "
                                          "trace records at most 15 roles",
                                          kPassName, where(kernel, site), site.role));
      }
      roles.push_back(site.role);
    }
  }
  return roles;
}

/// Which region each marker statement begins or ends, for the function whose regions are
/// `regions[first, first + count)`; refuses a marker of two regions.
Result<std::map<size_t, Site>> collectSites(const ptx::Function& kernel,
                                            const std::vector<ptx::Region>& regions, uint32_t first,
                                            uint32_t count) {
  std::map<size_t, Site> sites;
  for (uint32_t k = first; k < first + count; ++k) {
    for (int pass = 0; pass < 2; ++pass) {
      const auto& list = pass == 0 ? regions[k].begins : regions[k].ends;
      for (const auto& site : list) {
        auto [it, inserted] = sites.emplace(site.statement, Site{pass == 0, k, &site});
        if (!inserted && it->second.region != k) {
          return fail("passes", fmt::format("{}: {}: this marker belongs to regions `{}` and "
                                            "`{}` on different paths; tracing needs one region "
                                            "per marker (move the marker out of the branch)",
                                            kPassName, where(kernel, site),
                                            regions[it->second.region].path, regions[k].path));
        }
      }
    }
  }
  return sites;
}

/// Per statement: whether a warp may run it without lane 0 (by ptx::blocksWithoutLaneZero, with
/// the kernel's block shape when the options give one; in a callee, also every statement when
/// `calledWithout`: some call of it may run without lane 0). Refuses a shape no launch can have.
Result<std::vector<bool>> withoutLaneZero(const ptx::Function& kernel, const std::string& fileName,
                                          const LoweringOptions& options, bool calledWithout) {
  std::vector<bool> without(kernel.body.size(), calledWithout);
  if (options.recordStore == RecordStore::Paired) return std::vector<bool>(kernel.body.size());
  auto cfg = ptx::buildControlFlowGraph(kernel, fileName);
  if (!cfg) return std::unexpected(cfg.error());
  const auto shape = options.blocks.find(kernel.name);
  if (shape != options.blocks.end())
    if (auto conflict = ptx::blockShapeConflict(kernel, shape->second))
      return fail("passes", fmt::format("{}: the program spec gives kernel `{}` block [{}, {}, {}] "
                                        "(kernels[].block), which no launch can have: its {}; "
                                        "correct the spec's block",
                                        kPassName, kernel.name, shape->second[0], shape->second[1],
                                        shape->second[2], *conflict));
  const std::vector<bool> blocks = ptx::blocksWithoutLaneZero(
      kernel, *cfg, shape == options.blocks.end() ? std::nullopt : std::optional(shape->second));
  for (size_t i = 0; i < without.size() && i < cfg->blockOf.size(); ++i)
    without[i] = without[i] || blocks[cfg->blockOf[i]];
  return without;
}

/// The analysis step: what the kernel has for tracing. Refuses what a trace cannot record (too
/// many regions or roles, a marker of two regions, an unusable iteration operand), a kernel
/// traced before, and lost counting in PTX older than activemask.
/// `kernel` is the function analyzed (the kernel or a traced callee), `local` its own region
/// analysis, `all` the kernel's composed regions, of which this function's are
/// [first, first + local.regions.size()); `roles` the kernel's (collectRoles over `all`).
Result<KernelFacts> analyzeKernel(const ptx::Function& kernel, const ptx::FunctionRegions& local,
                                  const std::vector<ptx::Region>& all, uint32_t first,
                                  std::vector<std::string> roles, bool calledWithoutLaneZero,
                                  const LoweringOptions& options, const std::string& fileName,
                                  const std::string& ptxVersion) {
  KernelFacts facts;
  facts.all = &all;
  facts.owners.resize(local.owners.size());
  for (size_t i = 0; i < local.owners.size(); ++i)
    for (uint32_t r : local.owners[i]) facts.owners[i].push_back(first + r);
  const auto& regions = all;
  if (regions.size() > trace::kMaxRegions) {
    return fail("passes", fmt::format("{}: kernel `{}` has {} regions with those of the functions "
                                      "it calls; a trace records at most {} (12-bit region index)",
                                      kPassName, kernel.name, regions.size(), trace::kMaxRegions));
  }
  for (const Statement& s : kernel.body) {
    if (s.kind == Statement::Kind::Variable && s.variable.name.starts_with(kRegPrefix)) {
      return fail("passes", fmt::format("{}: kernel `{}` already declares {}; it was traced "
                                        "before (apply the pass to the marked PTX)",
                                        kPassName, kernel.name, s.variable.name));
    }
  }
  facts.roles = std::move(roles);
  auto sites = collectSites(kernel, regions, first, static_cast<uint32_t>(local.regions.size()));
  if (!sites) return std::unexpected(sites.error());
  facts.sites = std::move(*sites);
  auto without = withoutLaneZero(kernel, fileName, options, calledWithoutLaneZero);
  if (!without) return std::unexpected(without.error());
  facts.withoutLaneZero.assign(kernel.body.size(), false);
  for (const auto& [statement, site] : facts.sites)
    facts.withoutLaneZero[statement] = !site.begin && (*without)[statement];
  facts.statementWithoutLaneZero = std::move(*without);
  // activemask, which counting them needs, is PTX ISA 6.2.
  if (std::ranges::find(facts.withoutLaneZero, true) != facts.withoutLaneZero.end()) {
    unsigned major = 0, minor = 0;
    if (std::sscanf(ptxVersion.c_str(), "%u.%u", &major, &minor) == 2 &&
        (major < 6 || (major == 6 && minor < 2)))
      return fail("passes", fmt::format("{}: kernel `{}` has markers a warp may run without "
                                        "lane 0, whose lost occurrences the trace counts with "
                                        "activemask (PTX ISA 6.2); {} is PTX {}: compile it "
                                        "with a newer nvcc (CUDA 9.2 or later)",
                                        kPassName, kernel.name, fileName, ptxVersion));
  }
  for (const auto& [statement, site] : facts.sites) {
    if (!site.begin || site.site->iteration.empty()) continue;
    auto source = iterationSource(kernel, *site.site);
    if (!source) return std::unexpected(source.error());
    facts.iterations.emplace(statement, std::move(*source));
  }
  return facts;
}

// --- placement -----------------------------------------------------------------------------------

/// How an end marker stores its region's record.
enum class EndStore {
  /// Compact leaf, second half deferred: {end, meta} kept for the warp's next place or exit.
  Pending,
  /// Compact leaf: {end, meta} at the place its begin marker took.
  SecondHalf,
  /// Compact region with regions inside: the place taken and the whole record stored here.
  Whole,
  /// Full layout: the 32-byte record, two stores (or one paired store).
  Full,
};

/// One marker's lowering: what its code does (placeRecords decides, the emitter writes it).
struct MarkerPlan {
  size_t statement = 0;
  Site site;
  /// Begin marker of a leaf placed at its begin: takes the place and stores {begin, iteration}.
  bool takesPlace = false;
  /// Begin marker whose region has lost-counting end markers: notes whether lane 0 runs it.
  bool notesBegin = false;
  /// End marker: how the record is stored.
  EndStore store = EndStore::Full;
  /// End marker a warp may run without lane 0: counts (or records) the occurrence lost.
  bool countsLost = false;
};

/// Where records, places, lost counts and closing records go in one kernel: plain decisions,
/// from the options and the analysis, that the emission step writes as PTX.
struct TracePlacement {
  size_t regionCount = 0;
  bool compact = false;
  bool scoped = false;
  bool paired = false;
  /// elect.sync elects the paired store's leader (sm_90+), else %lanemask_lt.
  bool elect = false;
  /// Per region: its place is taken at its begin markers (compact, record_place=begin, leaves).
  std::vector<bool> placeAtBegin;
  /// Leaves' second halves are stored at the warp's next place or exit (kLayoutCountFirst).
  bool deferEnds = false;
  /// Per region: its role when every occurrence has the same one (meta computed at entry).
  std::vector<std::optional<uint32_t>> fixedRole;
  /// The pending meta word is the only region's own %argus_m0 (no %argus_pm copy).
  bool pendingInRegionMeta = false;
  /// Per region: its begin markers note lane 0 (%argus_z<k>) for lost-counting end markers.
  std::vector<bool> beginsNoted;
  /// Some end marker counts lost occurrences.
  bool lostCounted = false;
  /// Every marker of `sites`, in statement order.
  std::vector<MarkerPlan> markers;
  /// Compact: the ret/exit statements a closing record precedes (a callee's exits only).
  std::vector<size_t> exits;
  /// A traced callee's ret statements, before which it stores the trace cell's state.
  std::vector<size_t> returns;
};

/// One function a kernel's trace is written in: the kernel itself (first) or a callee with
/// regions (ptx::composeCalleeRegions), or a function between them that passes the trace cell on.
struct TracedFunction {
  ptx::Function* function = nullptr;
  KernelFacts facts;
  bool isKernel = true;
  /// Writes records (the kernel, a callee with regions); else only passes the cell on.
  bool records = true;
  /// A callee's calling region (index into the composed tree): its iteration, meta word and
  /// role come through the cell, for the callee's top-level regions to inherit.
  std::optional<uint32_t> context;
  /// Statements calling a function that takes the trace cell.
  std::vector<size_t> cellCalls;
};

/// The regions whose place is taken at their begin markers, and whether their second halves
/// wait for the warp's next place or exit (both compact only).
void placeLeaves(const std::vector<TracedFunction>& functions, const LoweringOptions& options,
                 TracePlacement& p) {
  const auto& regions = functions.front().facts.regions();
  const size_t n = regions.size();
  // record_place=begin: the leaf regions, whose place is taken at their begin markers.
  p.placeAtBegin.assign(n, p.compact && options.recordPlace == RecordPlace::Begin);
  for (uint32_t k = 0; k < n; ++k)
    if (regions[k].parent) p.placeAtBegin[*regions[k].parent] = false;
  // compact: a record's second half, {end, meta}, is kept in %argus_pe and %argus_pm at its end
  // marker and stored when the warp takes its next place (at the new place - 8) or leaves the
  // kernel (format.h kLayoutCountFirst): the end marker's path is then a timer read, and the
  // program's next instructions do not wait for a store's register reads (ptxas gives the
  // loop-bound reload after the seed kernel's end marker the store's scoreboard otherwise;
  // measured on the H200, 0.19-0.22 us less per launch of the compute kernel's 64
  // occurrences). Only for kernels with leaf regions placed at their begin (record_place=begin;
  // the others' records are stored whole at their end markers, and nothing would gain), and
  // not where a leaf region is open at a ret or exit on some path (analyzeRegions warns of
  // those): its place would take an older record's second half there. Such kernels store the
  // second half at the end marker. The closing record says which (kClosingPendingBit).
  p.deferEnds = p.compact && std::ranges::find(p.placeAtBegin, true) != p.placeAtBegin.end();
  // The pending half crosses calls (the trace cell carries it), so this is one decision for
  // the kernel and its traced callees.
  for (const TracedFunction& f : functions) {
    const auto& body = f.function->body;
    const auto& owners = f.facts.owners;
    for (size_t i = 0; p.deferEnds && i < body.size() && i < owners.size(); ++i) {
      if (!isExit(body[i])) continue;
      for (uint32_t r : owners[i])
        if (p.placeAtBegin[r]) p.deferEnds = false;
    }
  }
}

/// compact: a region's meta word is the same at every occurrence when its begin markers fix its
/// role (their own, none, or one inherited from a region whose role is fixed).
std::vector<std::optional<uint32_t>> fixedRoles(const KernelFacts& facts) {
  const auto& regions = facts.regions();
  std::vector<std::optional<uint32_t>> fixed(regions.size());
  for (uint32_t k = 0; k < regions.size(); ++k) {
    for (std::optional<uint32_t> at = k; at;) {
      std::set<std::string> own;
      for (const auto& site : regions[*at].begins) own.insert(site.role);
      if (own.size() != 1) break;  // markers with different roles: known only when run
      if (!own.begin()->empty()) {
        fixed[k] = facts.roleIndex(*own.begin());
        break;
      }
      if (!regions[*at].parent) fixed[k] = trace::kNoRole;
      at = regions[*at].parent;
    }
  }
  return fixed;
}

/// The placement step: decides for every marker, exit, return and call of the kernel and its
/// traced callees what its code does; one placement per function, the same kernel-wide choices
/// (places, pending halves, fixed roles, lost counting) in each.
std::vector<TracePlacement> placeRecords(const std::vector<TracedFunction>& functions,
                                         const LoweringOptions& options, const query::Scope& scope,
                                         const std::string& target) {
  TracePlacement p;
  const KernelFacts& kernelFacts = functions.front().facts;
  const size_t n = kernelFacts.regions().size();
  p.regionCount = n;
  p.compact = options.compact();
  p.scoped = !scope.all();
  p.paired = options.recordStore == RecordStore::Paired;
  p.elect = smVersion(target) >= 90;
  placeLeaves(functions, options, p);
  p.fixedRole.assign(n, std::nullopt);
  if (p.compact) {
    p.fixedRole = fixedRoles(kernelFacts);
    p.pendingInRegionMeta = n == 1 && p.fixedRole[0];
  }
  p.beginsNoted.assign(n, false);
  for (const TracedFunction& f : functions)
    for (const auto& [statement, site] : f.facts.sites) {
      if (!f.facts.withoutLaneZero[statement]) continue;
      p.lostCounted = true;
      p.beginsNoted[site.region] = true;
    }
  std::vector<TracePlacement> out;
  for (const TracedFunction& f : functions) {
    TracePlacement q = p;
    for (const auto& [statement, site] : f.facts.sites) {
      MarkerPlan m;
      m.statement = statement;
      m.site = site;
      m.countsLost = f.facts.withoutLaneZero[statement];
      if (site.begin) {
        m.takesPlace = q.compact && q.placeAtBegin[site.region];
        m.notesBegin = q.beginsNoted[site.region];
      } else if (!q.compact) {
        m.store = EndStore::Full;
      } else if (!q.placeAtBegin[site.region]) {
        m.store = EndStore::Whole;
      } else {
        m.store = q.deferEnds ? EndStore::Pending : EndStore::SecondHalf;
      }
      q.markers.push_back(m);
    }
    const auto& body = f.function->body;
    for (size_t i = 0; i < body.size(); ++i) {
      if (!isExit(body[i])) continue;
      // A callee's ret hands the state back to its caller; an exit ends the thread anywhere.
      if (!f.isKernel && body[i].instruction.baseOpcode() == "ret") {
        q.returns.push_back(i);
      } else if (q.compact) {
        q.exits.push_back(i);
      }
    }
    out.push_back(std::move(q));
  }
  return out;
}

// --- emission ------------------------------------------------------------------------------------

/// What the emission step counted, for the pass's statistics.
struct EmissionCounts {
  uint64_t markersLowered = 0;
  uint64_t recordSites = 0;
  uint64_t markersStripped = 0;
  uint64_t closingSites = 0;
  uint64_t lostSites = 0;
};

/// The emission step: writes the PTX of one kernel's placement (entry code, each marker's code,
/// the closing record) and splices it into the body; the text is what the placement decided and
/// nothing else.
class TraceEmitter {
 public:
  TraceEmitter(const LoweringOptions& options, const query::Scope& scope,
               const ptx::Function& kernel, const KernelFacts& facts, const TracePlacement& p,
               EmissionCounts& counts)
      : options_(options),
        scope_(scope),
        kernel_(kernel),
        facts_(facts),
        p_(p),
        counts_(counts),
        roleClause_(scope.clause(query::Coordinate::Role)),
        iterClause_(scope.clause(query::Coordinate::Iteration)),
        pendingMeta_(p.pendingInRegionMeta ? "%argus_m0" : "%argus_pm"),
        lostWord_(p.compact
                      ? fmt::format("[%argus_base+{}]", offsetof(trace::CompactRecord, iteration))
                      : fmt::format("[%argus_hdr+{}]", offsetof(trace::TraceHeader, dropped))) {}

  /// The kernel entry: registers, the header load, the slot and meta words, and what the
  /// placement needs set once (compact places, paired lanes, static scope clauses, lane 0).
  [[nodiscard]] std::string entry() const {
    std::string text = entryHeader();
    if (options_.overflow == Overflow::Clamp && !p_.compact)  // compact places have their own
      text += "\t.reg .b32 %argus_last;\n\tsub.u32 %argus_last, %argus_cap, 1;\n";
    if (p_.compact) text += compactEntry();
    if (p_.paired) text += pairedEntry();
    text += scopeEntry();
    if (p_.lostCounted) text += lostEntry();
    return text;
  }

  /// A marker's code: its begin or end of the region's record, as planned.
  [[nodiscard]] std::string marker(const MarkerPlan& m) {
    std::string text = m.site.begin ? beginCode(m) : endCode(m);
    if (!m.site.begin) ++counts_.recordSites;
    ++counts_.markersLowered;
    return text;
  }

  /// compact, before every ret/exit: the pending second half, the lanes' highest count and lane
  /// 0's closing record.
  [[nodiscard]] std::string closing() const;

  // The trace cell: the part of a warp's trace state that changes at records (the place, the
  // count, the pending second half) crosses a call to a traced callee in 32 bytes of the
  // calling thread's local memory, whose generic address the callee takes as its last
  // parameter (kCellParam). The kernel keeps the cell; each callee recomputes the unchanging
  // state (slot, meta, scope) at its entry as the kernel does. With the calling region's
  // iteration, meta word and role, for the callee's top-level regions to inherit.

  /// The kernel's cell, at its entry.
  [[nodiscard]] static std::string cellInKernel() {
    return fmt::format(
        "\t.local .align 8 .b8 __argus_cell[{}];\n\t.reg .b64 %argus_cp;\n"
        "\tmov.u64 %argus_cp, __argus_cell;\n\tcvta.local.u64 %argus_cp, %argus_cp;\n",
        kCellBytes);
  }
  /// A callee's cell address, from its parameter.
  [[nodiscard]] static std::string cellFromParam() {
    return fmt::format("\t.reg .b64 %argus_cp;\n\tld.param.u64 %argus_cp, [{}];\n", kCellParam);
  }
  /// Before a call taking the cell (or a callee's ret): the changing state into the cell and,
  /// for a call under region `q`, that region's iteration, meta word and role.
  [[nodiscard]] std::string saveState(std::optional<uint32_t> q) const {
    // The full layout's only changing state is the count.
    std::string text = fmt::format("\tst.u32 [%argus_cp+{}], %argus_cnt;\n", kCellCount);
    if (p_.compact)
      text = fmt::format(
          "\tst.u32 [%argus_cp+{}], %argus_plo;\n\tst.u32 [%argus_cp+{}], %argus_cnt;\n"
          "\tst.u32 [%argus_cp+{}], %argus_pe;\n",
          kCellPlace, kCellCount, kCellPending);
    if (p_.compact && pendingMeta_ == "%argus_pm")
      text += fmt::format("\tst.u32 [%argus_cp+{}], %argus_pm;\n", kCellPendingMeta);
    if (!q) return text;
    text +=
        fmt::format("\tst.u32 [%argus_cp+{}], %argus_i{};\n\tst.u32 [%argus_cp+{}], %argus_m{};\n",
                    kCellIteration, *q, kCellMeta, *q);
    if (p_.scoped && roleClause_)
      text += fmt::format(
          "\tselp.u32 %argus_t0, 1, 0, %argus_r{};\n\tst.u32 [%argus_cp+{}], %argus_t0;\n", *q,
          kCellRole);
    return text;
  }
  /// After a call taking the cell (and at a callee's entry): the changing state back.
  [[nodiscard]] std::string loadState() const {
    if (!p_.compact) return fmt::format("\tld.u32 %argus_cnt, [%argus_cp+{}];\n", kCellCount);
    std::string text = fmt::format(
        "\tld.u32 %argus_plo, [%argus_cp+{}];\n\tld.u32 %argus_cnt, [%argus_cp+{}];\n"
        "\tld.u32 %argus_pe, [%argus_cp+{}];\n",
        kCellPlace, kCellCount, kCellPending);
    if (pendingMeta_ == "%argus_pm")
      text += fmt::format("\tld.u32 %argus_pm, [%argus_cp+{}];\n", kCellPendingMeta);
    // The address of the place last taken (what placeAddress leaves there).
    return text + "\tmov.b64 %argus_addr, {%argus_plo, %argus_ph};\n";
  }
  /// At a callee's entry: its calling region's iteration, meta word and role.
  [[nodiscard]] std::string loadContext(uint32_t q) const {
    std::string text =
        fmt::format("\tld.u32 %argus_i{}, [%argus_cp+{}];\n\tld.u32 %argus_m{}, [%argus_cp+{}];\n",
                    q, kCellIteration, q, kCellMeta);
    if (p_.scoped && roleClause_)
      text += fmt::format(
          "\tld.u32 %argus_t0, [%argus_cp+{}];\n\tsetp.ne.u32 %argus_r{}, %argus_t0, 0;\n",
          kCellRole, q);
    return text;
  }

  /// The trace map the decoder needs (argus_trace_map 1): the kernel's emitter writes it, and
  /// each traced callee's markers are added with appendMarkers.
  [[nodiscard]] nlohmann::json traceMap() const;

  /// The trace map's marker rows of one function's sites (`function` named for a callee's).
  static void appendMarkers(nlohmann::json& list, const KernelFacts& facts,
                            const std::string& function) {
    for (const auto& [statement, site] : facts.sites) {
      nlohmann::json m = {{"region", site.region},
                          {"kind", site.begin ? "begin" : "end"},
                          {"ptx_line", site.site->ptx.line}};
      if (!function.empty()) m["function"] = function;
      if (!site.site->iteration.empty()) m["iteration"] = site.site->iteration;
      if (!site.site->role.empty()) m["role"] = site.site->role;
      list.push_back(std::move(m));
    }
  }

 private:
  const LoweringOptions& options_;
  const query::Scope& scope_;
  const ptx::Function& kernel_;
  const KernelFacts& facts_;
  const TracePlacement& p_;
  EmissionCounts& counts_;
  const query::Clause* roleClause_;
  const query::Clause* iterClause_;
  /// The pending second half's meta register: the only region's own when its meta is fixed (set
  /// once at entry), so that ptxas needs no copy at the end marker; else %argus_pm, copied there.
  std::string pendingMeta_;
  /// The lost count's word: place 0's second word (compact) or header.dropped (full).
  std::string lostWord_;

  static constexpr std::ptrdiff_t kPreviousEnd = static_cast<std::ptrdiff_t>(
      offsetof(trace::CompactRecord, end) - sizeof(trace::CompactRecord));

  [[nodiscard]] std::string entryHeader() const;
  [[nodiscard]] std::string compactEntry() const;
  [[nodiscard]] std::string pairedEntry() const;
  [[nodiscard]] std::string scopeEntry() const;
  [[nodiscard]] std::string lostEntry() const;
  [[nodiscard]] std::string beginCode(const MarkerPlan& m) const;
  [[nodiscard]] std::string beginScope(uint32_t k, const std::optional<uint32_t>& parent,
                                       const ptx::MarkerSite& site) const;
  [[nodiscard]] std::string endCode(const MarkerPlan& m);
  [[nodiscard]] std::string fullEnd(uint32_t k, const std::string& active) const;

  /// Tracing on and, when scoped, the occurrence selected (%argus_s<k>, set at the begin).
  [[nodiscard]] std::string active(uint32_t k) const {
    return p_.scoped ? fmt::format("%argus_s{}", k) : "%argus_on";
  }
  /// The predicate prefix of what only a recorded occurrence does (`active`, for scoped
  /// variants; unscoped, every occurrence is recorded while tracing is on).
  [[nodiscard]] std::string ifRecorded(const std::string& active) const {
    return p_.scoped ? "@" + active + " " : std::string();
  }
  /// The next place, min(previous + 16, last), taken only by an occurrence that is recorded;
  /// %argus_cnt counts the same occurrences unclamped.
  [[nodiscard]] std::string placeAddress(const std::string& active) const {
    return fmt::format(
        "\t{}add.u32 %argus_plo, %argus_plo, {};\n"
        "\tmin.u32 %argus_plo, %argus_plo, %argus_plast;\n"
        "\tmov.b64 %argus_addr, {{%argus_plo, %argus_ph}};\n",
        ifRecorded(active), sizeof(trace::CompactRecord));
  }
  [[nodiscard]] std::string placeCount(const std::string& active) const {
    return fmt::format("\t{}add.u32 %argus_cnt, %argus_cnt, 1;\n", ifRecorded(active));
  }
  /// The compact layout's storing lanes: lane 0 with tracing on (%argus_w) and, when scoped, the
  /// occurrence selected; `text` gets the line that sets %argus_st for a scoped variant.
  [[nodiscard]] std::string_view compactStorer(const std::string& active, std::string& text) const {
    if (!p_.scoped) return "%argus_w";
    text += fmt::format("\tand.pred %argus_st, {}, %argus_w;\n", active);
    return "%argus_st";
  }
  /// deferEnds: the warp's previous record's second half, {end, meta} (pending since its end
  /// marker), stored `at` bytes from %argus_addr: at the place just taken - 8 (the previous
  /// place's second half, or place 0's for the warp's first place), or at an exit at the last
  /// place + 8.
  [[nodiscard]] std::string storePending(std::string_view by, std::ptrdiff_t at) const {
    return fmt::format("\t@{} st.global.{}.v2.u32 [%argus_addr+{}], {{%argus_pe, {}}};\n", by,
                       options_.storeCache, at, pendingMeta_);
  }
  /// The pending half changes only with a recorded occurrence (scoped: the one selected).
  [[nodiscard]] std::string pendingMetaCopy(uint32_t k, const std::string& active) const {
    if (pendingMeta_ != "%argus_pm") return std::string();
    return fmt::format("\t{}mov.b32 %argus_pm, %argus_m{};\n", ifRecorded(active), k);
  }
  /// Begin marker of a region in beginsNoted: whether lane 0 runs it with this lane.
  [[nodiscard]] static std::string noteBegin(uint32_t k) {
    return fmt::format(
        "\tactivemask.b32 %argus_am;\n"
        "\tand.b32 %argus_am, %argus_am, 1;\n"
        "\tsetp.ne.u32 %argus_z{}, %argus_am, 0;\n",
        k);
  }
  [[nodiscard]] std::string countLost(uint32_t k, const std::string& active, std::string_view end);
};

std::string TraceEmitter::entryHeader() const {
  const size_t n = p_.regionCount;
  std::string entry;
  entry += fmt::format("\t// argus trace: kernel entry ({} regions, time base {}{})\n", n,
                       timeBaseName(options_.timeBase),
                       p_.scoped ? ", scope " + scope_.canonical() : "");
  entry +=
      "\t.reg .b64 %argus_hdr;\n\t.reg .b64 %argus_base;\n\t.reg .b64 %argus_addr;\n"
      "\t.reg .b64 %argus_now;\n\t.reg .b64 %argus_x;\n\t.reg .b32 %argus_cap;\n"
      "\t.reg .b32 %argus_cnt;\n\t.reg .b32 %argus_warp;\n\t.reg .b32 %argus_cta;\n"
      "\t.reg .b32 %argus_meta;\n\t.reg .b32 %argus_t<4>;\n\t.reg .pred %argus_on;\n"
      "\t.reg .pred %argus_lead;\n\t.reg .pred %argus_ok;\n\t.reg .pred %argus_st;\n"
      "\t.reg .pred %argus_ov;\n\t.reg .pred %argus_c;\n";
  entry += fmt::format(
      "\t.reg .b64 %argus_b<{}>;\n\t.reg .b32 %argus_m<{}>;\n"
      "\t.reg .b32 %argus_i<{}>;\n",
      n, n, n);
  if (p_.scoped) entry += fmt::format("\t.reg .pred %argus_s<{}>;\n", n);
  if (roleClause_) entry += fmt::format("\t.reg .pred %argus_r<{}>;\n", n);
  entry += fmt::format(
      "\tmov.u32 %argus_cap, 0;\n"
      "\tmov.u32 %argus_t0, 0;\n"
      "\tmov.u32 %argus_cnt, 0;\n"
      // Through the symbol's generic address: an asynchronous load issued among the entry's
      // first instructions, whose miss overlaps the program's own start (instruction fetch,
      // kernel-parameter constants). Read as a constant operand (ld.const), ptxas makes it a
      // uniform-datapath load that stops the warp until the constant-cache miss is served:
      // 0.3-0.38 us per launch of the seed kernels on the H200, by Nsight Compute's stall
      // samples (experiments/HISTORY.md, issue 5, fifteenth session).
      "\tmov.u64 %argus_x, {};\n"
      "\tcvta.const.u64 %argus_x, %argus_x;\n"
      "\tld.v2.u64 {{%argus_hdr, %argus_x}}, [%argus_x];\n"
      "\tsetp.ne.u64 %argus_on, %argus_hdr, 0;\n"
      "\tcvt.u32.u64 %argus_cap, %argus_x;\n"
      "\tshr.u64 %argus_x, %argus_x, 32;\n"
      "\tcvt.u32.u64 %argus_t0, %argus_x;\n"
      "\tmov.u32 %argus_t1, %tid.z;\n"
      "\tmov.u32 %argus_t2, %ntid.y;\n"
      "\tmov.u32 %argus_t3, %tid.y;\n"
      "\tmad.lo.u32 %argus_t1, %argus_t1, %argus_t2, %argus_t3;\n"
      "\tmov.u32 %argus_t2, %ntid.x;\n"
      "\tmov.u32 %argus_t3, %tid.x;\n"
      "\tmad.lo.u32 %argus_t1, %argus_t1, %argus_t2, %argus_t3;\n"
      "\tshr.u32 %argus_warp, %argus_t1, 5;\n"
      "\tmov.u32 %argus_t1, %ctaid.z;\n"
      "\tmov.u32 %argus_t2, %nctaid.y;\n"
      "\tmov.u32 %argus_t3, %ctaid.y;\n"
      "\tmad.lo.u32 %argus_t1, %argus_t1, %argus_t2, %argus_t3;\n"
      "\tmov.u32 %argus_t2, %nctaid.x;\n"
      "\tmov.u32 %argus_t3, %ctaid.x;\n"
      "\tmad.lo.u32 %argus_cta, %argus_t1, %argus_t2, %argus_t3;\n"
      "\tmad.lo.u32 %argus_t1, %argus_cta, %argus_t0, %argus_warp;\n"
      "\tmul.wide.u32 %argus_x, %argus_t1, %argus_cap;\n"
      "\tshl.b64 %argus_x, %argus_x, 5;\n"
      "\tadd.s64 %argus_base, %argus_hdr, %argus_x;\n"
      "\tadd.s64 %argus_base, %argus_base, {};\n"
      "\tmov.u32 %argus_t0, %smid;\n"
      "\tand.b32 %argus_meta, %argus_t0, 255;\n"
      "\tor.b32 %argus_meta, %argus_meta, {:#x};\n",
      trace::kTraceSymbol, sizeof(trace::TraceHeader), trace::kValidBit);
  return entry;
}

std::string TraceEmitter::compactEntry() const {
  const size_t n = p_.regionCount;
  // Places of 16 bytes (format.h kLayoutCountFirst): the highest count of any lane and the
  // lost count in place 0, records in 1 .. 2 cap - 2 (the record index of the last,
  // 2 cap - 3, in %argus_l16; later ones all go to it), the closing record in 2 cap - 1 (the
  // injection library makes cap at least 2). The begin-timestamp and iteration copies and
  // the pending second half start defined.
  // A record's place is kept as the low 32 bits of its address, %argus_plo (the previous
  // place, so place 0 at the start), up to %argus_plast (the last record place); the high
  // 32 bits, %argus_ph, are the same for the whole slot because the injection library puts
  // the buffer in one 4 GiB-aligned window (kLayoutWindowed). Taking a place is then one
  // fused add-and-clamp (VIADDMNMX on sm_90) instead of a clamp and a 64-bit multiply-add (3
  // SASS instructions: clamp, LEA, LEA.HI.X), and the address register pair needs no move.
  // %argus_addr starts at place 0, where an exit before any place stores the pending half.
  // The stores below write the fields at these offsets (format.h, kLayoutHalves).
  static_assert(offsetof(trace::CompactRecord, begin) == 0 &&
                offsetof(trace::CompactRecord, iteration) == 4 &&
                offsetof(trace::CompactRecord, end) == 8 &&
                offsetof(trace::CompactRecord, meta) == 12);
  std::string entry = fmt::format(
      "\t.reg .b32 %argus_l16;\n\t.reg .b32 %argus_e;\n\t.reg .b32 %argus_bs;\n"
      "\t.reg .b32 %argus_ic;\n\t.reg .b32 %argus_h<{0}>;\n"
      "\t.reg .b32 %argus_plo;\n\t.reg .b32 %argus_ph;\n\t.reg .b32 %argus_plast;\n"
      "\t.reg .b64 %argus_ca;\n\t.reg .b32 %argus_pe;\n"
      "\tshl.b32 %argus_l16, %argus_cap, 1;\n\tsub.u32 %argus_l16, %argus_l16, 3;\n"
      "\tmov.b64 {{%argus_plo, %argus_ph}}, %argus_base;\n"
      "\tmov.b64 %argus_addr, %argus_base;\n"
      "\tadd.u32 %argus_t3, %argus_l16, 1;\n"
      "\tmad.lo.u32 %argus_plast, %argus_t3, {1}, %argus_plo;\n"
      "\tmov.u32 %argus_pe, 0;\n"
      // A slot needs 4 places (the library gives compact kernels a capacity of 2 at least):
      // with fewer the clamp would not hold, so nothing is traced.
      "\tsetp.gt.and.u32 %argus_on, %argus_cap, 1, %argus_on;\n"
      "\tmov.u32 %argus_bs, 0;\n\tmov.u32 %argus_ic, 0;\n",
      n, sizeof(trace::CompactRecord));
  for (uint32_t k = 0; k < n; ++k)
    entry += fmt::format("\tmov.u32 %argus_h{0}, 0;\n\tmov.u32 %argus_i{0}, 0;\n", k);
  // Regions whose meta word is the same at every occurrence: computed once here instead of at
  // every begin marker.
  for (uint32_t k = 0; k < n; ++k)
    if (p_.fixedRole[k])
      entry += fmt::format("\tor.b32 %argus_m{}, %argus_meta, {:#x};\n", k,
                           (k << 16) | (*p_.fixedRole[k] << 12));
  if (!p_.pendingInRegionMeta) entry += "\t.reg .b32 %argus_pm;\n\tmov.u32 %argus_pm, 0;\n";
  return entry;
}

std::string TraceEmitter::pairedEntry() const {
  // Lane 0 writes bytes 0..15 of a record, lane 1 bytes 16..31 (offset in %argus_loff).
  return "\t.reg .b32 %argus_lane;\n\t.reg .b64 %argus_loff;\n\t.reg .b64 %argus_a2;\n"
         "\t.reg .b32 %argus_h<4>;\n\t.reg .b32 %argus_d<4>;\n\t.reg .pred %argus_l0;\n"
         "\t.reg .pred %argus_pl;\n\t.reg .pred %argus_full;\n"
         "\tmov.u32 %argus_lane, %laneid;\n"
         "\tsetp.eq.u32 %argus_l0, %argus_lane, 0;\n"
         "\tsetp.lt.u32 %argus_pl, %argus_lane, 2;\n"
         "\tmin.u32 %argus_t1, %argus_lane, 1;\n"
         "\tmul.wide.u32 %argus_loff, %argus_t1, 16;\n";
}

std::string TraceEmitter::scopeEntry() const {
  std::string entry;
  // Static scope clauses: the same for every occurrence of this thread.
  auto staticClause = [&](query::Coordinate c, std::string_view value) {
    const query::Clause* clause = scope_.clause(c);
    if (clause == nullptr) return;
    emitInSet(entry, value, clause->ranges, "%argus_c");
    entry += "\tand.pred %argus_on, %argus_on, %argus_c;\n";
  };
  staticClause(query::Coordinate::Sm, "%argus_t0");
  staticClause(query::Coordinate::Cta, "%argus_cta");
  staticClause(query::Coordinate::Warp, "%argus_warp");
  if (scope_.clause(query::Coordinate::Warpgroup) != nullptr) {
    entry += "\tshr.u32 %argus_t2, %argus_warp, 2;\n";
    staticClause(query::Coordinate::Warpgroup, "%argus_t2");
  }
  // Lane 0 stores the warp's records, with its own count (%argus_w: lane 0 and tracing on),
  // except record_store=paired. Not the lane elected at each end marker: when only some lanes
  // run a marker (one thread issuing TMA loads) the lanes' counts part, and a lane elected
  // among others stores with a count lane 0's records also use (measured on the H200 with the
  // warp-specialized example: 16 of 256 tma_load records overwritten). Records of markers lane
  // 0 does not run are lost, and counted (countLost below; the compact layout's exits also
  // compare the lanes' counts with lane 0's, closing record below).
  if (!p_.paired)
    entry +=
        "\t.reg .pred %argus_w;\n\tmov.u32 %argus_t1, %laneid;\n"
        "\tsetp.eq.and.u32 %argus_w, %argus_t1, 0, %argus_on;\n";
  // `launch` is selected on the host (which launches get a buffer), so it is always true here.
  return entry;
}

// Lane 0 stores the records, so an occurrence a warp begins without lane 0 (in one pass of a
// diverged warp) writes none. A pass without lane 0 at an end marker is not enough to tell:
// lanes that began the occurrence with lane 0 and parted inside it (lanes 1-31 leaving a
// producer region while lane 0 issues TMA loads) end it apart, yet lane 0's record holds it
// (measured on the H200 with the warp-specialized example: 16 such passes counted as lost
// before, 64 of 64 producer occurrences recorded). So at the begin markers of the regions
// with such end markers each lane keeps %argus_z<k>: lane 0 ran this begin with it. At the
// end markers a warp may run without lane 0 (ptx::blocksWithoutLaneZero) the lowest running
// lane that began without lane 0 adds 1 to a lost count: the slot's lost word (compact: the
// second word of place 0, which the expansion reports as lost records) or
// header.dropped (full). Other end markers run with lane 0 whenever they run and count
// nothing. %argus_le: the lane's own bit (%lanemask_eq), read once.
std::string TraceEmitter::lostEntry() const {
  const size_t n = p_.regionCount;
  std::string entry = fmt::format(
      "\t.reg .b32 %argus_le;\n\t.reg .b32 %argus_am;\n\t.reg .pred %argus_sd;\n"
      "\t.reg .pred %argus_z<{}>;\n\tmov.u32 %argus_le, %lanemask_eq;\n",
      n);
  // Defined before any begin marker (an end marker reached without its begin counts nothing).
  for (uint32_t k = 0; k < n; ++k)
    if (p_.beginsNoted[k]) entry += fmt::format("\tsetp.eq.u32 %argus_z{}, 0, 0;\n", k);
  if (p_.compact && options_.parted == Parted::Record) entry += "\t.reg .b64 %argus_pa;\n";
  return entry;
}

// End marker: the running lanes that began region k without lane 0 (a ballot; lane 0 is never
// among them), and the lowest of them counts one lost occurrence (`active`: tracing on and,
// when scoped, the occurrence selected).
// With parted=record that lane takes the count's old value n and stores the record (the
// compact end marker's registers, which its own begin set, the end timestamp in `end`) at
// place 2 cap - 2 - min(n, 2 cap - 3): lane 0's places count up from 1, these down from the
// last record place, and the expansion leaves out the places both may have written.
std::string TraceEmitter::countLost(uint32_t k, const std::string& active, std::string_view end) {
  ++counts_.lostSites;
  std::string text = fmt::format(
      "\tactivemask.b32 %argus_am;\n"
      "\tvote.sync.ballot.b32 %argus_t0, !%argus_z{0}, %argus_am;\n"
      "\tneg.s32 %argus_am, %argus_t0;\n"
      "\tand.b32 %argus_t0, %argus_t0, %argus_am;\n"
      "\tsetp.eq.and.u32 %argus_sd, %argus_t0, %argus_le, {1};\n",
      k, active);
  if (options_.parted != Parted::Record)
    return text + fmt::format("\t@%argus_sd red.global.add.{} {}, 1;\n", p_.compact ? "u32" : "u64",
                              lostWord_);
  return text + fmt::format(
                    "\t@%argus_sd atom.global.add.u32 %argus_t0, {0}, 1;\n"
                    "\tmin.u32 %argus_t0, %argus_t0, %argus_l16;\n"
                    "\tsub.u32 %argus_t0, %argus_l16, %argus_t0;\n"
                    "\tmad.wide.u32 %argus_pa, %argus_t0, {1}, %argus_base;\n"
                    "\t@%argus_sd st.global.{2}.v4.u32 [%argus_pa+{1}], {{%argus_h{3}, "
                    "%argus_i{3}, {4}, %argus_m{3}}};\n",
                    lostWord_, sizeof(trace::CompactRecord), options_.storeCache, k, end);
}

std::string TraceEmitter::beginCode(const MarkerPlan& m) const {
  const uint32_t k = m.site.region;
  const auto& region = facts_.regions()[k];
  const std::optional<uint32_t> parent = region.parent;
  const ptx::MarkerSite& site = *m.site.site;
  std::string text = fmt::format("\t// argus trace: begin {} (region {})\n", region.path, k);
  if (auto src = facts_.iterations.find(m.statement); src != facts_.iterations.end()) {
    // Compact layout: a register iteration is copied under %argus_on, so that ptxas keeps
    // the copy in a register of its own instead of coalescing it with the program's loop
    // counter. Coalesced, the end marker's copy reads the counter, which pins the
    // program's increment and loop test below the record's store: measured on the seed
    // kernel's SASS, 11 more stall cycles per occurrence (the test's 13-cycle latency to
    // its branch no longer overlapped); copied apart, ptxas hoists them to the loop's top
    // as in the trace-free build (experiments/HISTORY.md, issue 5, twelfth session).
    const bool apart = p_.compact && src->second.operand.starts_with('%');
    text += fmt::format("\t{}{} %argus_i{}, {};\n", apart ? "@%argus_on " : "",
                        src->second.instruction, k, src->second.operand);
  } else if (parent) {
    text += fmt::format("\tmov.b32 %argus_i{}, %argus_i{};\n", k, *parent);
  } else {
    text += fmt::format("\tmov.b32 %argus_i{}, {:#x};\n", k, trace::kNoIteration);
  }
  const bool ownRole = !site.role.empty();
  if (p_.fixedRole[k]) {
    // computed at the kernel's entry
  } else if (ownRole || !parent) {
    const uint32_t role = ownRole ? facts_.roleIndex(site.role) : trace::kNoRole;
    text += fmt::format("\tor.b32 %argus_m{}, %argus_meta, {:#x};\n", k, (k << 16) | (role << 12));
  } else {
    // Same role as the enclosing region: replace only the region index bits.
    text += fmt::format("\tbfi.b32 %argus_m{}, {}, %argus_m{}, 16, 12;\n", k, k, *parent);
  }
  if (p_.scoped) text += beginScope(k, parent, site);
  if (m.notesBegin) text += noteBegin(k);
  if (!p_.compact) {
    text += fmt::format("\tmov.u64 %argus_b{}, %{};\n", k, timeBaseName(options_.timeBase));
    return text;
  }
  text += fmt::format("\tmov.u32 %argus_h{}, %{};\n", k, timeBaseLow(options_.timeBase));
  if (m.takesPlace) {
    // The record's first half, {begin, iteration}, is stored here, where the warp waits
    // for the program's own next operands anyway; the end marker stores the second half
    // and needs no copies (format.h, kLayoutHalves).
    const std::string act = active(k);
    text += placeAddress(act) + placeCount(act);
    const std::string_view by = compactStorer(act, text);
    if (p_.deferEnds) text += storePending(by, kPreviousEnd);
    text += fmt::format(
        "\t@{0} st.global.{1}.v2.u32 [%argus_addr], {{%argus_h{2}, "
        "%argus_i{2}}};\n",
        by, options_.storeCache, k);
  }
  return text;
}

/// A scoped variant's begin marker: whether this occurrence is selected (%argus_s<k>), by the
/// role and iteration clauses.
std::string TraceEmitter::beginScope(uint32_t k, const std::optional<uint32_t>& parent,
                                     const ptx::MarkerSite& site) const {
  std::string text = fmt::format("\tmov.pred %argus_s{}, %argus_on;\n", k);
  if (roleClause_) {
    if (!site.role.empty()) {
      text +=
          fmt::format("\tmov.pred %argus_r{}, {};\n", k, roleClause_->contains(site.role) ? 1 : 0);
    } else if (parent) {
      text += fmt::format("\tmov.pred %argus_r{}, %argus_r{};\n", k, *parent);
    } else {
      text += fmt::format("\tmov.pred %argus_r{}, 0;\n", k);
    }
    text += fmt::format("\tand.pred %argus_s{}, %argus_s{}, %argus_r{};\n", k, k, k);
  }
  if (iterClause_) {
    emitInSet(text, fmt::format("%argus_i{}", k), iterClause_->ranges, "%argus_c");
    text += fmt::format("\tand.pred %argus_s{}, %argus_s{}, %argus_c;\n", k, k);
  }
  return text;
}

std::string TraceEmitter::endCode(const MarkerPlan& m) {
  const uint32_t k = m.site.region;
  const std::string act = active(k);
  std::string text =
      fmt::format("\t// argus trace: end {} (region {})\n", facts_.regions()[k].path, k);
  switch (m.store) {
    case EndStore::Pending:
      // The second half, {end, meta}, kept for the warp's next place or exit to store.
      text += fmt::format("\t{}mov.u32 %argus_pe, %{};\n", ifRecorded(act),
                          timeBaseLow(options_.timeBase));
      text += pendingMetaCopy(k, act);
      if (m.countsLost) text += countLost(k, act, "%argus_pe");
      break;
    case EndStore::SecondHalf: {
      // The second half, {end, meta}, at the place the begin marker took and stored the
      // first half at (a leaf: no other marker runs between the two).
      text += fmt::format("\tmov.u32 %argus_e, %{};\n", timeBaseLow(options_.timeBase));
      const std::string_view by = compactStorer(act, text);
      text +=
          fmt::format("\t@{0} st.global.{1}.v2.u32 [%argus_addr+{2}], {{%argus_e, %argus_m{3}}};\n",
                      by, options_.storeCache, offsetof(trace::CompactRecord, end), k);
      if (m.countsLost) text += countLost(k, act, "%argus_e");
      break;
    }
    case EndStore::Whole: {
      // A region with regions inside, whose place is taken here. The stored begin timestamp
      // and iteration are copies made here, predicated: registers of their own, which the
      // next begin marker's timer read and the program's loop counter do not overwrite right
      // after the store (ptxas would make them wait for the store's register reads). The
      // place is the previous one + 16, clamped to the last record place (the expansion
      // drops what the clamp overwrote): no compare between the end timestamp and the store.
      text += fmt::format(
          "\tmov.u32 %argus_e, %{0};\n"
          "\t@{1} mov.u32 %argus_bs, %argus_h{2};\n"
          "\t@{1} mov.u32 %argus_ic, %argus_i{2};\n",
          timeBaseLow(options_.timeBase), act, k);
      text += placeAddress(act);
      const std::string_view by = compactStorer(act, text);
      text += placeCount(act);
      if (p_.deferEnds) text += storePending(by, kPreviousEnd);
      text += fmt::format(
          "\t@{0} st.global.{1}.v4.u32 [%argus_addr], {{%argus_bs, %argus_ic, %argus_e, "
          "%argus_m{2}}};\n",
          by, options_.storeCache, k);
      if (p_.deferEnds) {
        // The next place's store of the pending half then writes this one's again.
        text += fmt::format("\t{}mov.u32 %argus_pe, %argus_e;\n", ifRecorded(act));
        text += pendingMetaCopy(k, act);
      }
      if (m.countsLost) text += countLost(k, act, "%argus_e");
      break;
    }
    case EndStore::Full:
      text += fullEnd(k, act);
      if (m.countsLost) text += countLost(k, act, "%argus_e");
      break;
  }
  return text;
}

/// The full layout's end marker: the end timestamp, and the 32-byte record stored by lane 0
/// (or, paired, by lanes 0 and 1), clamped or counted by the overflow option.
std::string TraceEmitter::fullEnd(uint32_t k, const std::string& active) const {
  std::string text = fmt::format("\tmov.u64 %argus_now, %{};\n", timeBaseName(options_.timeBase));
  // The storing lane: lane 0, or for paired stores the elected one.
  const std::string_view storer = p_.paired ? "%argus_lead" : "%argus_w";
  if (p_.paired) text += electLeader(p_.elect);
  if (options_.overflow != Overflow::Clamp) {
    return text + fmt::format(
                      "\tsetp.lt.and.u32 %argus_ok, %argus_cnt, %argus_cap, {0};\n"
                      "\tsetp.ge.and.u32 %argus_ov, %argus_cnt, %argus_cap, {0};\n"
                      "\tand.pred %argus_st, %argus_ok, {5};\n"
                      "\tand.pred %argus_ov, %argus_ov, {5};\n"
                      "\tmad.wide.u32 %argus_addr, %argus_cnt, {1}, %argus_base;\n"
                      "\t@%argus_st st.global.{2}.v2.u64 [%argus_addr], {{%argus_b{3}, "
                      "%argus_now}};\n"
                      "\t@%argus_st st.global.{2}.v4.u32 [%argus_addr+16], {{%argus_m{3}, "
                      "%argus_cta, %argus_i{3}, %argus_warp}};\n"
                      "\t@%argus_ok add.u32 %argus_cnt, %argus_cnt, 1;\n"
                      "\t@%argus_ov red.global.add.u64 [%argus_hdr+{4}], 1;\n",
                      active, sizeof(trace::TraceRecord), options_.storeCache, k,
                      offsetof(trace::TraceHeader, dropped), storer);
  }
  // Branch-free: clamp the slot, tag the record with its sequence number, always count.
  text += fmt::format("\tand.pred %argus_st, {}, {};\n", active, storer);
  if (p_.paired) {
    // Converged warp: lanes 0 and 1 write one half each (below); the leader's two
    // stores remain for a diverged warp.
    text += fmt::format(
        "\tsetp.eq.and.u32 %argus_full, %argus_t0, -1, {0};\n"
        "\tnot.pred %argus_c, %argus_full;\n"
        "\tand.pred %argus_st, %argus_st, %argus_c;\n"
        "\tand.pred %argus_c, %argus_full, %argus_pl;\n",
        active);
  }
  text += fmt::format(
      "\tmin.u32 %argus_t1, %argus_cnt, %argus_last;\n"
      "\tmad.wide.u32 %argus_addr, %argus_t1, {0}, %argus_base;\n"
      "\tshl.b32 %argus_t2, %argus_cnt, 8;\n"
      "\tor.b32 %argus_t2, %argus_t2, %argus_warp;\n",
      sizeof(trace::TraceRecord));
  if (p_.paired) {
    // One store instruction: each of lanes 0 and 1 selects its half of the record.
    text += fmt::format(
        "\tmov.b64 {{%argus_h0, %argus_h1}}, %argus_b{1};\n"
        "\tmov.b64 {{%argus_h2, %argus_h3}}, %argus_now;\n"
        "\tselp.b32 %argus_d0, %argus_h0, %argus_m{1}, %argus_l0;\n"
        "\tselp.b32 %argus_d1, %argus_h1, %argus_cta, %argus_l0;\n"
        "\tselp.b32 %argus_d2, %argus_h2, %argus_i{1}, %argus_l0;\n"
        "\tselp.b32 %argus_d3, %argus_h3, %argus_t2, %argus_l0;\n"
        "\tadd.s64 %argus_a2, %argus_addr, %argus_loff;\n"
        "\t@%argus_c st.global.{0}.v4.u32 [%argus_a2], {{%argus_d0, %argus_d1, "
        "%argus_d2, %argus_d3}};\n",
        options_.storeCache, k);
  }
  text += fmt::format(
      "\t@%argus_st st.global.{1}.v2.u64 [%argus_addr], {{%argus_b{2}, %argus_now}};\n"
      "\t@%argus_st st.global.{1}.v4.u32 [%argus_addr+16], {{%argus_m{2}, %argus_cta, "
      "%argus_i{2}, %argus_t2}};\n"
      "\t@{0} add.u32 %argus_cnt, %argus_cnt, 1;\n",
      active, options_.storeCache, k);
  return text;
}

// compact: before every ret/exit (deferEnds: after the pending second half, at the last
// place taken + 8), the highest count of the lanes leaving there into place 0 (red.max:
// exits of other lanes may come later), and lane 0's closing record in the slot's last
// place, 2 cap - 1: its record count and a whole timestamp (low, high: format.h). A highest
// count above lane 0's means lanes ran markers lane 0 did not run: the expansion reports
// those records as lost, as it does the passes without lane 0 that the kernel's
// lost-counting end markers counted (place 0's second word). Its address register is its
// own, %argus_ca: a ret a region is open on along some paths only (analyzeRegions warns of
// those) must not move a leaf's place before its end marker.
std::string TraceEmitter::closing() const {
  std::string text = "\t// argus trace: closing record\n";
  if (p_.deferEnds) text += storePending("%argus_w", offsetof(trace::CompactRecord, end));
  text += fmt::format(
      "\t@%argus_on red.global.max.u32 [%argus_base], %argus_cnt;\n"
      "\tmov.b64 %argus_ca, {{%argus_plast, %argus_ph}};\n"
      "\tmov.u64 %argus_now, %{0};\n"
      "\tmov.b64 {{%argus_t1, %argus_t2}}, %argus_now;\n"
      "\tor.b32 %argus_t0, %argus_meta, {2:#x};\n"
      "\t@%argus_w st.global.{3}.v4.u32 [%argus_ca+{1}], {{%argus_cnt, "
      "%argus_t1, %argus_t2, %argus_t0}};\n",
      timeBaseName(options_.timeBase), sizeof(trace::CompactRecord),
      trace::kClosingBit | (p_.deferEnds ? trace::kClosingPendingBit : 0), options_.storeCache);
  return text;
}

nlohmann::json TraceEmitter::traceMap() const {
  const auto& regions = facts_.regions();
  nlohmann::json map;
  map["argus_trace_map"] = 1;
  map["kernel"] = kernel_.name;
  map["time_base"] = timeBaseName(options_.timeBase);
  map["capacity_hint"] = options_.capacityHint;
  map["overflow"] = LoweringOptions::name("overflow", options_.overflow);
  map["record_store"] = LoweringOptions::name("record_store", options_.recordStore);
  map["record_layout"] = LoweringOptions::name("record_layout", options_.recordLayout);
  map["parted"] = LoweringOptions::name("parted", options_.parted);
  if (auto shape = options_.blocks.find(kernel_.name); shape != options_.blocks.end())
    map["block"] = shape->second;
  nlohmann::json regionList = nlohmann::json::array();
  for (uint32_t k = 0; k < regions.size(); ++k) {
    nlohmann::json r = {{"index", k}, {"id", regions[k].id}, {"path", regions[k].path}};
    r["parent"] = regions[k].parent ? nlohmann::json(*regions[k].parent) : nlohmann::json();
    regionList.push_back(std::move(r));
  }
  map["regions"] = std::move(regionList);
  map["roles"] = facts_.roles;
  map["scope"] = scope_.canonical();
  map["markers"] = nlohmann::json::array();
  appendMarkers(map["markers"], facts_, "");
  return map;
}

/// What spliceTrace writes into one function's body.
struct Splice {
  std::string entry;                      ///< After the leading declarations.
  std::map<size_t, std::string> markers;  ///< Marker statement -> its code (others removed).
  std::map<size_t, std::string> before;   ///< Statement -> code before it (closing records,
                                          ///< the cell's state before calls and rets).
  std::map<size_t, std::string> after;    ///< Statement -> code after it (state after calls).
};

/// Rebuilds the body: the entry code after the leading declarations, each traced marker (with
/// its inline-asm wrapper) replaced by its code, every other marker removed, the code planned
/// before and after statements around them.
Result<void> spliceTrace(ptx::Function& function, const std::string& target, const Splice& splice,
                         EmissionCounts& counts) {
  auto parse = [&](const std::string& text) { return parseSnippet(text, target, kPassName); };
  auto entryStatements = parse(splice.entry);
  if (!entryStatements) return std::unexpected(entryStatements.error());
  std::vector<Statement>& body = function.body;
  std::vector<Statement> out;
  out.reserve(body.size() + entryStatements->size() + splice.markers.size() * 12);
  size_t entryAt = 0;
  while (entryAt < body.size() && body[entryAt].kind == Statement::Kind::Variable) ++entryAt;
  std::map<size_t, size_t> spanAt;  // first statement of a marker's span -> the marker
  for (size_t i = 0; i < body.size(); ++i) {
    if (markers::isMarker(body[i])) spanAt[markers::markerSpan(body, i).first] = i;
  }
  auto insert = [&](const std::map<size_t, std::string>& at, size_t i) -> Result<void> {
    auto it = at.find(i);
    if (it == at.end()) return {};
    auto statements = parse(it->second);
    if (!statements) return std::unexpected(statements.error());
    for (auto& s : *statements) out.push_back(std::move(s));
    return {};
  };
  for (size_t i = 0; i <= body.size();) {
    if (i == entryAt) {
      for (auto& s : *entryStatements) out.push_back(std::move(s));
    }
    if (i == body.size()) break;
    auto span = spanAt.find(i);
    if (span == spanAt.end()) {
      // Also before a guarded exit: when it is not taken, a later closing record rewrites the
      // same place.
      if (auto ok = insert(splice.before, i); !ok) return ok;
      out.push_back(std::move(body[i]));
      if (auto ok = insert(splice.after, i); !ok) return ok;
      ++i;
      continue;
    }
    const size_t marker = span->second;
    if (splice.markers.contains(marker)) {
      if (auto ok = insert(splice.markers, marker); !ok) return ok;
    } else {
      ++counts.markersStripped;
    }
    i = markers::markerSpan(body, marker).last + 1;
  }
  body = std::move(out);
  return {};
}

/// The call's argument list (`(param0, ...)`), made when the call has none.
ptx::Operand& callArguments(ptx::Instruction& call) {
  auto& ops = call.operands;
  size_t target = 0;
  while (target < ops.size() && ops[target].kind == ptx::Operand::Kind::Vector) ++target;
  const size_t at = target + 1;
  if (at < ops.size() && ops[at].kind == ptx::Operand::Kind::Vector && ops[at].text == "(")
    return ops[at];
  ptx::Operand list;
  list.kind = ptx::Operand::Kind::Vector;
  list.text = "(";
  return *ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(std::min(at, ops.size())),
                     std::move(list));
}

/// Passes the cell at call statement `i`: a `.param` of its own (declared and set before the
/// call, in `before`) as the call's last argument.
void passCell(ptx::Function& function, size_t i, std::map<size_t, std::string>& before) {
  const std::string name = fmt::format("__argus_cpa{}", i);
  before[i] += fmt::format("\t.param .b64 {0};\n\tst.param.b64 [{0}], %argus_cp;\n", name);
  ptx::Operand arg;
  arg.kind = ptx::Operand::Kind::Symbol;
  arg.text = name;
  callArguments(function.body[i].instruction).elements.push_back(std::move(arg));
}

class LowerMarkersToTracePass final : public Pass {
 public:
  std::string_view name() const override { return kPassName; }
  std::string_view description() const override {
    return "lower region markers of the instrumented kernel(s) to per-warp trace records";
  }

  Result<void> run(ptx::Module& module, const TransformOptions& options,
                   TransformResult& result) override {
    auto opts = LoweringOptions::parse(options.config);
    if (!opts) return std::unexpected(opts.error());
    options_ = *opts;
    scope_ = options.scope;
    target_ = module.target();
    fileName_ = module.fileName;
    ptxVersion_ = module.version();

    // Derived regions' trip counters become code in the kernels traced (the others lose them
    // with their markers).
    tripCounters_ += ptx::lowerTripCounters(module, options.kernel);

    auto analysis = ptx::analyzeRegions(module);
    if (!analysis) return std::unexpected(analysis.error());
    // Own trees first (a traced callee's sites are in its own), then the kernels' composed ones.
    std::vector<ptx::FunctionRegions> own = *analysis;
    auto composed = ptx::composeCalleeRegions(module, *analysis);
    if (!composed) return std::unexpected(composed.error());
    // A function with regions is traced under one calling region of one kernel: where a traced
    // kernel reaches one under several, every shared callee gets a copy per calling region
    // first (clone_shared_callees), as the mapping variant does.
    const bool calleesTraced = std::ranges::any_of(*composed, [&](const auto& entry) {
      return !entry.second.instances.empty() &&
             (options.kernel.empty() || entry.first == options.kernel);
    });
    for (const auto& [kernel, callees] : *composed) {
      if (callees.skipped.empty() || (!options.kernel.empty() && kernel != options.kernel))
        continue;
      // The composition's warning about that function (it names it in backquotes).
      const auto& warnings = functionRegions(*analysis, kernel).warnings;
      const std::string named = "`" + callees.skipped.front() + "`";
      const auto warning = std::ranges::find_if(
          warnings, [&](const ptx::RegionWarning& w) { return w.message.starts_with(named); });
      const auto& why = (warning != warnings.end() ? *warning : warnings.back()).message;
      return fail("passes", fmt::format("{}: kernel `{}`: the regions of `{}` cannot be traced: {}",
                                        kPassName, kernel, callees.skipped.front(), why));
    }
    if (calleesTraced) {
      TransformResult scratch;
      if (auto cloned = createCloneSharedCalleesPass()->run(module, options, scratch); !cloned)
        return std::unexpected(cloned.error());
      analysis = ptx::analyzeRegions(module);
      if (!analysis) return std::unexpected(analysis.error());
      own = *analysis;
      composed = ptx::composeCalleeRegions(module, *analysis);
      if (!composed) return std::unexpected(composed.error());
    }
    std::map<std::string, const ptx::FunctionRegions*, std::less<>> regionsOf;
    for (const auto& fr : *analysis) regionsOf[fr.function] = &fr;
    for (const auto& fr : own) ownRegions_[fr.function] = &fr;

    if (!options.kernel.empty()) {
      const ptx::Function* k = module.findFunction(options.kernel);
      if (k == nullptr || !k->isEntry || !k->hasBody) {
        std::string kernels;
        for (const ptx::Function* f : module.functions()) {
          if (f->isEntry && f->hasBody) kernels += (kernels.empty() ? "" : ", ") + f->name;
        }
        return fail("passes", fmt::format("{}: kernel `{}` is not defined in {}; kernels: {}",
                                          kPassName, options.kernel, module.fileName,
                                          kernels.empty() ? "none" : kernels));
      }
    }

    std::vector<std::string> instrumented;
    std::set<std::string> traced;  // functions whose markers a kernel's trace lowered
    for (ptx::Function* function : module.functions()) {
      if (!function->hasBody || !function->isEntry) continue;
      auto it = regionsOf.find(function->name);
      const bool selected = options.kernel.empty()
                                ? it != regionsOf.end() && !it->second->regions.empty()
                                : function->name == options.kernel;
      if (!selected || it == regionsOf.end()) continue;
      const auto callees = composed->find(function->name);
      auto map = instrumentKernel(module, *function, *it->second,
                                  callees == composed->end() ? nullptr : &callees->second, traced);
      if (!map) return std::unexpected(map.error());
      result.traceMap[function->name] = std::move(*map);
      ++kernelsInstrumented_;
      instrumented.push_back(function->name);
      traced.insert(function->name);
    }
    // Markers of the other functions (kernels not traced, callees no traced kernel reaches).
    for (ptx::Function* function : module.functions())
      if (function->hasBody && !traced.contains(function->name))
        markersStripped_ += markers::stripAll(*function);
    if (!instrumented.empty())
      declareTraceSymbol(module, options_.compact(), options_.parted == Parted::Record,
                         instrumented);
    return {};
  }

 private:
  Statistic kernelsInstrumented_{this, "kernels", "kernels instrumented"};
  Statistic markersLowered_{this, "markers", "begin and end markers lowered"};
  Statistic recordSites_{this, "records", "record-writing sites emitted (one per end marker)"};
  Statistic tripCounters_{this, "trip_counters",
                          "derived regions' loop-trip counter steps and resets made code"};
  Statistic markersStripped_{this, "markers_stripped",
                             "markers removed without tracing (.func or other kernels)"};
  Statistic regions_{this, "regions", "regions in the trace maps"};
  Statistic calleesTraced_{this, "callees", "called functions whose regions were traced"};
  Statistic closingSites_{this, "closing_records",
                          "closing-record sites emitted (compact layout: one per ret/exit)"};
  Statistic lostSites_{this, "lost_counts",
                       "end markers that count occurrences run without lane 0"};

  LoweringOptions options_;
  query::Scope scope_;
  std::string target_;
  std::string fileName_;
  std::string ptxVersion_;  ///< The module's `.version` text ("8.8").

  static void declareTraceSymbol(ptx::Module& module, bool compact, bool partedRecorded,
                                 const std::vector<std::string>& kernels) {
    for (const auto& item : module.items) {
      if (item.kind == ptx::TopLevel::Kind::Variable && item.variable.name == trace::kTraceSymbol)
        return;
    }
    // After the module header directives (.version/.target/.address_size), before any function.
    size_t at = 0;
    while (at < module.items.size() && module.items[at].kind != ptx::TopLevel::Kind::Function &&
           module.items[at].kind != ptx::TopLevel::Kind::Variable) {
      ++at;
    }
    // A visible variable (.const unless said), inserted at `at`.
    const auto declare = [&](const char* name, std::string_view type, uint64_t align,
                             std::vector<std::optional<uint64_t>> dims, std::string initializer,
                             std::string_view space = ".const") {
      ptx::TopLevel item;
      item.kind = ptx::TopLevel::Kind::Variable;
      item.variable.linkage = ".visible";
      item.variable.stateSpace = space;
      item.variable.align = align;
      item.variable.type = type;
      item.variable.name = name;
      item.variable.dims = std::move(dims);
      item.variable.initializer = std::move(initializer);
      module.items.insert(module.items.begin() + static_cast<std::ptrdiff_t>(at), std::move(item));
    };
    // The injection library reads the device record size from here (format.h).
    if (compact)
      declare(trace::kTraceLayoutSymbol, ".u32", 4, {},
              std::to_string(sizeof(trace::CompactRecord) | trace::kLayoutWindowed |
                             trace::kLayoutHalves | trace::kLayoutCountFirst |
                             (partedRecorded ? trace::kLayoutPartedRecorded : 0)));
    // In the constant bank, so the kernel reads address, capacity and warps per CTA with one
    // load at entry (through the symbol's generic address, below) instead of a global load
    // followed by two dependent header loads (measured on the H200: the dependent chain cost the
    // first record of every warp ~1 us).
    declare(trace::kTraceSymbol, ".b8", 16, {trace::kTraceSymbolBytes}, "");
    // Which kernels write the buffer (format.h): in global memory, so the constant bank the
    // kernels read stays as it is.
    std::string bytes;
    uint64_t size = 0;
    for (const std::string& kernel : kernels)
      for (const char c : kernel + '\0') {
        bytes += fmt::format("{}{}", size++ == 0 ? "" : ",",
                             static_cast<unsigned>(static_cast<unsigned char>(c)));
      }
    declare(trace::kTraceKernelsSymbol, ".b8", 1, {size}, "{" + bytes + "}", ".global");
  }

  std::map<std::string, const ptx::FunctionRegions*, std::less<>> ownRegions_;

  static const ptx::FunctionRegions& functionRegions(const std::vector<ptx::FunctionRegions>& all,
                                                     const std::string& function) {
    return *std::ranges::find(all, function, &ptx::FunctionRegions::function);
  }

  /// The functions `kernel`'s trace is written in, in call order: the kernel, then every
  /// function it calls on the way to a callee with regions (`callees`); refuses what the trace
  /// cell cannot reach (see below).
  Result<std::vector<TracedFunction>> tracedFunctions(ptx::Module& module, ptx::Function& kernel,
                                                      const ptx::ComposedKernel* callees) {
    std::vector<TracedFunction> out(1);
    out[0].function = &kernel;
    if (callees == nullptr || callees->instances.empty()) return out;
    auto refuse = [&](const std::string& why) {
      return fail("passes", fmt::format("{}: kernel `{}`: {}", kPassName, kernel.name, why));
    };
    std::map<std::string, const ptx::CalleeInstance*> instanceOf;
    for (const auto& inst : callees->instances) {
      auto [it, fresh] = instanceOf.emplace(inst.function, &inst);
      if (!fresh)
        return refuse(fmt::format(
            "`{}` has regions and runs under two regions of the kernel, `{}` and `{}`; a traced "
            "build records a function's regions under one calling region (its machine code is "
            "one body): call it from one region, or mark the calling regions instead",
            inst.function,
            it->second->context.empty() ? "(outside every region)" : it->second->context,
            inst.context.empty() ? "(outside every region)" : inst.context));
    }
    std::map<std::string, ptx::Function*, std::less<>> bodies;
    for (ptx::Function* f : module.functions())
      if (f->hasBody) bodies[f->name] = f;
    // The carriers: functions reached from the kernel that reach a callee with regions.
    std::map<std::string, bool> reaches;
    std::vector<std::string> stack;
    std::function<Result<bool>(const std::string&)> visit =
        [&](const std::string& name) -> Result<bool> {
      if (auto it = reaches.find(name); it != reaches.end()) return it->second;
      if (std::ranges::find(stack, name) != stack.end()) return false;  // recursion: below
      stack.push_back(name);
      bool any = instanceOf.contains(name);
      for (const Statement& st : bodies.at(name)->body) {
        const std::string callee = ptx::directCallee(st);
        if (callee.empty() || !bodies.contains(callee) || bodies.at(callee)->isEntry) continue;
        if (std::ranges::find(stack, callee) != stack.end() && instanceOf.contains(callee))
          return refuse(
              fmt::format("`{}` has regions and is called recursively; regions of "
                          "recursive functions cannot be traced",
                          callee));
        auto r = visit(callee);
        if (!r) return r;
        any = any || *r;
      }
      stack.pop_back();
      reaches[name] = any;
      return any;
    };
    if (auto r = visit(kernel.name); !r) return std::unexpected(r.error());
    std::set<std::string> carriers;
    for (const auto& [name, yes] : reaches)
      if (yes && name != kernel.name) carriers.insert(name);
    // The cell is a parameter: every call of a carrier must be one this kernel makes, by name.
    for (ptx::Function* f : module.functions()) {
      if (!f->hasBody) continue;
      for (const Statement& st : f->body) {
        if (st.kind != Statement::Kind::Instruction) continue;
        const std::string callee = ptx::directCallee(st);
        for (const auto& op : st.instruction.operands)
          if (op.kind == ptx::Operand::Kind::Symbol && carriers.contains(op.text) &&
              op.text != callee)
            return refuse(
                fmt::format("`{}` leads to regions of called functions, and `{}` takes "
                            "its address (PTX line {}); a function called through a "
                            "pointer cannot take the trace's state",
                            op.text, f->name, st.loc.line));
        if (!callee.empty() && carriers.contains(callee) && f->isEntry && f != &kernel)
          return refuse(
              fmt::format("`{}` leads to regions of called functions and is also called "
                          "by kernel `{}` (PTX line {}); trace one kernel at a time "
                          "(--kernel) whose callees no other kernel calls",
                          callee, f->name, st.loc.line));
      }
    }
    // Callers before their callees (a reverse post-order of the carriers' call graph), so that a
    // call's lane-0 state reaches the callee's analysis.
    std::vector<std::string> order;
    std::set<std::string> seen;
    std::function<void(const std::string&)> post = [&](const std::string& name) {
      if (!seen.insert(name).second) return;
      for (const Statement& st : bodies.at(name)->body)
        if (const std::string callee = ptx::directCallee(st); carriers.contains(callee))
          post(callee);
      if (name != kernel.name) order.push_back(name);
    };
    post(kernel.name);
    std::ranges::reverse(order);
    for (const auto& name : order) {
      TracedFunction f;
      f.function = bodies.at(name);
      f.isKernel = false;
      f.records = instanceOf.contains(name);
      if (f.records) f.context = instanceOf.at(name)->parent;
      out.push_back(std::move(f));
    }
    return out;
  }

  /// One kernel: analysis, placement, emission (in it and its traced callees); returns its
  /// trace map. `traced` gets the functions whose markers were lowered.
  Result<nlohmann::json> instrumentKernel(ptx::Module& module, ptx::Function& kernel,
                                          const ptx::FunctionRegions& tree,
                                          const ptx::ComposedKernel* callees,
                                          std::set<std::string>& traced) {
    auto functions = tracedFunctions(module, kernel, callees);
    if (!functions) return std::unexpected(functions.error());
    std::set<std::string> carriers;
    for (size_t i = 1; i < functions->size(); ++i) carriers.insert((*functions)[i].function->name);
    auto roles = collectRoles(kernel, tree.regions);
    if (!roles) return std::unexpected(roles.error());
    // Facts per function, callers first: a callee is run without lane 0 where a call may be.
    std::map<std::string, bool> calledWithout;
    for (TracedFunction& f : *functions) {
      const ptx::FunctionRegions* local = ownRegions_.at(f.function->name);
      uint32_t first = 0;
      if (!f.isKernel)
        for (const auto& inst : callees->instances)
          if (inst.function == f.function->name) first = inst.first;
      auto facts = analyzeKernel(*f.function, *local, tree.regions, first, *roles,
                                 calledWithout[f.function->name], options_, fileName_, ptxVersion_);
      if (!facts) return std::unexpected(facts.error());
      if (!f.records) facts->sites.clear();
      f.facts = std::move(*facts);
      const auto& body = f.function->body;
      for (size_t i = 0; i < body.size(); ++i) {
        const std::string callee = ptx::directCallee(body[i]);
        if (!carriers.contains(callee)) continue;
        f.cellCalls.push_back(i);
        if (f.facts.statementWithoutLaneZero[i]) calledWithout[callee] = true;
      }
    }
    std::vector<TracedFunction> recording;
    for (const TracedFunction& f : *functions)
      if (f.records) recording.push_back(f);
    const std::vector<TracePlacement> placements =
        placeRecords(recording, options_, scope_, target_);
    EmissionCounts counts;
    nlohmann::json map;
    size_t next = 0;
    for (TracedFunction& f : *functions) {
      Splice splice;
      const TracePlacement* placement = f.records ? &placements[next++] : nullptr;
      std::optional<TraceEmitter> emit;
      if (placement != nullptr) {
        emit.emplace(options_, scope_, *f.function, f.facts, *placement, counts);
        splice.entry = emit->entry();
        for (const MarkerPlan& m : placement->markers)
          splice.markers[m.statement] = emit->marker(m);
        for (size_t i : placement->exits) {
          splice.before[i] += emit->closing();
          ++counts.closingSites;
        }
      }
      if (f.isKernel) {
        if (!f.cellCalls.empty()) splice.entry += TraceEmitter::cellInKernel();
        map = emit->traceMap();
      } else {
        splice.entry += TraceEmitter::cellFromParam();
        if (emit) {
          splice.entry += emit->loadState();
          if (f.context) splice.entry += emit->loadContext(*f.context);
          for (size_t i : placement->returns) splice.before[i] += emit->saveState(std::nullopt);
          TraceEmitter::appendMarkers(map["markers"], f.facts, f.function->name);
        }
        ptx::VariableDecl cell;
        cell.stateSpace = ".param";
        cell.type = ".b64";
        cell.name = std::string(kCellParam);
        for (ptx::Function* g : module.functions())
          if (g->name == f.function->name) g->params.push_back(cell);
      }
      for (size_t i : f.cellCalls) {
        if (emit) {
          // The calling region: the call's owner, else the function's own calling region.
          std::optional<uint32_t> q = f.context;
          if (i < f.facts.owners.size() && f.facts.owners[i].size() == 1) q = f.facts.owners[i][0];
          splice.before[i] += emit->saveState(q);
          splice.after[i] += emit->loadState();
        }
        passCell(*f.function, i, splice.before);
      }
      emit.reset();
      const Result<void> spliced = spliceTrace(*f.function, target_, splice, counts);
      if (!spliced) return std::unexpected(spliced.error());
      traced.insert(f.function->name);
      if (!f.isKernel && f.records) ++calleesTraced_;
    }
    markersLowered_ += counts.markersLowered;
    recordSites_ += counts.recordSites;
    markersStripped_ += counts.markersStripped;
    closingSites_ += counts.closingSites;
    lostSites_ += counts.lostSites;
    regions_ += tree.regions.size();
    return map;
  }
};

}  // namespace

std::unique_ptr<Pass> createLowerMarkersToTracePass() {
  return std::make_unique<LowerMarkersToTracePass>();
}

}  // namespace argus::passes
