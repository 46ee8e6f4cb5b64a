#include "argus/ptx/derive.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/ptx/regions.h"
#include "ptx_test_util.h"

namespace argus::ptx {
namespace {

using testing::functionRegions;
using testing::kernelPtx;
using testing::parseOrDie;
using testing::regionPaths;

/// A fixture of tests/data/ptx (README.md there says how each was made).
Module fixture(const std::string& name) {
  std::ifstream in(std::filesystem::path(ARGUS_TEST_DATA_DIR) / "ptx" / name);
  std::stringstream text;
  text << in.rdbuf();
  auto module = parseModule(text.str(), name);
  EXPECT_TRUE(module.has_value()) << (module ? "" : module.error().text());
  return module ? std::move(*module) : Module{};
}

RegionDefinitions list(const std::string& text) {
  auto defs = definitionsFromList(text);
  EXPECT_TRUE(defs.has_value()) << (defs ? "" : defs.error().text());
  return defs ? *defs : RegionDefinitions{};
}

/// Derives, prints, parses and analyzes: the regions every later pass sees.
Result<std::vector<FunctionRegions>> derived(Module& module, const RegionDefinitions& defs) {
  auto placed = deriveRegions(module, defs);
  if (!placed) return std::unexpected(placed.error());
  auto again = parseModule(printModule(module), module.fileName);
  if (!again) return std::unexpected(again.error());
  return analyzeRegions(*again);
}

const Region* find(const FunctionRegions& f, const std::string& path) {
  for (const auto& r : f.regions)
    if (r.path == path) return &r;
  return nullptr;
}

constexpr const char* kNested = "_Z6nestedPfPKffii";

TEST(DeriveRegions, LoopsNestAsTheyNestAndAreNamedByTheirLine) {
  Module m = fixture("derive_loops.ptx");
  auto regions = derived(m, list("loops"));
  ASSERT_TRUE(regions) << regions.error().text();
  const auto& k = functionRegions(*regions, kNested);
  // The `for r` loop (line 12) holds the `for k` loop (line 13); nvcc unrolls the inner one by
  // 4 with a remainder, and both of its loops are code of line 13: one region.
  const std::vector<std::string> want{"loop_derive_loops_12",
                                      "loop_derive_loops_12/loop_derive_loops_13"};
  EXPECT_EQ(regionPaths(k), want);
  const Region* outer = find(k, "loop_derive_loops_12");
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->selector, "loops");
  EXPECT_EQ(outer->id, regionId(kNested, "loop_derive_loops_12"));
  // The helper's loop is in a .func: derived regions are the kernels'.
  for (const auto& f : *regions)
    if (!f.isEntry) {
      EXPECT_TRUE(f.regions.empty()) << f.function;
    }
}

TEST(DeriveRegions, OpsNestInsideTheLoopsThatHoldThem) {
  Module m = fixture("derive_loops.ptx");
  auto regions = derived(m, list("loops,ops,op:ld_global,func:_Z5scalefi"));
  ASSERT_TRUE(regions) << regions.error().text();
  const auto& k = functionRegions(*regions, kNested);
  const auto p = regionPaths(k);
  auto has = [&](const std::string& path) {
    return std::find(p.begin(), p.end(), path) != p.end();
  };
  EXPECT_TRUE(has("loop_derive_loops_12/bar_sync")) << ::testing::PrintToString(p);
  EXPECT_TRUE(has("loop_derive_loops_12/loop_derive_loops_13/ld_global"));
  EXPECT_TRUE(has("_Z5scalefi")) << "the call of the helper, with its parameter passing";
  const Region* call = find(k, "_Z5scalefi");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->selector, "func:_Z5scalefi");
  EXPECT_GE(call->instructions, 1u);
}

/// The `iter=` operands of a region's begins (one per begin marker).
std::vector<std::string> iterations(const Region& r) {
  std::vector<std::string> out;
  for (const auto& b : r.begins) out.push_back(b.iteration);
  return out;
}

TEST(DeriveRegions, RegionsInsideALoopCarryItsTripNumber) {
  Module m = fixture("derive_loops.ptx");
  auto regions = derived(m, list("loops,ops,op:ld_global"));
  ASSERT_TRUE(regions) << regions.error().text();
  const auto& k = functionRegions(*regions, kNested);
  const Region* outer = find(k, "loop_derive_loops_12");
  const Region* inner = find(k, "loop_derive_loops_12/loop_derive_loops_13");
  const Region* barrier = find(k, "loop_derive_loops_12/bar_sync");
  const Region* load = find(k, "loop_derive_loops_12/loop_derive_loops_13/ld_global");
  ASSERT_TRUE(outer && inner && barrier && load);
  // The outer loop is entered once: no iteration. The inner loop is entered once per trip of
  // the outer one, so it carries the outer trip, as does the barrier; the loads the inner trip.
  for (const auto& it : iterations(*outer)) EXPECT_EQ(it, "") << "outer loop";
  ASSERT_FALSE(barrier->begins.empty());
  const std::string outerTrip = barrier->begins.front().iteration;
  EXPECT_TRUE(outerTrip.starts_with("%argustrip_")) << outerTrip;
  for (const auto& it : iterations(*inner)) EXPECT_EQ(it, outerTrip);
  ASSERT_FALSE(load->begins.empty());
  const std::string innerTrip = load->begins.front().iteration;
  EXPECT_TRUE(innerTrip.starts_with("%argustrip_")) << innerTrip;
  EXPECT_NE(innerTrip, outerTrip);
  for (const auto& it : iterations(*load)) EXPECT_EQ(it, innerTrip);

  // The counters are comments: a reset before the loop, a step at the top of its header.
  const Function* f = m.findFunction(kNested);
  ASSERT_NE(f, nullptr);
  std::map<std::string, std::vector<std::string>> steps;  // reg -> kinds in body order
  for (const auto& s : f->body) {
    if (s.kind != Statement::Kind::Comment) continue;
    if (auto trip = parseTripCounter(s.text))
      steps[trip->reg].push_back(trip->reset ? "reset" : "step");
  }
  EXPECT_EQ(steps[outerTrip], (std::vector<std::string>{"reset", "step"}));
  EXPECT_EQ(steps[innerTrip].size(), 2u);  // the inner reset sits after the outer header
  for (size_t i = 0; i < f->body.size(); ++i) {
    if (f->body[i].kind != Statement::Kind::Comment) continue;
    auto trip = parseTripCounter(f->body[i].text);
    if (!trip || trip->reset) continue;
    size_t before = i;  // over the other counters placed after the same label
    while (before > 0 && f->body[before - 1].kind == Statement::Kind::Comment &&
           parseTripCounter(f->body[before - 1].text))
      --before;
    ASSERT_GT(before, 0u);
    EXPECT_EQ(f->body[before - 1].kind, Statement::Kind::Label) << "a step follows its label";
  }
  // A second derivation on the derived module writes no second counter of a loop.
  Module again = fixture("derive_loops.ptx");
  ASSERT_TRUE(deriveRegions(again, list("loops")));
  ASSERT_TRUE(deriveRegions(again, list("ops,op:ld_global")));
  size_t outerSteps = 0;
  for (const auto& s : again.findFunction(kNested)->body)
    if (s.kind == Statement::Kind::Comment && s.text == "@argus trip " + outerTrip + " step")
      ++outerSteps;
  EXPECT_EQ(outerSteps, 1u);

  // Lowered, each counter is one register, its reset a mov and its step an add; no trip
  // comments remain.
  Function lowered = *f;
  EXPECT_EQ(lowerTripCounters(lowered), steps[outerTrip].size() + steps[innerTrip].size());
  size_t decls = 0, movs = 0, adds = 0;
  for (const auto& s : lowered.body) {
    if (s.kind == Statement::Kind::Comment) {
      EXPECT_FALSE(parseTripCounter(s.text)) << s.text;
    }
    if (s.kind == Statement::Kind::Variable && s.variable.name.starts_with("%argustrip_")) ++decls;
    if (s.kind != Statement::Kind::Instruction || s.instruction.operands.empty() ||
        !s.instruction.operands[0].text.starts_with("%argustrip_"))
      continue;
    movs += s.instruction.opcode == "mov.b32";
    adds += s.instruction.opcode == "add.s32";
  }
  EXPECT_EQ(decls, 2u);
  EXPECT_EQ(movs, 2u);
  EXPECT_EQ(adds, 2u);
  EXPECT_EQ(lowerTripCounters(lowered), 0u) << "lowering twice changes nothing";
}

TEST(DeriveRegions, AMalformedTripCounterIsAnErrorThatSaysWhatItShouldBe) {
  auto bad = parseMarker(" @argus trip %r1 step");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("malformed trip counter"), std::string::npos);
  EXPECT_FALSE(parseTripCounter(" @argus trip %argustrip_x jump"));
  auto good = parseMarker(" @argus trip %argustrip_L__BB0_3 reset");
  ASSERT_TRUE(good.has_value());
  EXPECT_FALSE(good->has_value()) << "a trip counter is no region marker";
}

TEST(DeriveRegions, IdsAreTheSameAfterARecompileWithOtherFlags) {
  // -O3 and -O1 builds differ in every PC and most instructions; the IDs come from the path.
  Module a = fixture("derive_loops.ptx");
  auto ra = derived(a, list("loops"));
  ASSERT_TRUE(ra) << ra.error().text();
  std::vector<std::string> ids;
  for (const auto& r : functionRegions(*ra, kNested).regions) ids.push_back(r.id);
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[1], regionId(kNested, "loop_derive_loops_12/loop_derive_loops_13"));
}

TEST(DeriveRegions, RefinesAMarkedRegionByOperations) {
  Module m = fixture("examples_tma_gemm.ptx");
  RegionDefinitions defs;
  RegionDefinition refine;
  refine.refine = "mainloop";
  refine.origin = "test";
  RegionDefinition wait;
  wait.name = "wait";
  wait.select = "op:mbarrier_wait";
  wait.origin = "test";
  refine.children.push_back(wait);
  defs.regions.push_back(refine);
  auto regions = derived(m, defs);
  ASSERT_TRUE(regions) << regions.error().text();
  const auto& k = *std::find_if(regions->begin(), regions->end(),
                                [](const FunctionRegions& f) { return f.isEntry; });
  const auto p = regionPaths(k);
  EXPECT_NE(std::find(p.begin(), p.end(), "mainloop/wait"), p.end()) << ::testing::PrintToString(p);
  const Region* w = find(k, "mainloop/wait");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->selector, "op:mbarrier_wait");
}

TEST(DeriveRegions, AWaitRegionTakesItsWholeSpinLoop) {
  Module m = fixture("examples_tma_gemm.ptx");
  auto regions = derived(m, list("op:mbarrier_wait"));
  ASSERT_TRUE(regions) << regions.error().text();
  const auto& k = *std::find_if(regions->begin(), regions->end(),
                                [](const FunctionRegions& f) { return f.isEntry; });
  for (const auto& r : k.regions)
    if (r.name == "mbarrier_wait") {
      // The example polls try_wait in a C++ loop: the asm block (try_wait, selp), the test of
      // its result and the branch back, per wait.
      EXPECT_EQ(r.instructions, 4u * r.begins.size()) << r.path;
    }
}

TEST(DeriveRegions, SelectorsThatCannotBeRegionsSayWhyAndWhatWouldWork) {
  Module m = fixture("derive_loops.ptx");
  auto noLoop = deriveRegions(m, list("loop:derive_loops.cu:99"));
  ASSERT_FALSE(noLoop);
  EXPECT_NE(noLoop.error().message.find("no loop has its back edge at derive_loops.cu:99"),
            std::string::npos)
      << noLoop.error().message;
  EXPECT_NE(noLoop.error().message.find("derive_loops.cu:12"), std::string::npos);
  EXPECT_NE(noLoop.error().message.find("#pragma unroll 1"), std::string::npos);

  Module named = fixture("derive_loops.ptx");
  RegionDefinitions other = list("loops");
  other.kernel = "gemm";
  auto noKernel = deriveRegions(named, other);
  ASSERT_FALSE(noKernel);
  EXPECT_NE(noKernel.error().message.find("no kernel's name contains `gemm`"), std::string::npos);
  EXPECT_NE(noKernel.error().message.find("_Z6nestedPfPKffii"), std::string::npos)
      << noKernel.error().message;

  Module m2 = fixture("derive_loops.ptx");
  auto noOp = deriveRegions(m2, list("op:wgmma"));
  ASSERT_FALSE(noOp);
  EXPECT_NE(noOp.error().message.find("no wgmma instruction"), std::string::npos);
  EXPECT_NE(noOp.error().message.find("bar_sync x1"), std::string::npos) << noOp.error().message;

  EXPECT_FALSE(parseSelector("loop:"));
  EXPECT_FALSE(parseSelector("lines:k.cu:9-3"));
  EXPECT_FALSE(parseSelector("op:tensorcore"));
  EXPECT_FALSE(parseSelector("loops "));
  auto unknown = parseSelector("warp:3");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("loop:[FILE:]LINE"), std::string::npos);
}

TEST(DeriveRegions, ALineRangeWithTwoEntriesIsRefused) {
  // `acc += a * x[k]` (line 14) is spread over the unrolled copies and the remainder: entered
  // at several places.
  Module m = fixture("derive_loops.ptx");
  auto scattered = deriveRegions(m, list("lines:derive_loops.cu:14-14"));
  ASSERT_FALSE(scattered);
  EXPECT_NE(scattered.error().message.find("entered at"), std::string::npos)
      << scattered.error().message;
  EXPECT_NE(scattered.error().message.find("loop:LINE"), std::string::npos);
  // The whole function body from its first line to its last has one entry.
  Module whole = fixture("derive_loops.ptx");
  auto body = derived(whole, list("lines:derive_loops.cu:10-18"));
  ASSERT_TRUE(body) << body.error().text();
  EXPECT_NE(find(functionRegions(*body, kNested), "lines_derive_loops_10_18"), nullptr);
}

TEST(DeriveRegions, ALoopEnteredByABranchGetsItsBeginOnATrampoline) {
  // A loop whose preheader branches into the header while the back edge falls into it.
  const std::string body =
      "\tmov.u32 %r1, 0;\n"
      "\tsetp.eq.u32 %p1, %r1, 7;\n"
      "\t@%p1 bra $L__BB0_2;\n"
      "\tbra.uni $L__BB0_1;\n"
      "$L__BB0_1:\n"
      "\t.loc 1 5 3\n"
      "\tadd.u32 %r1, %r1, 1;\n"
      "\tsetp.lt.u32 %p2, %r1, 10;\n"
      "\t@%p2 bra $L__BB0_1;\n"
      "$L__BB0_2:\n"
      "\tret;\n";
  Module m = parseOrDie(kernelPtx(body));
  auto regions = derived(m, list("loops"));
  ASSERT_TRUE(regions) << regions.error().text();
  const auto printed = printModule(m);
  EXPECT_NE(printed.find("$argus_derived_"), std::string::npos) << printed;
  const auto& k = regions->front();
  ASSERT_EQ(k.regions.size(), 1u);
  EXPECT_EQ(k.regions[0].path, "loop_k_5");
  // The loop's three instructions and the trampoline's branch on into the header.
  EXPECT_EQ(k.regions[0].instructions, 4u) << printed;
}

TEST(DeriveRegions, DefinitionsFromAList) {
  auto defs = definitionsFromList("loops, ops");
  ASSERT_TRUE(defs);
  EXPECT_GE(defs->regions.size(), 7u);
  EXPECT_TRUE(defs->regions.back().optional);
  EXPECT_FALSE(definitionsFromList("loops,,ops"));
  EXPECT_FALSE(definitionsFromList("loop:x"));
}

TEST(DeriveRegions, ACutlassKernelGetsItsPipelineStructureWithoutEditingIt) {
  // CUTLASS example 54 (tests/data/ptx/README.md): a producer warp group's tile loop holding
  // its K loop of TMA loads and waits, and the consumer warp groups' tile loop holding their K
  // loop of WGMMAs. Loops are named after the CUTLASS headers' lines of their back edges.
  Module m = fixture("cutlass_54_fp8_gemm.ptx");
  auto regions = derived(m, list("loops,ops"));
  ASSERT_TRUE(regions) << regions.error().text();
  const auto& k = *std::find_if(regions->begin(), regions->end(),
                                [](const FunctionRegions& f) { return f.isEntry; });
  const auto p = regionPaths(k);
  auto has = [&](const std::string& path) {
    return std::find(p.begin(), p.end(), path) != p.end();
  };
  const std::string producerK =
      "loop_sm90_gemm_tma_warpspecialized_cooperative_591/"
      "loop_sm90_mma_tma_gmma_ss_warpspecialized_fp8_370";
  const std::string consumerK =
      "loop_sm90_gemm_tma_warpspecialized_cooperative_761/"
      "loop_sm90_mma_tma_gmma_ss_warpspecialized_fp8_519";
  EXPECT_TRUE(has(producerK + "/tma_load")) << ::testing::PrintToString(p);
  EXPECT_TRUE(has(producerK + "/mbarrier_wait"));
  EXPECT_TRUE(has(consumerK + "/wgmma"));
  EXPECT_TRUE(has(consumerK + "/mbarrier_wait"));
  EXPECT_TRUE(has(consumerK + "/wgmma_wait"));
  EXPECT_TRUE(has("loop_sm90_gemm_tma_warpspecialized_cooperative_761/tma_store"));
  // Every TMA load of the producer's K loop is in its tma_load region: two per stage (A and B).
  const Region* loads = find(k, producerK + "/tma_load");
  ASSERT_NE(loads, nullptr);
  EXPECT_EQ(loads->instructions, 2u);
  EXPECT_EQ(loads->selector, "op:tma_load");
  // The loads carry the K loop's trip, the K loop the tile loop's.
  ASSERT_FALSE(loads->begins.empty());
  EXPECT_TRUE(loads->begins.front().iteration.starts_with("%argustrip_"));
  const Region* kLoop = find(k, producerK);
  ASSERT_NE(kLoop, nullptr);
  ASSERT_FALSE(kLoop->begins.empty());
  EXPECT_TRUE(kLoop->begins.front().iteration.starts_with("%argustrip_"));
  EXPECT_NE(kLoop->begins.front().iteration, loads->begins.front().iteration);
}

TEST(DeriveRegions, TritonKernelsOfPackagesGetTheirKLoops) {
  // geak-eval's TritonBench-G matmul (make_package_fixtures.py): Triton pipelines its K loop
  // with cp.async and WGMMA; the loop's name is the package file's line of its back edge.
  Module m = fixture("triton_pkg_geak_eval_matmul_kernel.ptx");
  auto regions = derived(m, list("loops,ops"));
  ASSERT_TRUE(regions) << regions.error().text();
  const auto p = regionPaths(regions->front());
  for (const char* path : {"loop_matmul_kernel_28/cp_async", "loop_matmul_kernel_28/wgmma",
                           "loop_matmul_kernel_28/wgmma_wait", "loop_matmul_kernel_28/bar_sync"})
    EXPECT_NE(std::find(p.begin(), p.end(), path), p.end())
        << path << " in " << ::testing::PrintToString(p);
  // liger-kernel's cross entropy: three loops over the vocabulary, none nested.
  Module ce = fixture("triton_pkg_liger_kernel_cross_entropy_fwd.ptx");
  auto ceRegions = derived(ce, list("loops"));
  ASSERT_TRUE(ceRegions) << ceRegions.error().text();
  EXPECT_EQ(regionPaths(ceRegions->front()).size(), 3u)
      << ::testing::PrintToString(regionPaths(ceRegions->front()));
  // A derived begin takes its region's first line, not the preheader's `.loc` (line 0 there).
  for (const auto& r : ceRegions->front().regions)
    for (const auto& b : r.begins) EXPECT_NE(b.source.line, 0u) << r.path;
}

}  // namespace
}  // namespace argus::ptx
