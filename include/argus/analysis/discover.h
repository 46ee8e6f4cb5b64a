// Async-op discovery: finds the asynchronous operation sites of a kernel's PTX (TMA loads and
// stores, bulk copies, cp.async, WGMMA) and recovers how each one completes.
//
// Completion is either an mbarrier (TMA loads and bulk copies with
// `.mbarrier::complete_tx::bytes`: the barrier address, the `mbarrier.arrive.expect_tx` sites
// that arm it and the `mbarrier.try_wait`/`test_wait` sites with their parity operand, which is
// the loop-carried phase) or a commit/wait group (cp.async, wgmma, bulk_group stores).
//
// Barrier addresses are resolved through unique `mov`/`cvta`/`cvt`/`add`/`sub` definitions back
// to a base symbol plus a constant byte offset plus dynamic terms (registers whose value is not
// a constant, e.g. `stage * 8`). A register with several definitions, or one defined by any
// other instruction, stops the resolution; it becomes a dynamic term when a base symbol was
// found on the other side of an `add`, otherwise the address is reported unresolved with the
// reason. Nothing is guessed: matches between barrier sites say how they were established.
//
// Op IDs: `<owner>:<kind>:<ordinal>` where owner is the regionId() of the site's innermost
// owning region (the kernel name when the site is outside every region or has several
// possible owners) and ordinal counts sites of that kind in the kernel in PTX order, from 0,
// before any region filter. IDs are therefore stable across recompiles with other flags as long
// as the order of the kernel's async sites of that kind does not change.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/ptx/ir.h"
#include "argus/support/status.h"

namespace argus::analysis {

/// `tma_load`, `tma_store`, `bulk_copy`, `cp_async`, `wgmma`.
enum class OpKind : uint8_t { TmaLoad, TmaStore, BulkCopy, CpAsync, Wgmma };
[[nodiscard]] std::string_view toString(OpKind kind);

/// A PTX statement referred to by a site.
struct StatementRef {
  size_t statement = 0;  ///< Index into Function::body.
  uint32_t line = 0;     ///< PTX line.
  std::string opcode;
};

/// An address (e.g. an mbarrier operand) resolved through register definitions.
struct ResolvedAddress {
  std::string text;  ///< The operand as written, e.g. `[%r14]`.
  bool resolved = false;
  std::string base;    ///< Base symbol (e.g. `_ZZ8tma_gemmE11fullBarrier`) when resolved.
  int64_t offset = 0;  ///< Constant byte offset from `base`.
  std::vector<std::string> dynamicTerms;  ///< Registers added with non-constant values.
  std::vector<size_t> chain;              ///< Statements followed, in order of discovery.
  std::string reason;                     ///< Why resolution stopped, when !resolved.
};

/// How a wait's parity operand is computed, recovered structurally from its definitions (the
/// loop-carried phase that tells successive uses of a reused barrier apart).
struct ParityPhase {
  /// `immediate`: a constant. `iteration`: ((iteration / stages) & 1) ^ inverted, computed from
  /// an iteration register (division as `div`, `shr` or a multiply-high by a magic constant).
  /// `toggle`: a loop-carried register initialised by `mov` and flipped by `xor` in place, every
  /// time (stages 1) or when a stage counter wraps (stages from the wrap compare).
  /// `pipeline_state`: a CUTLASS-style PipelineState {index, phase}: every register reachable
  /// through the parity's definitions (constant 0/1 `mov`s, copies, `xor` with 1 or with a 0/1
  /// `selp`/`and ..., 1`, `selp` between members) is proven 1-bit, some flip lies in a loop, and
  /// every flip is tied to the stage index reaching `stages` (`setp.eq I + 1, stages` with I
  /// reset to 0 under the same predicate, `setp.gt/ge`, or bit 0 of a division by `stages`).
  /// Where the carrying loop flips it once per iteration the expression is
  /// `((I0 + k) / stages + P0) & 1` at iteration k (k + 1 for a wait after the flip); parts that
  /// cannot be derived stay empty and `reason` says why. `unknown`: `reason` says where the
  /// recovery stopped.
  std::string form = "unknown";
  std::string expression;  ///< Human-readable, e.g. `(%r147 / 3) & 1`.
  std::string iteration;   ///< `iteration`: the divided register; `toggle`: the stage counter.
  /// `pipeline_state`: the stage-index register I, its value at loop entry (a constant in
  /// `indexInitial`, else the register it is copied from in `indexEntry`), the phase register
  /// that the loop carries and the register the phase enters the loop as (`initial` when a
  /// constant), the carrying loop's header label and PTX line.
  std::string index;
  std::optional<int64_t> indexInitial;
  std::string indexEntry;
  std::string carried;
  std::string initialEntry;
  std::string loop;
  uint32_t loopLine = 0;
  /// `iteration`: path of the region whose `iter=` operand is `iteration` (empty: none).
  std::string iterationRegion;
  std::optional<int64_t> stages;  ///< Uses of the barrier per phase flip, when derivable.
  bool inverted = false;          ///< The parity is the complement (`not`, `xor 1`).
  /// `toggle`, `pipeline_state`: the initial value; `immediate`: the value.
  std::optional<int64_t> initial;
  std::vector<size_t> chain;  ///< Statements followed.
  std::string reason;         ///< `unknown`: why; `pipeline_state`: the parts not derived.
};

/// Another mbarrier operation on the barrier a site completes on.
struct BarrierSite {
  StatementRef where;
  ResolvedAddress address;
  /// How it was matched: `exact` (same base, offset and dynamic terms, or the same uniquely
  /// defined register), `may_alias` (same base symbol; dynamic terms or offsets may select the
  /// same barrier of an array), `same_text` (unresolved; identical operand text).
  std::string match;
  std::string parity;  ///< Waits: the parity/state operand text (register or immediate).
  bool parityIsImmediate = false;
  std::optional<ParityPhase> phase;  ///< Waits with a parity operand: how it is computed.
  std::string txCount;               ///< expect_tx: the transaction byte count operand text.
};

/// A commit or wait of a commit/wait-group family.
struct GroupSite {
  StatementRef where;
  std::optional<int64_t> pending;  ///< `wait_group N`: N; nullopt for `wait_all`.
  bool afterCommit = false;        ///< Wait: after the site's commit in program order.
};

struct Completion {
  enum class Kind : uint8_t { Barrier, Group };
  Kind kind = Kind::Barrier;
  bool resolved = false;  ///< False: `reason` says what could not be found.
  std::string reason;
  // Barrier
  std::optional<ResolvedAddress> barrier;
  std::vector<BarrierSite> expectTx;  ///< `mbarrier.arrive.expect_tx` / `mbarrier.expect_tx`.
  std::vector<BarrierSite> waits;     ///< `mbarrier.try_wait` / `mbarrier.test_wait`.
  // Group
  std::string family;                 ///< `cp.async`, `cp.async.bulk`, `wgmma`.
  std::optional<GroupSite> commit;    ///< The next commit after the site in program order.
  std::vector<GroupSite> groupWaits;  ///< Every wait of the family in the kernel, PTX order.
};

struct OpSite {
  std::string opId;
  OpKind kind = OpKind::TmaLoad;
  std::string kernel;
  StatementRef where;
  std::vector<std::string> regions;  ///< Innermost possible owner region paths (empty: none).
  Completion completion;
};

/// Finds async op sites in `kernel` (empty: every entry with a body) whose owning region is
/// `region` or lies in its subtree (empty: the whole kernel). Sites are ordered by kernel (file
/// order) then statement. Errors: unknown kernel (lists kernels), unknown region (lists the
/// regions), region marker errors.
[[nodiscard]] Result<std::vector<OpSite>> discoverAsyncOps(const ptx::Module& module,
                                                           std::string_view kernel,
                                                           std::string_view region);

[[nodiscard]] nlohmann::json toJson(const OpSite& site);
[[nodiscard]] nlohmann::json toJson(const std::vector<OpSite>& sites);

}  // namespace argus::analysis
