// Attribution of PC-keyed hardware evidence to regions (docs/architecture.md pipeline item 6
// "Synthesis", "Dynamic ownership").
//
//   m(r) = sum_p alpha(r,p) m(p),   alpha(r,p) = n(r,p) / sum_r' n(r',p),
//   H(p) = -sum_r alpha(r,p) log2 alpha(r,p)   (an ownership measure, not an error bar)
//
// Inputs are plain data, decoupled from the collectors that make them:
//   - the reference build's static PC map (sass::readPcMap of its painted twin, same SASS);
//   - per-PC metric values m(p) of the reference build, keyed by (SASS function, PC offset);
//   - optionally, the mapping run: the mapping build's per-PC executed counts. The mapping build is
//     the reference's own cubin in which every call path of a non-inlined callee runs a copy of
//     the callee's machine code (sass/callee_copies.h); a copy's PC q runs reference PC p, under
//     the region its call path is made in, so its count is n(r,p) with no join. (Mapping runs
//     stored before copies existed carry the PC map of a build whose callees were cloned in PTX
//     per calling region; their counts are joined back through PTX instruction identity,
//     joinBuilds.)
// PCs with one possible owner get alpha = 1 without counts. Where a PC has several possible
// owners and no usable mapping counts, the split is an equal share per owner, and the result
// says `estimate` with the reasons; it is never silent. Every value is `attributed`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/sass/callee_copies.h"
#include "argus/sass/pcmap.h"
#include "argus/support/status.h"

namespace argus::synthesis {

/// Per-PC values of one build as a collector reports them (CUPTI SASS metrics, ncu source
/// counters): SASS function, PC offset from the function start, metric name -> value.
struct PcMetrics {
  std::string function;
  uint64_t pc = 0;
  std::map<std::string, double> values;
};

/// The metric the instruction classes, barrier_inst and mem_inst are counted in, and the one the
/// mapping run's counts are read from.
inline constexpr std::string_view kInstExecuted = "smsp__sass_inst_executed";

/// Instruction class of a SASS opcode (`FFMA`, `LDG.E.128`, `@P0 BRA` without guard):
/// fp32, fp16, fp64, int, conversion, memory, barrier, control, tensor, uniform_move or other.
[[nodiscard]] std::string_view instructionClass(std::string_view sassOpcode);

/// How a mapping-build PC group joined its reference group; a mismatch leaves the reference PCs
/// of that group without counts.
struct JoinMismatch {
  std::string function;     ///< SASS function (kernel) of both builds.
  std::string ptxFunction;  ///< Reference PTX function of the instruction.
  size_t statement = 0;     ///< PTX statement (the identity of the instruction).
  std::string mappingBody;  ///< The mapping build's PTX function (a copy's name); "" when no
                            ///< mapping body holds the instruction.
  size_t referencePcs = 0;  ///< SASS instructions the PTX instruction became in each build.
  size_t mappingPcs = 0;
  /// Reference PCs of the group left without a partner: those whose opcode does not occur
  /// equally often in both groups (the others are paired by order among their opcode).
  size_t unjoinedReferencePcs = 0;
};

/// Mapping-build PCs -> reference PCs. Identity: (SASS function, origin PTX function, origin
/// statement), then order within that group (one PTX instruction can become several SASS
/// instructions). Groups whose sizes differ are reported as mismatches; inside them only
/// instructions whose exact SASS opcode occurs equally often in both groups are paired (by order
/// among that opcode), the rest stay unjoined: ptxas moves work between a copy with one caller
/// and its call site (seen: a parameter load), and that must not shift every pairing after it.
/// Groups only one build has are mismatches too. PCs without a painted line, and padding, are
/// not joined.
struct PcJoin {
  /// Reference entry index -> mapping entry indices (one per copy that holds the instruction).
  std::map<size_t, std::vector<size_t>> mappingOf;
  std::vector<JoinMismatch> mismatches;
};
[[nodiscard]] PcJoin joinBuilds(const std::vector<sass::PcEntry>& reference,
                                const std::vector<sass::PcEntry>& mapping);
[[nodiscard]] nlohmann::json toJson(const JoinMismatch& mismatch);

/// The mapping run: the mapping build's PC map and its per-PC executed counts.
struct MappingRun {
  std::vector<sass::PcEntry> pcmap;
  std::vector<PcMetrics> counts;
  std::string countMetric = std::string(kInstExecuted);
  /// A build with callee copies: the kernel's copies (possibly none), and the build's check that
  /// they read as the reference's code (sass::checkCopies). Absent for PTX-cloned builds.
  std::optional<std::vector<sass::CalleeCopy>> copies = std::nullopt;
  nlohmann::json copyCheck = nullptr;
  std::string copyRefusal =
      {};  ///< Why the kernel's callees were not copied (then no copies), or "".
};

/// A ratio signal lifted as numerator and denominator separately.
struct RatioMetric {
  std::string name;
  std::string numerator;
  std::string denominator;
};

struct AttributionOptions {
  /// The kernel (SASS function) the metrics are for; owners of other kernels are ignored.
  std::string kernel;
  std::vector<RatioMetric> ratios;
  /// Whether the metrics' kInstExecuted counts executed warp instructions (CUPTI SASS metrics,
  /// ncu), so that its kernel total must equal the mapping run's (a check of callee copies); PC
  /// sampling puts samples there.
  bool countsInstructions = false;
};

/// Ownership of one reference PC.
struct PcWeights {
  std::map<std::string, double> alpha;  ///< region path -> alpha(r,p); sums to 1
  double entropy = 0.0;                 ///< H(p) in bits
  /// `single_owner`, `mapping_run` (alpha from n(r,p)), `callee_copies` (alpha from the counts of
  /// the PC's copies, one per call path), `estimate` (equal shares) or
  /// `no_owner` (no painted line and no calling context: bucket "(no PTX line)").
  std::string method;
  std::string reason;  ///< Why an estimate, empty otherwise.
};

/// Region names for code outside every region and for PCs that no map entry owns.
inline constexpr std::string_view kOutsideRegions = "(outside every region)";
inline constexpr std::string_view kNoPtxLine = "(no PTX line)";

/// alpha(r,p) for every reference entry of `options.kernel` (indices as in `reference`).
[[nodiscard]] std::map<size_t, PcWeights> ownershipWeights(
    const std::vector<sass::PcEntry>& reference, const std::optional<MappingRun>& mapping,
    const AttributionOptions& options);

/// The attribution report (schema `argus.attribution/1`): per region every additive metric,
/// the ratios, inst_executed / inst_mix / barrier_inst / mem_inst from kInstExecuted, ambiguity
/// (share of the region's instructions from PCs with H > 0, instruction-weighted mean H), the
/// same per source file, and whether the whole result is exact or an estimate (with reasons).
/// Fails when a metrics PC is not in the reference map (evidence from another cubin).
[[nodiscard]] Result<nlohmann::json> attribute(const std::vector<sass::PcEntry>& reference,
                                               const std::vector<PcMetrics>& metrics,
                                               const std::optional<MappingRun>& mapping,
                                               const AttributionOptions& options);

}  // namespace argus::synthesis
