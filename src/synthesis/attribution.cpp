// Attribution synthesis: per-PC evidence -> per-region values with ownership weights. See
// include/argus/synthesis/attribution.h for the rule and the inputs.
#include "argus/synthesis/attribution.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace argus::synthesis {
namespace {

/// SASS opcode (first dotted component, guard removed) -> class. The table follows the
/// instruction groups of NVIDIA's CUDA binary utilities reference for sm_90, merged into the
/// classes a region report needs. Choices worth knowing:
///   - memory counts every load/store path: global/local/shared/generic (LD*, ST*), constant
///     bank loads (LDC, ULDC), atomics and reductions, async copies (LDGSTS) and the TMA/bulk
///     engines (UTMALDG, UTMASTG, UBLKCP, ...), shared-memory matrix loads (LDSM, STSM), textures.
///   - barrier counts every instruction that waits for or signals other threads or memory:
///     CTA barriers (BAR), mbarrier operations (SYNCS), fences (MEMBAR, FENCE), dependency
///     barriers (DEPBAR, LDGDEPBAR, WARPGROUP), WARPSYNC, ERRBAR.
///   - control is branching and calls, including the convergence-barrier pair BSSY/BSYNC, which
///     re-converge one warp and wait for no one else.
///   - tensor is every matrix instruction (HGMMA on Hopper, HMMA/IMMA/... before).
///   - uniform_move is the datapath bookkeeping that moves values between register files and
///     special registers (MOV, S2R, R2UR, SEL, SHFL, PLOP3, ...).
struct ClassRow {
  std::string_view opcode;
  std::string_view cls;
};
constexpr ClassRow kClasses[] = {
    // fp32
    {"FADD", "fp32"},
    {"FADD32I", "fp32"},
    {"FMUL", "fp32"},
    {"FMUL32I", "fp32"},
    {"FFMA", "fp32"},
    {"FFMA32I", "fp32"},
    {"FMNMX", "fp32"},
    {"FSET", "fp32"},
    {"FSETP", "fp32"},
    {"FSEL", "fp32"},
    {"FCHK", "fp32"},
    {"FSWZADD", "fp32"},
    {"MUFU", "fp32"},
    {"FRND", "fp32"},
    // fp16 / bf16 pairs
    {"HADD2", "fp16"},
    {"HADD2_32I", "fp16"},
    {"HFMA2", "fp16"},
    {"HFMA2_32I", "fp16"},
    {"HMUL2", "fp16"},
    {"HMUL2_32I", "fp16"},
    {"HSET2", "fp16"},
    {"HSETP2", "fp16"},
    {"HMNMX2", "fp16"},
    // fp64
    {"DADD", "fp64"},
    {"DFMA", "fp64"},
    {"DMUL", "fp64"},
    {"DSETP", "fp64"},
    {"DMNMX", "fp64"},
    // integer (vector and uniform datapaths)
    {"IADD", "int"},
    {"IADD3", "int"},
    {"IADD32I", "int"},
    {"IMAD", "int"},
    {"IMAD32I", "int"},
    {"IMADSP", "int"},
    {"IMUL", "int"},
    {"IMUL32I", "int"},
    {"ISETP", "int"},
    {"ISCADD", "int"},
    {"ISCADD32I", "int"},
    {"LEA", "int"},
    {"LOP", "int"},
    {"LOP3", "int"},
    {"LOP32I", "int"},
    {"SHF", "int"},
    {"SHL", "int"},
    {"SHR", "int"},
    {"POPC", "int"},
    {"FLO", "int"},
    {"BREV", "int"},
    {"IABS", "int"},
    {"IMNMX", "int"},
    {"VIADD", "int"},
    {"VIMNMX", "int"},
    {"VIADDMNMX", "int"},
    {"IDP", "int"},
    {"IDP4A", "int"},
    {"BMSK", "int"},
    {"SGXT", "int"},
    {"BFE", "int"},
    {"BFI", "int"},
    {"PRMT", "int"},
    {"UIADD3", "int"},
    {"UIMAD", "int"},
    {"ULOP3", "int"},
    {"ULOP", "int"},
    {"USHF", "int"},
    {"ULEA", "int"},
    {"UISETP", "int"},
    {"UPRMT", "int"},
    {"UFLO", "int"},
    {"UPOPC", "int"},
    {"UBREV", "int"},
    {"USGXT", "int"},
    {"UBMSK", "int"},
    {"UIMNMX", "int"},
    {"USHL", "int"},
    {"USHR", "int"},
    // conversion
    {"F2F", "conversion"},
    {"F2FP", "conversion"},
    {"F2I", "conversion"},
    {"I2F", "conversion"},
    {"I2FP", "conversion"},
    {"I2I", "conversion"},
    {"I2IP", "conversion"},
    {"UF2FP", "conversion"},
    // memory
    {"LD", "memory"},
    {"LDG", "memory"},
    {"LDL", "memory"},
    {"LDS", "memory"},
    {"LDC", "memory"},
    {"ULDC", "memory"},
    {"LDSM", "memory"},
    {"ST", "memory"},
    {"STG", "memory"},
    {"STL", "memory"},
    {"STS", "memory"},
    {"STSM", "memory"},
    {"STAS", "memory"},
    {"ATOM", "memory"},
    {"ATOMG", "memory"},
    {"ATOMS", "memory"},
    {"RED", "memory"},
    {"REDG", "memory"},
    {"REDAS", "memory"},
    {"LDGSTS", "memory"},
    {"UTMALDG", "memory"},
    {"UTMASTG", "memory"},
    {"UTMAPF", "memory"},
    {"UTMAREDG", "memory"},
    {"UTMACCTL", "memory"},
    {"UBLKCP", "memory"},
    {"UBLKRED", "memory"},
    {"UBLKPF", "memory"},
    {"CCTL", "memory"},
    {"CCTLL", "memory"},
    {"TEX", "memory"},
    {"TLD", "memory"},
    {"TLD4", "memory"},
    {"SULD", "memory"},
    {"SUST", "memory"},
    {"SUATOM", "memory"},
    {"SURED", "memory"},
    // barrier / synchronization
    {"BAR", "barrier"},
    {"BARRIER", "barrier"},
    {"SYNCS", "barrier"},
    {"MEMBAR", "barrier"},
    {"FENCE", "barrier"},
    {"DEPBAR", "barrier"},
    {"LDGDEPBAR", "barrier"},
    {"WARPGROUP", "barrier"},
    {"WARPSYNC", "barrier"},
    {"ERRBAR", "barrier"},
    {"CGAERRBAR", "barrier"},
    {"ARRIVES", "barrier"},
    {"UCGABAR_ARV", "barrier"},
    {"UCGABAR_WAIT", "barrier"},
    // control
    {"BRA", "control"},
    {"BRX", "control"},
    {"BRXU", "control"},
    {"JMP", "control"},
    {"JMX", "control"},
    {"JMXU", "control"},
    {"CALL", "control"},
    {"RET", "control"},
    {"EXIT", "control"},
    {"BSSY", "control"},
    {"BSYNC", "control"},
    {"BREAK", "control"},
    {"BPT", "control"},
    {"KILL", "control"},
    {"NANOSLEEP", "control"},
    {"YIELD", "control"},
    {"ACQBULK", "control"},
    {"ELECT", "control"},
    {"BMOV", "control"},
    // tensor
    {"HGMMA", "tensor"},
    {"IGMMA", "tensor"},
    {"QGMMA", "tensor"},
    {"BGMMA", "tensor"},
    {"HMMA", "tensor"},
    {"IMMA", "tensor"},
    {"DMMA", "tensor"},
    {"BMMA", "tensor"},
    // moves between register files and special registers
    {"MOV", "uniform_move"},
    {"MOV32I", "uniform_move"},
    {"UMOV", "uniform_move"},
    {"S2R", "uniform_move"},
    {"S2UR", "uniform_move"},
    {"CS2R", "uniform_move"},
    {"R2UR", "uniform_move"},
    {"R2P", "uniform_move"},
    {"P2R", "uniform_move"},
    {"SEL", "uniform_move"},
    {"USEL", "uniform_move"},
    {"SHFL", "uniform_move"},
    {"PLOP3", "uniform_move"},
    {"UPLOP3", "uniform_move"},
    {"VOTE", "uniform_move"},
    {"VOTEU", "uniform_move"},
    {"MATCH", "uniform_move"},
    {"NOP", "uniform_move"},
    {"UP2UR", "uniform_move"},
    {"UR2UP", "uniform_move"},
    {"USETMAXREG", "uniform_move"},
};

std::string_view baseOpcode(std::string_view opcode) {
  if (opcode.starts_with('@')) {
    const size_t space = opcode.find(' ');
    opcode = space == std::string_view::npos ? std::string_view() : opcode.substr(space + 1);
  }
  return opcode.substr(0, opcode.find('.'));
}

std::string regionName(const std::string& path) {
  return path.empty() ? std::string(kOutsideRegions) : path;
}

/// Possible owners of a reference entry within `kernel`, as region names.
std::set<std::string> ownersOf(const sass::PcEntry& e, const std::string& kernel) {
  std::set<std::string> out;
  for (const auto& o : e.owners) {
    if (o.kernel == kernel) out.insert(regionName(o.region));
  }
  // Paint maps without `owners` (written before call contexts existed): the function's view.
  if (out.empty() && e.owners.empty() && e.line) {
    if (e.regions.empty()) out.insert(std::string(kOutsideRegions));
    for (const auto& r : e.regions) out.insert(r);
  }
  return out;
}

double entropyOf(const std::map<std::string, double>& alpha) {
  double h = 0.0;
  for (const auto& [r, a] : alpha) {
    if (a > 0.0) h -= a * std::log2(a);
  }
  return h < 1e-12 ? 0.0 : h;
}

nlohmann::json attributed(double value) {
  return {{"value", value}, {"qualification", "attributed"}};
}

/// Index of (function, pc) -> entry, plus each SASS body's first PC (metrics keyed by body).
struct EntryIndex {
  std::map<std::pair<std::string, uint64_t>, size_t> byPc;
  std::map<std::string, std::pair<std::string, uint64_t>> bodyStart;  ///< body -> (function, pc)

  explicit EntryIndex(const std::vector<sass::PcEntry>& entries) {
    for (size_t i = 0; i < entries.size(); ++i) {
      const auto& e = entries[i];
      byPc[{e.function, e.pc}] = i;
      if (!e.body.empty() && e.body != e.function && !bodyStart.contains(e.body)) {
        bodyStart[e.body] = {e.function, e.pc};
      }
    }
  }

  /// The entry for a collector's (function, pc): a kernel and an offset from its start, or a
  /// called body (`callee` or `$kernel$callee`) and an offset from that body's start.
  std::optional<size_t> find(const std::string& function, uint64_t pc) const {
    if (auto it = byPc.find({function, pc}); it != byPc.end()) return it->second;
    if (auto at = bodyPc(function, pc)) {
      if (auto it = byPc.find(*at); it != byPc.end()) return it->second;
    }
    return std::nullopt;
  }

  /// A called body's (`callee` or `$kernel$callee`) offset `pc` as (kernel, offset in the
  /// kernel's text), or nothing when no body has that name.
  std::optional<std::pair<std::string, uint64_t>> bodyPc(const std::string& function,
                                                         uint64_t pc) const {
    std::string body = function;
    if (body.starts_with('$')) {
      const size_t second = body.find('$', 1);
      if (second != std::string::npos) body = body.substr(second + 1);
    }
    auto start = bodyStart.find(body);
    if (start == bodyStart.end()) return std::nullopt;
    return std::pair{start->second.first, start->second.second + pc};
  }
};

/// A reference entry's own region path in its function ("" outside every region), or nullopt
/// where markers under data-dependent branches leave several.
std::optional<std::string> localPath(const sass::PcEntry& e) {
  if (e.regions.size() > 1) return std::nullopt;
  return e.regions.empty() ? std::string() : e.regions.front();
}

std::string composed(const std::string& outer, const std::string& inner) {
  if (outer.empty()) return inner;
  if (inner.empty()) return outer;
  return outer + "/" + inner;
}

/// The mapping counts of a build with callee copies, by offset in the kernel's text: counts keyed
/// by a called body (`callee`, `$kernel$callee`) are moved by the body's start. CUPTI's counters
/// are per basic block, and a block it sees run on past a copy's RET into the alignment padding
/// after it (a self-branch and NOPs, which cannot execute) up to the next copy: those counts, at
/// copy PCs whose reference PC is padding and between copies, go to `padding`, not to a PC.
struct CopyRunCounts {
  std::map<uint64_t, double> byPc;
  double padding = 0.0;
};
CopyRunCounts copyRunCounts(const MappingRun& mapping, const std::vector<sass::PcEntry>& reference,
                            const EntryIndex& index, const std::string& kernel) {
  std::set<uint64_t> paddingPcs;
  uint64_t end = 0;  // the reference text's end
  for (const auto& e : reference) {
    if (e.function != kernel) continue;
    if (e.padding) paddingPcs.insert(e.pc);
    end = std::max(end, e.pc + 16);
  }
  CopyRunCounts out;
  for (const auto& c : mapping.counts) {
    auto v = c.values.find(mapping.countMetric);
    if (v == c.values.end()) continue;
    uint64_t pc = c.pc;
    if (c.function != kernel) {
      auto at = index.bodyPc(c.function, c.pc);
      if (!at || at->first != kernel) continue;
      pc = at->second;
    }
    const sass::CalleeCopy* copy = nullptr;
    for (const auto& k : *mapping.copies)
      if (pc >= k.offset && pc < k.offset + k.original.size) copy = &k;
    if ((copy != nullptr && paddingPcs.contains(copy->referencePc(pc))) ||
        (copy == nullptr && pc >= end)) {
      out.padding += v->second;
      continue;
    }
    out.byPc[pc] += v->second;
  }
  return out;
}

/// n(r,p) of reference entry `e` from the copies of its function: each copy's PC for p counts
/// under the region its call path composes to (the call sites' own region paths, outermost
/// first, then p's). Returns why it cannot, or "".
std::string countCopies(const sass::PcEntry& e, const MappingRun& mapping,
                        const std::map<uint64_t, double>& countAt,
                        const std::map<uint64_t, const sass::PcEntry*>& referenceAt,
                        const std::set<std::string>& owners, std::map<std::string, double>& n) {
  const auto local = localPath(e);
  if (!local)
    return "the PC's own function gives it several region paths (markers under data-dependent "
           "branches)";
  size_t found = 0;
  for (const auto& copy : *mapping.copies) {
    if (e.pc < copy.original.offset || e.pc >= copy.original.offset + copy.original.size) continue;
    ++found;
    std::string context;
    for (uint64_t site : copy.context) {
      auto at = referenceAt.find(site);
      const auto path = at == referenceAt.end() ? std::nullopt : localPath(*at->second);
      if (!path)
        return fmt::format("the call at {:#x} that leads to a copy has no single region path",
                           site);
      context = composed(context, *path);
    }
    const std::string owner = regionName(composed(context, *local));
    if (!owners.contains(owner))
      return fmt::format(
          "a copy's call path composes to `{}`, which the PC map does not list "
          "among this PC's owners",
          owner);
    auto count = countAt.find(copy.offset + (e.pc - copy.original.offset));
    n[owner] += count == countAt.end() ? 0.0 : count->second;
  }
  if (found == 0)
    return mapping.copyRefusal.empty()
               ? std::string("the mapping build has no copy of the function holding this PC")
               : "the mapping build copied no callee of this kernel: " + mapping.copyRefusal;
  if (auto original = countAt.find(e.pc); original != countAt.end() && original->second > 0.0)
    return fmt::format(
        "the original body ran this PC {} times in the mapping run, though every "
        "call path was sent to a copy",
        original->second);
  return "";
}

}  // namespace

std::string_view instructionClass(std::string_view sassOpcode) {
  const std::string_view base = baseOpcode(sassOpcode);
  for (const auto& row : kClasses) {
    if (row.opcode == base) return row.cls;
  }
  return "other";
}

PcJoin joinBuilds(const std::vector<sass::PcEntry>& reference,
                  const std::vector<sass::PcEntry>& mapping) {
  // Group key: (SASS function, PTX function, statement); members in PC order (input order).
  using Key = std::tuple<std::string, std::string, size_t>;
  std::map<Key, std::vector<size_t>> referenceGroups;
  for (size_t i = 0; i < reference.size(); ++i) {
    const auto& e = reference[i];
    if (!e.line || !e.ptxStatement || e.padding) continue;
    referenceGroups[{e.function, e.ptxFunction, *e.ptxStatement}].push_back(i);
  }
  std::map<Key, std::vector<size_t>> mappingGroups;
  for (size_t i = 0; i < mapping.size(); ++i) {
    const auto& e = mapping[i];
    if (!e.line || !e.ptxStatement || e.padding) continue;
    mappingGroups[{e.function, e.ptxFunction, *e.ptxStatement}].push_back(i);
  }
  PcJoin join;
  std::set<Key> reached;
  for (const auto& [key, members] : mappingGroups) {
    const auto& first = mapping[members.front()];
    const std::string origin =
        first.originFunction.empty() ? first.ptxFunction : first.originFunction;
    const size_t statement = first.originStatement.value_or(std::get<2>(key));
    const Key target{std::get<0>(key), origin, statement};
    auto found = referenceGroups.find(target);
    const std::vector<size_t> none;
    const std::vector<size_t>& refs = found == referenceGroups.end() ? none : found->second;
    reached.insert(target);
    if (refs.size() == members.size()) {
      for (size_t k = 0; k < members.size(); ++k) join.mappingOf[refs[k]].push_back(members[k]);
      continue;
    }
    // Sizes differ: pair only instructions whose opcode occurs equally often in both groups, by
    // order among that opcode; every other reference PC of the group stays unjoined.
    JoinMismatch mismatch{std::get<0>(key), origin,      statement,
                          std::get<1>(key), refs.size(), members.size()};
    std::map<std::string, std::vector<size_t>> refByOpcode, mapByOpcode;
    for (size_t i : refs) refByOpcode[reference[i].opcode].push_back(i);
    for (size_t q : members) mapByOpcode[mapping[q].opcode].push_back(q);
    for (const auto& [opcode, list] : refByOpcode) {
      auto other = mapByOpcode.find(opcode);
      if (other == mapByOpcode.end() || other->second.size() != list.size()) {
        mismatch.unjoinedReferencePcs += list.size();
        continue;
      }
      for (size_t k = 0; k < list.size(); ++k) join.mappingOf[list[k]].push_back(other->second[k]);
    }
    join.mismatches.push_back(std::move(mismatch));
  }
  // Reference instructions that no mapping body holds at all.
  for (const auto& [key, refs] : referenceGroups) {
    if (reached.contains(key)) continue;
    join.mismatches.push_back(
        {std::get<0>(key), std::get<1>(key), std::get<2>(key), "", refs.size(), 0, refs.size()});
  }
  return join;
}

nlohmann::json toJson(const JoinMismatch& m) {
  return {{"function", m.function},
          {"ptx_function", m.ptxFunction},
          {"statement", m.statement},
          {"mapping_body", m.mappingBody},
          {"reference_pcs", m.referencePcs},
          {"mapping_pcs", m.mappingPcs},
          {"unjoined_reference_pcs", m.unjoinedReferencePcs}};
}

std::map<size_t, PcWeights> ownershipWeights(const std::vector<sass::PcEntry>& reference,
                                             const std::optional<MappingRun>& mapping,
                                             const AttributionOptions& options) {
  std::optional<PcJoin> join;
  std::map<std::pair<std::string, uint64_t>, double> counts;
  const bool copied = mapping && mapping->copies.has_value();
  std::map<uint64_t, double> countAt;  // copies: kernel pc -> count
  std::map<uint64_t, const sass::PcEntry*> referenceAt;
  if (copied) {
    countAt = copyRunCounts(*mapping, reference, EntryIndex(reference), options.kernel).byPc;
    for (const auto& e : reference)
      if (e.function == options.kernel) referenceAt[e.pc] = &e;
  }
  if (mapping && !copied) {
    join = joinBuilds(reference, mapping->pcmap);
    for (const auto& c : mapping->counts) {
      if (auto v = c.values.find(mapping->countMetric); v != c.values.end()) {
        counts[{c.function, c.pc}] += v->second;
      }
    }
  }
  // Mapping counts may be keyed by body like the metrics; resolve through the same index.
  std::optional<EntryIndex> mappingIndex;
  std::map<size_t, double> countOf;  // mapping entry -> count
  if (mapping && !copied) {
    mappingIndex.emplace(mapping->pcmap);
    for (const auto& [key, value] : counts) {
      if (auto at = mappingIndex->find(key.first, key.second)) countOf[*at] += value;
    }
  }

  std::map<size_t, PcWeights> out;
  for (size_t i = 0; i < reference.size(); ++i) {
    const auto& e = reference[i];
    if (e.function != options.kernel) continue;
    PcWeights w;
    const std::set<std::string> owners = ownersOf(e, options.kernel);
    if (owners.empty()) {
      w.alpha[std::string(kNoPtxLine)] = 1.0;
      w.method = "no_owner";
    } else if (owners.size() == 1) {
      w.alpha[*owners.begin()] = 1.0;
      w.method = "single_owner";
    } else {
      // n(r,p) from the mapping build's PCs joined to this one.
      std::map<std::string, double> n;
      std::string problem;
      if (!mapping) {
        problem = fmt::format("no mapping run; the PC has {} possible owners", owners.size());
      } else if (copied) {
        problem = countCopies(e, *mapping, countAt, referenceAt, owners, n);
        double total = 0.0;
        for (const auto& [r, v] : n) total += v;
        if (problem.empty() && total <= 0.0) problem = "not executed in the mapping run";
        if (problem.empty()) {
          for (const auto& [r, v] : n)
            if (v > 0.0) w.alpha[r] = v / total;
          w.method = "callee_copies";
        }
      } else if (auto joined = join->mappingOf.find(i); joined == join->mappingOf.end()) {
        problem = "no mapping-build PC joins this one (see mapping.mismatches)";
      } else {
        for (size_t q : joined->second) {
          std::set<std::string> qOwners = ownersOf(mapping->pcmap[q], options.kernel);
          const double count = countOf.contains(q) ? countOf.at(q) : 0.0;
          if (qOwners.size() != 1) {
            if (count > 0.0) {
              problem =
                  "a mapping-build copy keeps several owners (an unresolved call site, "
                  "see the clone map)";
            }
            continue;
          }
          n[*qOwners.begin()] += count;
        }
        // Each possible owner's copy must hold the instruction, or its share would be lost.
        std::set<std::string> missing = owners;
        for (size_t q : joined->second) {
          for (const auto& r : ownersOf(mapping->pcmap[q], options.kernel)) missing.erase(r);
        }
        if (problem.empty() && !missing.empty()) {
          problem = fmt::format("the mapping build's copies for {} lack this instruction",
                                fmt::join(missing, ", "));
        }
        double total = 0.0;
        for (const auto& [r, v] : n) total += v;
        if (problem.empty() && total <= 0.0) problem = "not executed in the mapping run";
        if (problem.empty()) {
          for (const auto& [r, v] : n) {
            if (v > 0.0) w.alpha[r] = v / total;
          }
          w.method = "mapping_run";
        }
      }
      if (!problem.empty()) {
        for (const auto& r : owners) w.alpha[r] = 1.0 / static_cast<double>(owners.size());
        w.method = "estimate";
        w.reason = std::move(problem);
      }
    }
    w.entropy = entropyOf(w.alpha);
    out.emplace(i, std::move(w));
  }
  return out;
}

Result<nlohmann::json> attribute(const std::vector<sass::PcEntry>& reference,
                                 const std::vector<PcMetrics>& metrics,
                                 const std::optional<MappingRun>& mapping,
                                 const AttributionOptions& options) {
  if (options.kernel.empty()) return fail("synthesis", "attribution: no kernel named");
  const EntryIndex index(reference);
  // m(p) per reference entry; several records for one PC (launches, SMs) add up.
  std::map<size_t, std::map<std::string, double>> values;
  std::set<std::string> metricNames;
  for (const auto& record : metrics) {
    auto at = index.find(record.function, record.pc);
    if (!at) {
      return fail("synthesis",
                  fmt::format("attribution: PC {}+{:#x} is not in the reference build's PC map; "
                              "per-PC evidence joins only the map of the same cubin",
                              record.function, record.pc));
    }
    if (reference[*at].function != options.kernel) continue;
    for (const auto& [name, v] : record.values) {
      values[*at][name] += v;
      metricNames.insert(name);
    }
  }
  const auto weights = ownershipWeights(reference, mapping, options);

  struct Accumulator {
    std::map<std::string, double> metrics;
    std::map<std::string, double> mix;
    double ambiguousInst = 0.0;
    double entropyInst = 0.0;
  };
  std::map<std::string, Accumulator> regions;
  std::map<std::string, Accumulator> files;
  Accumulator total;
  std::map<std::string, std::pair<size_t, double>> estimateReasons;  // reason -> (pcs, inst)
  nlohmann::json ambiguousPcs = nlohmann::json::array();
  const std::string inst(kInstExecuted);

  for (const auto& [i, pcValues] : values) {
    const auto& e = reference[i];
    const PcWeights& w = weights.at(i);
    const std::string cls(instructionClass(e.opcode));
    const double instValue = pcValues.contains(inst) ? pcValues.at(inst) : 0.0;
    bool nonzero = false;
    for (const auto& [name, v] : pcValues) nonzero = nonzero || v != 0.0;
    if (w.method == "estimate" && nonzero) {
      auto& [pcs, instSum] = estimateReasons[w.reason];
      ++pcs;
      instSum += instValue;
    }
    if (w.alpha.size() > 1 && nonzero) {
      ambiguousPcs.push_back({{"function", e.function},
                              {"pc", e.pc},
                              {"opcode", e.opcode},
                              {"alpha", w.alpha},
                              {"entropy", w.entropy},
                              {"method", w.method}});
    }
    for (const auto& [region, alpha] : w.alpha) {
      Accumulator& acc = regions[region];
      for (const auto& [name, v] : pcValues) acc.metrics[name] += alpha * v;
      acc.mix[cls] += alpha * instValue;
      if (w.entropy > 0.0) acc.ambiguousInst += alpha * instValue;
      acc.entropyInst += alpha * instValue * w.entropy;
    }
    const std::string file = e.sourceFile.empty()
                                 ? std::string("(no source line)")
                                 : std::filesystem::path(e.sourceFile).filename().string();
    for (auto* acc : {&files[file], &total}) {
      for (const auto& [name, v] : pcValues) acc->metrics[name] += v;
      acc->mix[cls] += instValue;
    }
  }

  auto render = [&](const Accumulator& acc, bool withAmbiguity) {
    nlohmann::json j;
    nlohmann::json m = nlohmann::json::object();
    for (const auto& name : metricNames) {
      m[name] = attributed(acc.metrics.contains(name) ? acc.metrics.at(name) : 0.0);
    }
    j["metrics"] = std::move(m);
    nlohmann::json ratios = nlohmann::json::object();
    for (const auto& ratio : options.ratios) {
      const double num =
          acc.metrics.contains(ratio.numerator) ? acc.metrics.at(ratio.numerator) : 0.0;
      const double den =
          acc.metrics.contains(ratio.denominator) ? acc.metrics.at(ratio.denominator) : 0.0;
      ratios[ratio.name] = {{"value", den != 0.0 ? nlohmann::json(num / den) : nlohmann::json()},
                            {"numerator", num},
                            {"denominator", den},
                            {"qualification", "attributed"}};
    }
    j["ratios"] = std::move(ratios);
    const double instTotal = acc.metrics.contains(inst) ? acc.metrics.at(inst) : 0.0;
    j["inst_executed"] = attributed(instTotal);
    nlohmann::json mix = nlohmann::json::object();
    for (const auto& [cls, v] : acc.mix) mix[cls] = attributed(v);
    j["inst_mix"] = std::move(mix);
    j["barrier_inst"] = attributed(acc.mix.contains("barrier") ? acc.mix.at("barrier") : 0.0);
    j["mem_inst"] = attributed(acc.mix.contains("memory") ? acc.mix.at("memory") : 0.0);
    if (withAmbiguity) {
      j["ambiguity"] = {{"ambiguous_share", instTotal > 0.0 ? acc.ambiguousInst / instTotal : 0.0},
                        {"mean_entropy_bits", instTotal > 0.0 ? acc.entropyInst / instTotal : 0.0}};
    }
    return j;
  };

  nlohmann::json regionsJson = nlohmann::json::object();
  for (const auto& [region, acc] : regions) regionsJson[region] = render(acc, true);
  nlohmann::json filesJson = nlohmann::json::object();
  for (const auto& [file, acc] : files) filesJson[file] = render(acc, false);
  nlohmann::json reasons = nlohmann::json::array();
  for (const auto& [reason, stat] : estimateReasons) {
    reasons.push_back({{"reason", reason}, {"pcs", stat.first}, {"inst_executed", stat.second}});
  }
  nlohmann::json mappingJson = nullptr;
  if (mapping && mapping->copies) {
    // The copies' own check, and the run's: counted over every PC, the mapping run executed as
    // many instructions as the reference run did (the copies ran in place of the calls).
    const CopyRunCounts counted = copyRunCounts(*mapping, reference, index, options.kernel);
    double mappingTotal = 0.0;
    for (const auto& [pc, n] : counted.byPc) mappingTotal += n;
    const double referenceTotal = total.metrics.contains(inst) ? total.metrics.at(inst) : 0.0;
    nlohmann::json totals = {{"mapping", mappingTotal}};
    if (options.countsInstructions) {
      totals["reference"] = referenceTotal;
      totals["equal"] = mappingTotal == referenceTotal;
      if (mappingTotal != referenceTotal && !mapping->copies->empty())
        reasons.push_back(
            {{"reason", fmt::format("the mapping run executed {} warp instructions, the reference "
                                    "run {}: the copies' counts are not the reference run's",
                                    mappingTotal, referenceTotal)},
             {"pcs", 0},
             {"inst_executed", 0}});
    }
    totals["padding_after_returns"] = counted.padding;
    mappingJson = {{"method", "callee_copies"},
                   {"copies", mapping->copies->size()},
                   {"check", mapping->copyCheck},
                   {"kernel_total_inst_executed", std::move(totals)}};
  } else if (mapping) {
    const PcJoin join = joinBuilds(reference, mapping->pcmap);
    nlohmann::json mismatches = nlohmann::json::array();
    for (const auto& m : join.mismatches) mismatches.push_back(toJson(m));
    mappingJson = {{"joined_pcs", join.mappingOf.size()}, {"mismatches", std::move(mismatches)}};
  }
  const bool exact = reasons.empty();
  return nlohmann::json{
      {"schema", "argus.attribution/1"},
      {"kernel", options.kernel},
      {"qualification", "attributed"},
      {"exact", exact},
      {"estimate", !exact},
      {"estimate_reasons", std::move(reasons)},
      {"mapping", std::move(mappingJson)},
      {"regions", std::move(regionsJson)},
      {"source_files", std::move(filesJson)},
      {"total", render(total, false)},
      {"ambiguous_pcs", std::move(ambiguousPcs)},
  };
}

}  // namespace argus::synthesis
