// insert_forced_wait: golden diff test, ptxas on probe variants of every async op kind (TMA via
// the expect_tx state, wgmma, cp.async, shared barrier phases), before and after
// lower_markers_to_trace, the probe description, and refusals.
#include <gtest/gtest.h>

#include <cstdlib>

#include "argus/analysis/discover.h"
#include "argus/ptx/derive.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/ptx/regions.h"
#include "argus/query/scope.h"
#include "test_util.h"

namespace argus::passes {
namespace {

using namespace testing;

TransformOptions probeOptions(const std::string& op, int64_t iteration,
                              nlohmann::json extra = nlohmann::json::object()) {
  TransformOptions options;
  options.config = {{"op", op}, {"iteration", iteration}};
  for (auto& [k, v] : extra.items()) options.config[k] = v;
  return options;
}

std::vector<std::string> opIds(const ptx::Module& module, analysis::OpKind kind) {
  auto sites = analysis::discoverAsyncOps(module, "", "");
  EXPECT_TRUE(sites.has_value()) << (sites ? "" : sites.error().text());
  std::vector<std::string> ids;
  if (!sites) return ids;
  for (const auto& s : *sites)
    if (s.kind == kind) ids.push_back(s.opId);
  return ids;
}

/// Applies the probe, checks it assembles, then traces it scoped to the iteration (the probe
/// recipe) and checks that assembles too. Returns the probe description.
nlohmann::json probeAndAssemble(const ptx::Module& base, const TransformOptions& options,
                                const std::string& stem) {
  ptx::Module module = base;
  auto result = applyTransforms(module, {"insert_forced_wait"}, options);
  EXPECT_TRUE(result.has_value()) << (result ? "" : result.error().text());
  if (!result) return {};
  const nlohmann::json probe = result->statistics["probe"];
  EXPECT_EQ(result->statistics["insert_forced_wait"]["probes"], 1);

  ptx::Module traced = base;
  TransformOptions traceOptions = options;
  auto scope =
      query::parseScope("iter=" + std::to_string(options.config["iteration"].get<int64_t>()));
  EXPECT_TRUE(scope.has_value());
  if (scope) traceOptions.scope = *scope;
  auto both =
      applyTransforms(traced, {"insert_forced_wait", "lower_markers_to_trace"}, traceOptions);
  EXPECT_TRUE(both.has_value()) << (both ? "" : both.error().text());
  if (!both) return probe;
  // The probe region is in the trace map, under the owning region.
  const std::string kernel = probe["kernel"];
  bool inMap = false;
  for (const auto& r : both->traceMap[kernel]["regions"])
    inMap = inMap || (r["path"] == probe["region"]["path"] && r["id"] == probe["region"]["id"]);
  EXPECT_TRUE(inMap) << both->traceMap[kernel].dump();

  auto dir = makeTempDir("argus-forced-wait");
  EXPECT_TRUE(dir.has_value());
  if (!dir) return probe;
  auto a = assemble(ptx::printModule(module), module.target(), *dir, stem);
  if (!a.ok && a.message.find("ptxas failed") == std::string::npos) {
    fs::remove_all(*dir);
    std::cerr << "ptxas unavailable: " << a.message << "\n";
    return probe;
  }
  auto b = assemble(ptx::printModule(traced), traced.target(), *dir, stem + "_traced");
  fs::remove_all(*dir);
  EXPECT_TRUE(a.ok) << stem << ": " << a.message;
  EXPECT_TRUE(b.ok) << stem << " traced: " << b.message;
  return probe;
}

// Golden diff test: the B-tile TMA load of tma_gemm (the last load of its phase) in iteration 5.
TEST(ForcedWaitGolden, TmaGemmLastLoadUsesExpectTxState) {
  ptx::Module module = loadModule(dataDir() / "ptx" / "examples_tma_gemm.ptx");
  ASSERT_FALSE(HasFailure());
  auto loads = opIds(module, analysis::OpKind::TmaLoad);
  ASSERT_EQ(loads.size(), 2u);
  auto result = applyTransforms(module, {"insert_forced_wait"}, probeOptions(loads[1], 5));
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string printed = ptx::printModule(module);
  const fs::path expectedPath = dataDir() / "passes" / "forced_wait_tma_gemm.expected.ptx";
  if (std::getenv("ARGUS_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(writeFile(expectedPath, printed).has_value());
  }
  auto expected = readFile(expectedPath);
  ASSERT_TRUE(expected.has_value()) << expected.error().text();
  EXPECT_EQ(printed, *expected) << "rerun with ARGUS_UPDATE_GOLDEN=1 after an intended change";

  const auto& probe = result->statistics["probe"];
  EXPECT_EQ(probe["op"], loads[1]);
  EXPECT_EQ(probe["completion_method"], "mbarrier_state");
  EXPECT_EQ(probe["region"]["name"], "probe.tma_load.1");
  EXPECT_EQ(probe["region"]["path"], "mainloop/tma_load/probe.tma_load.1");
  EXPECT_EQ(probe["region"]["id"], ptx::regionId("tma_gemm", "mainloop/tma_load/probe.tma_load.1"));
  EXPECT_EQ(probe["iteration_region"]["path"], "mainloop");
  EXPECT_EQ(probe["iteration"], 5);
  EXPECT_EQ(probe["site_line"], 212);
  EXPECT_EQ(probe["expect_tx_line"], 198);
  const auto& stats = result->statistics["insert_forced_wait"];
  EXPECT_EQ(stats["state_sinks"], 1);
  EXPECT_EQ(stats["iteration_captures"], 2);  // producer and consumer begin markers of mainloop
  EXPECT_NE(printed.find("mbarrier.arrive.expect_tx.shared::cta.b64 %argusprobe_st, [%r14]"),
            std::string::npos);
}

TEST(ForcedWait, TmaGemmEveryOpAssembles) {
  ptx::Module module = loadModule(dataDir() / "ptx" / "examples_tma_gemm.ptx");
  ASSERT_FALSE(HasFailure());
  auto loads = opIds(module, analysis::OpKind::TmaLoad);
  ASSERT_EQ(loads.size(), 2u);
  for (int64_t i : {0, 7}) {
    auto p = probeAndAssemble(module, probeOptions(loads[1], i), "tma_b");
    EXPECT_EQ(p["completion_method"], "mbarrier_state");
  }
  // The A-tile load shares its phase with the B-tile load: refused unless asked to wait after B.
  ptx::Module copy = module;
  auto refused = applyTransforms(copy, {"insert_forced_wait"}, probeOptions(loads[0], 2));
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("would never return"), std::string::npos)
      << refused.error().text();
  EXPECT_NE(refused.error().message.find(loads[1]), std::string::npos);
  auto p = probeAndAssemble(
      module, probeOptions(loads[0], 2, {{"shared_phase", "wait_after_last"}}), "tma_a");
  EXPECT_EQ(p["shared_phase_with"], nlohmann::json::array({loads[1]}));
  EXPECT_EQ(p["wait_after_line"], 212);

  auto mmas = opIds(module, analysis::OpKind::Wgmma);
  ASSERT_FALSE(mmas.empty());
  for (const std::string& op : {mmas.front(), mmas.back()}) {
    auto q = probeAndAssemble(module, probeOptions(op, 3, {{"cta", 1}}), "wgmma");
    EXPECT_EQ(q["completion_method"], "wgmma_wait_group_0");
    EXPECT_EQ(q["region"]["path"], "mainloop/mma/" + q["region"]["name"].get<std::string>());
    EXPECT_EQ(q["cta"], 1);
  }
}

TEST(ForcedWait, DerivedRegionsOfAnUneditedCutlassKernelSelectTheKLoopTrip) {
  // CUTLASS example 54 as its own sources compile (tests/data/ptx/README.md), regions derived
  // from loops and ops: the producer's TMA loads sit in the derived `tma_load` region, whose
  // begin carries the K loop's trip counter. Without it the pass had no iteration to select.
  ptx::Module module = loadDerived("cutlass_54_fp8_gemm.ptx", "loops,ops");
  ASSERT_FALSE(HasFailure());
  auto reparsed = ptx::parseModule(ptx::printModule(module), module.fileName);
  ASSERT_TRUE(reparsed.has_value()) << reparsed.error().text();
  auto sites = analysis::discoverAsyncOps(*reparsed, "", "");
  ASSERT_TRUE(sites.has_value()) << sites.error().text();
  const std::string kLoop =
      "loop_sm90_gemm_tma_warpspecialized_cooperative_591/"
      "loop_sm90_mma_tma_gmma_ss_warpspecialized_fp8_370";
  std::vector<std::string> loads;  // the K loop's, in code order: A then B
  for (const auto& s : *sites)
    if (s.kind == analysis::OpKind::TmaLoad && s.regions.front() == kLoop + "/tma_load")
      loads.push_back(s.opId);
  ASSERT_EQ(loads.size(), 2u);
  auto p = probeAndAssemble(*reparsed, probeOptions(loads.back(), 2), "cutlass_tma");
  EXPECT_EQ(p["iteration_region"]["path"], kLoop + "/tma_load") << p.dump();
  EXPECT_EQ(p["iteration"], 2);
  EXPECT_EQ(p["completion_method"], "mbarrier_state_arming_thread") << p.dump();
  EXPECT_EQ(p["expect_tx_line"], 1194) << "the arm of `@%p600 bra`, a block of its own";
  // The A-tile load shares the phase with the B-tile load: refused, unless asked to wait after
  // the B load (then timed from its issue to the completion of the whole phase).
  ptx::Module copy = *reparsed;
  auto refused = applyTransforms(copy, {"insert_forced_wait"}, probeOptions(loads.front(), 2));
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("shared_phase"), std::string::npos)
      << refused.error().text();
  auto a = probeAndAssemble(*reparsed,
                            probeOptions(loads.front(), 2, {{"shared_phase", "wait_after_last"}}),
                            "cutlass_tma_a");
  EXPECT_EQ(a["completion_method"], "mbarrier_state_arming_thread") << a.dump();
  EXPECT_EQ(a["shared_phase_with"], nlohmann::json::array({loads.back()}));
}

TEST(ForcedWait, WarpSpecializedOpsAssemble) {
  ptx::Module module = loadModule(dataDir() / "ptx" / "examples_warp_specialized.ptx");
  ASSERT_FALSE(HasFailure());
  auto loads = opIds(module, analysis::OpKind::TmaLoad);
  ASSERT_EQ(loads.size(), 2u);
  auto p = probeAndAssemble(module, probeOptions(loads[1], 1), "ws_tma");
  EXPECT_EQ(p["completion_method"], "mbarrier_state");
  EXPECT_EQ(p["iteration_region"]["path"], "producer/mainloop");
  auto mmas = opIds(module, analysis::OpKind::Wgmma);
  ASSERT_FALSE(mmas.empty());
  auto q = probeAndAssemble(module, probeOptions(mmas[1], 4), "ws_wgmma");
  EXPECT_EQ(q["iteration_region"]["path"], "consumer/mainloop");
}

/// Triton's PTX has no Argus markers; wrap its K loop in `mainloop iter=%r290` as a user would.
ptx::Module tritonWithMainloop() {
  auto text = readFile(dataDir() / "ptx" / "triton_matmul_tma.ptx");
  EXPECT_TRUE(text.has_value());
  if (!text) return {};
  std::string s = *text;
  const std::string header =
      "$L__BB0_2:                              // =>This Inner Loop Header: Depth=1\n";
  const std::string latch = "\t@%p31 bra \t$L__BB0_2;\n";
  size_t h = s.find(header);
  size_t l = s.find(latch);
  EXPECT_NE(h, std::string::npos);
  EXPECT_NE(l, std::string::npos);
  if (h == std::string::npos || l == std::string::npos) return {};
  s.insert(l, "\t// @argus end mainloop\n");
  s.insert(h + header.size(), "\t// @argus begin mainloop iter=%r290\n");
  auto m = ptx::parseModule(s, "triton_matmul_tma_marked.ptx");
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().text());
  return m ? *m : ptx::Module{};
}

TEST(ForcedWait, TritonMatmul) {
  // Without markers there is no iteration to select.
  ptx::Module plain = loadModule(dataDir() / "ptx" / "triton_matmul_tma.ptx");
  auto mmas = opIds(plain, analysis::OpKind::Wgmma);
  ASSERT_FALSE(mmas.empty());
  auto none = applyTransforms(plain, {"insert_forced_wait"}, probeOptions(mmas[0], 0));
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("outside every region"), std::string::npos)
      << none.error().text();

  ptx::Module module = tritonWithMainloop();
  ASSERT_FALSE(HasFailure());
  mmas = opIds(module, analysis::OpKind::Wgmma);
  ASSERT_FALSE(mmas.empty());
  auto p = probeAndAssemble(module, probeOptions(mmas.back(), 64), "triton_wgmma");
  EXPECT_EQ(p["completion_method"], "wgmma_wait_group_0");
  EXPECT_EQ(p["region"]["path"], "mainloop/" + p["region"]["name"].get<std::string>());

  // The loop's TMA loads are issued by elected lanes while thread 0 arms the barrier (method 1
  // does not apply: different guards), and the consumer waits on a barrier of another stage
  // counter (method 2 does not): thread 0 waits on its own arrive's state after the phase's last
  // load (method 3). The A-tile load shares its phase with the B-tile load after it.
  auto sites = analysis::discoverAsyncOps(module, "", "mainloop");
  ASSERT_TRUE(sites.has_value());
  std::vector<std::string> loopLoads;
  for (const auto& s : *sites)
    if (s.kind == analysis::OpKind::TmaLoad && s.where.line > 500) loopLoads.push_back(s.opId);
  ASSERT_EQ(loopLoads.size(), 2u);
  ptx::Module copy = module;
  auto refused = applyTransforms(copy, {"insert_forced_wait"}, probeOptions(loopLoads[0], 64));
  ASSERT_FALSE(refused.has_value());
  const std::string& msg = refused.error().message;
  EXPECT_NE(msg.find("later ops of the block signal the same barrier phase"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find(loopLoads[1]), std::string::npos) << msg;
  for (size_t i = 0; i < 2; ++i) {
    auto q = probeAndAssemble(
        module,
        probeOptions(loopLoads[i], 64, {{"shared_phase", i == 0 ? "wait_after_last" : "refuse"}}),
        "triton_tma_load_" + std::to_string(i));
    EXPECT_EQ(q["completion_method"], "mbarrier_state_arming_thread") << q.dump();
    EXPECT_EQ(q["waiter"], "the thread of the expect_tx");
    EXPECT_EQ(q["timed_from"], "last issue of the phase, in the waiting thread");
    EXPECT_EQ(q.contains("shared_phase_with"), i == 0) << q.dump();
    EXPECT_EQ(q["iteration_source"], "region");
  }

  // The epilogue TMA store is outside the loop region.
  auto stores = opIds(module, analysis::OpKind::TmaStore);
  ASSERT_EQ(stores.size(), 1u);
  auto outside = applyTransforms(copy, {"insert_forced_wait"}, probeOptions(stores[0], 0));
  ASSERT_FALSE(outside.has_value());
}

// Triton's argus-marked matmul (python/argus/triton.py markers): the pipeliner puts the loop's
// TMA loads after `mainloop/iteration` ends, in the same loop trip. The probe takes the trip's
// iteration from the iteration region's last begin marker and names it on its own begin marker.
TEST(ForcedWait, TritonLoadsAfterTheIterationRegionTakeTheTripsIteration) {
  ptx::Module module = loadModule(dataDir() / "ptx" / "triton_matmul_tma_argus.ptx");
  auto sites = analysis::discoverAsyncOps(module, "", "");
  ASSERT_TRUE(sites.has_value());
  std::vector<std::string> loopLoads;
  for (const auto& s : *sites)
    if (s.kind == analysis::OpKind::TmaLoad && s.where.line > 500) loopLoads.push_back(s.opId);
  ASSERT_EQ(loopLoads.size(), 2u);
  auto p = probeAndAssemble(module, probeOptions(loopLoads[1], 3), "triton_argus_trip");
  EXPECT_EQ(p["completion_method"], "mbarrier_state_arming_thread") << p.dump();
  EXPECT_EQ(p["iteration_source"], "loop_trip");
  EXPECT_EQ(p["iteration_region"]["path"], "mainloop/iteration");
  EXPECT_EQ(p["owner_region"]["path"], "mainloop");
  ptx::Module probed = module;
  ASSERT_TRUE(applyTransforms(probed, {"insert_forced_wait"}, probeOptions(loopLoads[1], 3)));
  const std::string text = ptx::printModule(probed);
  EXPECT_NE(text.find("// @argus begin probe.tma_load.5 iter=%argusprobe_it"), std::string::npos);
  // The expect_tx's sink became the state the wait uses.
  EXPECT_NE(text.find("mbarrier.arrive.expect_tx.shared.b64 %argusprobe_st"), std::string::npos);
}

TEST(ForcedWait, CpAsyncPipelineOpsAssemble) {
  ptx::Module module = loadModule(dataDir() / "ptx" / "examples_cp_async_pipeline.ptx");
  ASSERT_FALSE(HasFailure());
  auto copies = opIds(module, analysis::OpKind::CpAsync);
  ASSERT_FALSE(copies.empty());
  int probed = 0;
  for (const std::string& op : copies) {
    ptx::Module copy = module;
    auto r = applyTransforms(copy, {"insert_forced_wait"}, probeOptions(op, 2));
    if (!r) {
      // Prologue copies (before the main loop) have no iteration region.
      EXPECT_NE(r.error().message.find("iter="), std::string::npos) << r.error().text();
      continue;
    }
    auto p = probeAndAssemble(module, probeOptions(op, 2), "cp_async");
    EXPECT_EQ(p["completion_method"], "cp_async_wait_all");
    ++probed;
  }
  EXPECT_GT(probed, 0);
}

TEST(ForcedWait, BadInput) {
  ptx::Module module = loadModule(dataDir() / "ptx" / "examples_tma_gemm.ptx");
  ASSERT_FALSE(HasFailure());
  const std::string before = ptx::printModule(module);
  auto unknown =
      applyTransforms(module, {"insert_forced_wait"}, probeOptions("nope:tma_load:9", 0));
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("unknown op `nope:tma_load:9`"), std::string::npos);
  EXPECT_NE(unknown.error().message.find(":tma_load:0"), std::string::npos);
  EXPECT_TRUE(unknown.error().message.starts_with("insert_forced_wait"));
  EXPECT_EQ(ptx::printModule(module), before);

  TransformOptions noIteration;
  noIteration.config = {{"op", "x"}};
  auto missing = applyTransforms(module, {"insert_forced_wait"}, noIteration);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("option `iteration`"), std::string::npos);

  auto loads = opIds(module, analysis::OpKind::TmaLoad);
  auto badPhase = applyTransforms(module, {"insert_forced_wait"},
                                  probeOptions(loads[0], 0, {{"shared_phase", "maybe"}}));
  ASSERT_FALSE(badPhase.has_value());

  // Applying twice is refused: the probe registers are already there.
  auto once = applyTransforms(module, {"insert_forced_wait"}, probeOptions(loads[1], 0));
  ASSERT_TRUE(once.has_value()) << once.error().text();
  auto twice = applyTransforms(module, {"insert_forced_wait"}, probeOptions(loads[1], 1));
  ASSERT_FALSE(twice.has_value());
}

// A barrier whose completion cannot be recovered gets no probe, with the reason.
TEST(ForcedWait, UnresolvedBarrierIsRefused) {
  auto module = ptx::parseModule(R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u32 k_param_0)
{
	.reg .b32 %r<6>;
	.reg .b64 %rd<2>;
	ld.param.u32 %r1, [k_param_0];
	mov.u32 %r4, 0;
$L__loop:
	// @argus begin loop iter=%r4
	mov.u64 %rd1, 0;
	cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r4}], [%r1];
	// @argus end loop
	add.s32 %r4, %r4, 1;
	setp.lt.u32 %p1, %r4, 8;
	ret;
}
)",
                                 "k.ptx");
  ASSERT_TRUE(module.has_value()) << module.error().text();
  auto loads = opIds(*module, analysis::OpKind::TmaLoad);
  ASSERT_EQ(loads.size(), 1u);
  auto r = applyTransforms(*module, {"insert_forced_wait"}, probeOptions(loads[0], 0));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("completion is unresolved"), std::string::npos)
      << r.error().text();
  EXPECT_NE(r.error().message.find("PTX line 13"), std::string::npos) << r.error().text();
}

}  // namespace
}  // namespace argus::passes
