// Attribution on synthetic maps: single-owner PCs need no counts; a shared callee called from two
// regions with different trip counts is split exactly by the mapping run (and call-count weighting
// would be wrong); without a mapping run the result is an estimate with its reason; ratios lift
// numerator and denominator; join mismatches are reported; unknown PCs are refused.
#include "argus/synthesis/attribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace argus::synthesis {
namespace {

using sass::PcEntry;
using sass::PcOwner;

const std::string kInst(kInstExecuted);

PcEntry entry(uint64_t pc, std::string opcode, std::string body, std::string ptxFunction,
              size_t statement, std::vector<PcOwner> owners, std::string file = "k.cu") {
  PcEntry e;
  e.function = "k";
  e.pc = pc;
  e.opcode = opcode;
  e.instruction = std::move(opcode);
  e.line = static_cast<uint32_t>(statement + 1);
  e.body = std::move(body);
  e.ptxFunction = ptxFunction;
  e.ptxStatement = statement;
  e.originFunction = std::move(ptxFunction);
  e.originStatement = statement;
  e.owners = std::move(owners);
  e.sourceFile = std::move(file);
  return e;
}

// Reference build: the kernel's own loop in `light` (FFMA, 6 per warp), a load outside every
// region, and helper h (FFMA loop body, RET) called 6 times with 4 trips from `light` and twice
// with 96 trips from `heavy`.
std::vector<PcEntry> referenceMap() {
  const std::vector<PcOwner> both = {{"k", "heavy"}, {"k", "light"}};
  return {
      entry(0x00, "LDG.E", "k", "k", 3, {{"k", ""}}),
      entry(0x10, "FFMA", "k", "k", 7, {{"k", "light"}}),
      entry(0x20, "EXIT", "k", "k", 20, {{"k", ""}}),
      entry(0x30, "FFMA", "h", "h", 2, both, "helper.cuh"),
      entry(0x40, "RET.REL.NODEC", "h", "h", 4, both, "helper.cuh"),
  };
}

std::vector<PcMetrics> referenceMetrics() {
  return {
      {"k", 0x00, {{kInst, 1}, {"sectors", 4}, {"requests", 1}}},
      {"k", 0x10, {{kInst, 6}}},
      {"k", 0x20, {{kInst, 1}}},
      {"k", 0x30, {{kInst, 6 * 4 + 2 * 96}}},
      {"k", 0x40, {{kInst, 6 + 2}}},
  };
}

// Mapping build: one copy of h per region, placed after the kernel; the kernel's PCs moved.
MappingRun mappingRun() {
  auto copy = [](uint64_t pc, std::string opcode, const std::string& region, size_t statement) {
    PcEntry e = entry(pc, std::move(opcode), "h__" + region, "h__" + region, statement,
                      {{"k", region}}, "helper.cuh");
    e.originFunction = "h";
    return e;
  };
  MappingRun run;
  run.pcmap = {
      entry(0x00, "LDG.E", "k", "k", 3, {{"k", ""}}),
      entry(0x10, "MOV", "k", "k", 5, {{"k", "light"}}),  // an extra instruction in this build
      entry(0x20, "FFMA", "k", "k", 7, {{"k", "light"}}),
      entry(0x30, "EXIT", "k", "k", 20, {{"k", ""}}),
      copy(0x40, "FFMA", "light", 2),
      copy(0x50, "RET.REL.NODEC", "light", 4),
      copy(0x60, "FFMA", "heavy", 2),
      copy(0x70, "RET.REL.NODEC", "heavy", 4),
  };
  run.counts = {
      {"k", 0x00, {{kInst, 1}}},      {"k", 0x10, {{kInst, 1}}},     {"k", 0x20, {{kInst, 6}}},
      {"k", 0x30, {{kInst, 1}}},      {"k", 0x40, {{kInst, 6 * 4}}}, {"k", 0x50, {{kInst, 6}}},
      {"k", 0x60, {{kInst, 2 * 96}}}, {"k", 0x70, {{kInst, 2}}},
  };
  return run;
}

double value(const nlohmann::json& report, const std::string& region, const std::string& what) {
  return report["regions"][region][what]["value"].get<double>();
}

TEST(Attribution, MappingRunSplitsASharedCalleeExactly) {
  AttributionOptions options{"k", {{"sectors_per_request", "sectors", "requests"}}};
  auto report = attribute(referenceMap(), referenceMetrics(), mappingRun(), options);
  ASSERT_TRUE(report.has_value()) << report.error().text();
  const auto& r = *report;
  EXPECT_TRUE(r["exact"].get<bool>()) << r.dump(2);
  EXPECT_FALSE(r["estimate"].get<bool>());
  EXPECT_EQ(r["qualification"], "attributed");
  // The MOV only the mapping build has is reported; it owns no reference PC.
  ASSERT_EQ(r["mapping"]["mismatches"].size(), 1u) << r["mapping"].dump();
  EXPECT_EQ(r["mapping"]["mismatches"][0]["reference_pcs"], 0);
  EXPECT_EQ(r["mapping"]["mismatches"][0]["statement"], 5);

  // Ground truth by construction: light = own loop 6 + 6 calls x (4 FFMA + 1 RET) = 36,
  // heavy = 2 calls x (96 + 1) = 194, outside = 2.
  EXPECT_DOUBLE_EQ(value(r, "light", "inst_executed"), 36.0);
  EXPECT_DOUBLE_EQ(value(r, "heavy", "inst_executed"), 194.0);
  EXPECT_DOUBLE_EQ(value(r, std::string(kOutsideRegions), "inst_executed"), 2.0);
  EXPECT_DOUBLE_EQ(r["total"]["inst_executed"]["value"].get<double>(), 232.0);
  EXPECT_EQ(r["regions"]["light"]["inst_executed"]["qualification"], "attributed");

  // Call-count weighting (6 : 2 calls) would give light 6 + 3/4 of the helper's 224 = 174.
  const double callWeighted = 6.0 + 0.75 * (216.0 + 8.0);
  EXPECT_NE(value(r, "light", "inst_executed"), callWeighted);

  // Instruction classes, memory and barrier counts follow the opcodes.
  EXPECT_DOUBLE_EQ(r["regions"]["heavy"]["inst_mix"]["fp32"]["value"].get<double>(), 192.0);
  EXPECT_DOUBLE_EQ(r["regions"]["heavy"]["inst_mix"]["control"]["value"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(value(r, std::string(kOutsideRegions), "mem_inst"), 1.0);
  EXPECT_DOUBLE_EQ(value(r, "light", "barrier_inst"), 0.0);

  // Ambiguity: every heavy instruction comes from a shared PC; light's own loop does not.
  EXPECT_DOUBLE_EQ(r["regions"]["heavy"]["ambiguity"]["ambiguous_share"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(r["regions"]["light"]["ambiguity"]["ambiguous_share"].get<double>(),
                   30.0 / 36.0);
  const double a = 24.0 / 216.0;
  const double h = -(a * std::log2(a) + (1 - a) * std::log2(1 - a));
  ASSERT_EQ(r["ambiguous_pcs"].size(), 2u);
  EXPECT_NEAR(r["ambiguous_pcs"][0]["entropy"].get<double>(), h, 1e-12);
  EXPECT_EQ(r["ambiguous_pcs"][0]["method"], "mapping_run");

  // Ratios lift numerator and denominator; the per-file view is static.
  const auto& ratio = r["regions"][std::string(kOutsideRegions)]["ratios"]["sectors_per_request"];
  EXPECT_DOUBLE_EQ(ratio["numerator"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(ratio["denominator"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(ratio["value"].get<double>(), 4.0);
  EXPECT_TRUE(r["regions"]["heavy"]["ratios"]["sectors_per_request"]["value"].is_null());
  EXPECT_DOUBLE_EQ(r["source_files"]["helper.cuh"]["inst_executed"]["value"].get<double>(), 224.0);
  EXPECT_DOUBLE_EQ(r["source_files"]["k.cu"]["inst_executed"]["value"].get<double>(), 8.0);
}

TEST(Attribution, WithoutAMappingRunSharedPcsAreALabelledEstimate) {
  auto report = attribute(referenceMap(), referenceMetrics(), std::nullopt, {"k", {}});
  ASSERT_TRUE(report.has_value()) << report.error().text();
  const auto& r = *report;
  EXPECT_FALSE(r["exact"].get<bool>());
  EXPECT_TRUE(r["estimate"].get<bool>());
  ASSERT_EQ(r["estimate_reasons"].size(), 1u);
  EXPECT_NE(r["estimate_reasons"][0]["reason"].get<std::string>().find("no mapping run"),
            std::string::npos);
  EXPECT_EQ(r["estimate_reasons"][0]["pcs"], 2);
  EXPECT_DOUBLE_EQ(value(r, "heavy", "inst_executed"), 112.0);  // an equal share, not the truth
  EXPECT_EQ(r["ambiguous_pcs"][0]["method"], "estimate");
}

TEST(Attribution, SingleOwnerCodeIsExactWithoutAMappingRun) {
  auto map = referenceMap();
  map.resize(3);  // no helper
  auto metrics = referenceMetrics();
  metrics.resize(3);
  auto report = attribute(map, metrics, std::nullopt, {"k", {}});
  ASSERT_TRUE(report.has_value()) << report.error().text();
  EXPECT_TRUE((*report)["exact"].get<bool>());
  EXPECT_DOUBLE_EQ(value(*report, "light", "inst_executed"), 6.0);
}

TEST(Attribution, JoinReportsGroupsOfDifferentSizeAndFallsBackToALabelledEstimate) {
  MappingRun run = mappingRun();
  // The heavy copy's FFMA became two SASS instructions in this build: no guessing.
  PcEntry extra = run.pcmap[6];
  extra.pc = 0x68;
  run.pcmap.insert(run.pcmap.begin() + 7, extra);
  const PcJoin join = joinBuilds(referenceMap(), run.pcmap);
  ASSERT_EQ(join.mismatches.size(), 2u);  // the extra MOV, and this
  auto at = std::find_if(join.mismatches.begin(), join.mismatches.end(),
                         [](const JoinMismatch& x) { return x.ptxFunction == "h"; });
  ASSERT_NE(at, join.mismatches.end());
  const JoinMismatch& m = *at;
  EXPECT_EQ(m.ptxFunction, "h");
  EXPECT_EQ(m.statement, 2u);
  EXPECT_EQ(m.referencePcs, 1u);
  EXPECT_EQ(m.mappingPcs, 2u);
  EXPECT_EQ(m.unjoinedReferencePcs, 1u);
  EXPECT_EQ(m.mappingBody, "h__heavy");

  auto report = attribute(referenceMap(), referenceMetrics(), run, {"k", {}});
  ASSERT_TRUE(report.has_value());
  const auto& r = *report;
  EXPECT_TRUE(r["estimate"].get<bool>());
  ASSERT_EQ(r["estimate_reasons"].size(), 1u);
  EXPECT_NE(r["estimate_reasons"][0]["reason"].get<std::string>().find("heavy lack"),
            std::string::npos)
      << r["estimate_reasons"].dump();
}

TEST(Attribution, JoinPairsByOpcodeWhenAGroupGainsAnInstruction) {
  MappingRun run = mappingRun();
  // The light copy's FFMA group gained a parameter load before it (ptxas moved it from the
  // call site): the FFMA still pairs, the extra LDC has no reference partner.
  PcEntry load = run.pcmap[4];
  load.pc = 0x3c;
  load.opcode = "LDC";
  run.pcmap.insert(run.pcmap.begin() + 4, load);
  const PcJoin join = joinBuilds(referenceMap(), run.pcmap);
  ASSERT_EQ(join.mismatches.size(), 2u);
  for (const auto& m : join.mismatches) EXPECT_EQ(m.unjoinedReferencePcs, 0u);
  auto report = attribute(referenceMap(), referenceMetrics(), run, {"k", {}});
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE((*report)["exact"].get<bool>()) << (*report)["estimate_reasons"].dump();
  EXPECT_DOUBLE_EQ(value(*report, "heavy", "inst_executed"), 194.0);
}

TEST(Attribution, JoinPairsByPtxInstructionAndOrder) {
  const auto reference = referenceMap();
  const auto run = mappingRun();
  const PcJoin join = joinBuilds(reference, run.pcmap);
  EXPECT_EQ(join.mismatches.size(), 1u);  // the mapping-only MOV
  // Reference FFMA of h (index 3) <- both copies' FFMAs (mapping indices 4 and 6).
  auto ffma = join.mappingOf.at(3);
  std::sort(ffma.begin(), ffma.end());
  EXPECT_EQ(ffma, (std::vector<size_t>{4, 6}));
  // The kernel's FFMA moved from 0x10 to 0x20 and still joins.
  EXPECT_EQ(join.mappingOf.at(1), (std::vector<size_t>{2}));
}

TEST(Attribution, MetricsKeyedByCalledBodyResolveAndUnknownPcsAreRefused) {
  auto metrics = referenceMetrics();
  metrics[3].function = "$k$h";  // offset from the body's start
  metrics[3].pc = 0x0;
  auto report = attribute(referenceMap(), metrics, mappingRun(), {"k", {}});
  ASSERT_TRUE(report.has_value()) << report.error().text();
  EXPECT_DOUBLE_EQ(value(*report, "heavy", "inst_executed"), 194.0);

  metrics.push_back({"k", 0x999, {{kInst, 1}}});
  auto bad = attribute(referenceMap(), metrics, std::nullopt, {"k", {}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("same cubin"), std::string::npos);
}

// Callee copies (sass/callee_copies.h): the reference map itself, with the calls' own regions;
// the mapping build is the reference's cubin with h copied once per call (light's at 0x100,
// heavy's at 0x180), so each copy PC's count is n(r, p) of the reference PC it runs.
struct CopiedRun {
  std::vector<PcEntry> reference;
  std::vector<PcMetrics> metrics;
  MappingRun mapping;
};

CopiedRun copiedRun() {
  const std::vector<PcOwner> both = {{"k", "heavy"}, {"k", "light"}};
  auto own = [](PcEntry e, std::vector<std::string> regions) {
    e.regions = std::move(regions);
    return e;
  };
  CopiedRun r;
  r.reference = {
      own(entry(0x00, "LDG.E", "k", "k", 3, {{"k", ""}}), {}),
      own(entry(0x10, "CALL.REL.NOINC", "k", "k", 7, {{"k", "light"}}), {"light"}),
      own(entry(0x20, "CALL.REL.NOINC", "k", "k", 9, {{"k", "heavy"}}), {"heavy"}),
      own(entry(0x30, "EXIT", "k", "k", 20, {{"k", ""}}), {}),
      own(entry(0x40, "FFMA", "h", "h", 2, both, "helper.cuh"), {}),
      own(entry(0x50, "RET.REL.NODEC", "h", "h", 4, both, "helper.cuh"), {}),
      entry(0x60, "BRA", "h", "h", 5, {}, "helper.cuh"),  // padding after the RET
  };
  r.reference.back().padding = true;
  r.reference.back().line.reset();
  r.metrics = {{"k", 0x00, {{kInst, 1}}},
               {"k", 0x10, {{kInst, 6}}},
               {"k", 0x20, {{kInst, 2}}},
               {"k", 0x30, {{kInst, 1}}},
               {"k", 0x40, {{kInst, 6 * 4 + 2 * 96}}},
               {"k", 0x50, {{kInst, 8}}}};
  auto copy = [](uint64_t offset, uint64_t site) {
    sass::CalleeCopy c;
    c.original = {"$k$h", 0x40, 0x30};
    c.offset = offset;
    c.callSites = {site};
    c.context = {site};
    return c;
  };
  r.mapping.copies = std::vector<sass::CalleeCopy>{copy(0x100, 0x10), copy(0x180, 0x20)};
  r.mapping.copyCheck = {{"equal", true}};
  r.mapping.counts = {{"k", 0x00, {{kInst, 1}}},
                      {"k", 0x10, {{kInst, 6}}},
                      {"k", 0x20, {{kInst, 2}}},
                      {"k", 0x30, {{kInst, 1}}},
                      {"k", 0x100, {{kInst, 24}}},
                      {"k", 0x110, {{kInst, 6}}},
                      {"k", 0x180, {{kInst, 192}}},
                      {"k", 0x190, {{kInst, 2}}},
                      // CUPTI's block counters run on past light's RET: into the copy's padding
                      // and the filler before heavy's copy (neither can execute).
                      {"k", 0x120, {{kInst, 6}}},
                      {"k", 0x150, {{kInst, 6}}}};
  return r;
}

TEST(Attribution, CalleeCopiesCountEachCallPathOnTheReferencesOwnPcs) {
  const CopiedRun r = copiedRun();
  AttributionOptions options{"k", {}};
  options.countsInstructions = true;
  auto report = attribute(r.reference, r.metrics, r.mapping, options);
  ASSERT_TRUE(report.has_value()) << report.error().text();
  EXPECT_TRUE((*report)["exact"].get<bool>()) << (*report)["estimate_reasons"].dump();
  EXPECT_DOUBLE_EQ(value(*report, "light", "inst_executed"), 6 + 24 + 6);
  EXPECT_DOUBLE_EQ(value(*report, "heavy", "inst_executed"), 2 + 192 + 2);
  const auto& mapping = (*report)["mapping"];
  EXPECT_EQ(mapping["method"], "callee_copies");
  EXPECT_EQ(mapping["copies"], 2);
  EXPECT_TRUE(mapping["kernel_total_inst_executed"]["equal"].get<bool>()) << mapping.dump();
  EXPECT_EQ(mapping["kernel_total_inst_executed"]["padding_after_returns"], 12.0);
  EXPECT_EQ(ownershipWeights(r.reference, r.mapping, options).at(4).method, "callee_copies");
}

TEST(Attribution, CalleeCopiesAreAnEstimateWhereTheRunIsNotTheReferences) {
  AttributionOptions options{"k", {}};
  options.countsInstructions = true;
  // The original body ran: some call still reached it, so the copies do not hold every count.
  CopiedRun ran = copiedRun();
  ran.mapping.counts.push_back({"$k$h", 0x0, {{kInst, 3}}});
  auto report = attribute(ran.reference, ran.metrics, ran.mapping, options);
  ASSERT_TRUE(report.has_value()) << report.error().text();
  EXPECT_FALSE((*report)["exact"].get<bool>());
  EXPECT_NE((*report)["estimate_reasons"].dump().find("original body ran this PC 3 times"),
            std::string::npos)
      << (*report)["estimate_reasons"].dump();
  // Another run: the mapping run's total differs from the reference run's.
  CopiedRun other = copiedRun();
  other.mapping.counts[4].values[kInst] = 20;
  auto differs = attribute(other.reference, other.metrics, other.mapping, options);
  ASSERT_TRUE(differs.has_value());
  EXPECT_FALSE((*differs)["exact"].get<bool>());
  EXPECT_FALSE((*differs)["mapping"]["kernel_total_inst_executed"]["equal"].get<bool>());
  EXPECT_NE((*differs)["estimate_reasons"].dump().find("the reference run 234"), std::string::npos)
      << (*differs)["estimate_reasons"].dump();
}

TEST(Attribution, InstructionClassesFromSassOpcodes) {
  EXPECT_EQ(instructionClass("FFMA"), "fp32");
  EXPECT_EQ(instructionClass("HGMMA.64x128x16.F32"), "tensor");
  EXPECT_EQ(instructionClass("LDGSTS.E.BYPASS.128"), "memory");
  EXPECT_EQ(instructionClass("UTMALDG.2D"), "memory");
  EXPECT_EQ(instructionClass("SYNCS.PHASECHK.TRANS64.TRYWAIT"), "barrier");
  EXPECT_EQ(instructionClass("BAR.SYNC.DEFER_BLOCKING"), "barrier");
  EXPECT_EQ(instructionClass("MEMBAR.ALL.CTA"), "barrier");
  EXPECT_EQ(instructionClass("@P0 BRA"), "control");
  EXPECT_EQ(instructionClass("IMAD.WIDE"), "int");
  EXPECT_EQ(instructionClass("I2FP.F32.S32"), "conversion");
  EXPECT_EQ(instructionClass("FROBNICATE"), "other");
}

}  // namespace
}  // namespace argus::synthesis
