#include "argus/analysis/discover.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "argus/ptx/parser.h"

namespace argus::analysis {
namespace {

ptx::Module load(const std::string& name) {
  std::ifstream in(std::string(ARGUS_TEST_DATA_DIR) + "/ptx/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  auto m = ptx::parseModule(ss.str(), name);
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().text());
  return m ? std::move(*m) : ptx::Module{};
}

size_t countOpcodes(const ptx::Module& m, std::string_view kernel, std::string_view prefix) {
  size_t n = 0;
  for (const ptx::Statement& s : m.findFunction(kernel)->body)
    if (s.kind == ptx::Statement::Kind::Instruction && s.instruction.opcode.starts_with(prefix))
      ++n;
  return n;
}

std::vector<OpSite> ofKind(const std::vector<OpSite>& sites, OpKind kind) {
  std::vector<OpSite> out;
  for (const OpSite& s : sites)
    if (s.kind == kind) out.push_back(s);
  return out;
}

TEST(Discover, TmaGemmLoadsCompleteOnFullBarrier) {
  ptx::Module m = load("examples_tma_gemm.ptx");
  auto sites = discoverAsyncOps(m, "tma_gemm", "");
  ASSERT_TRUE(sites.has_value()) << sites.error().text();
  auto loads = ofKind(*sites, OpKind::TmaLoad);
  ASSERT_EQ(loads.size(), 2u);
  for (const OpSite& s : loads) {
    EXPECT_EQ(s.regions, std::vector<std::string>{"mainloop/tma_load"});
    const Completion& c = s.completion;
    ASSERT_EQ(c.kind, Completion::Kind::Barrier);
    ASSERT_TRUE(c.barrier.has_value());
    EXPECT_EQ(c.barrier->text, "[%r14]");
    EXPECT_TRUE(c.barrier->resolved) << c.barrier->reason;
    EXPECT_EQ(c.barrier->base, "_ZZ8tma_gemmE11fullBarrier");
    ASSERT_EQ(c.expectTx.size(), 1u);
    EXPECT_EQ(c.expectTx[0].match, "exact");
    ASSERT_FALSE(c.waits.empty());
    for (const BarrierSite& w : c.waits) {
      EXPECT_FALSE(w.parity.empty());
      EXPECT_EQ(w.address.base, "_ZZ8tma_gemmE11fullBarrier");
    }
    EXPECT_TRUE(c.resolved) << c.reason;
  }
  EXPECT_EQ(loads[0].completion.barrier->text, loads[1].completion.barrier->text);
  EXPECT_NE(loads[0].opId, loads[1].opId);
  EXPECT_TRUE(loads[0].opId.ends_with(":tma_load:0"));
  EXPECT_TRUE(loads[1].opId.ends_with(":tma_load:1"));
}

TEST(Discover, TmaGemmWgmmaHaveCommitAndWait) {
  ptx::Module m = load("examples_tma_gemm.ptx");
  auto sites = discoverAsyncOps(m, "tma_gemm", "");
  ASSERT_TRUE(sites.has_value()) << sites.error().text();
  auto mma = ofKind(*sites, OpKind::Wgmma);
  size_t expected = countOpcodes(m, "tma_gemm", "wgmma.mma_async");
  ASSERT_GT(expected, 0u);
  EXPECT_EQ(mma.size(), expected);
  for (const OpSite& s : mma) {
    const Completion& c = s.completion;
    EXPECT_EQ(c.kind, Completion::Kind::Group);
    ASSERT_TRUE(c.commit.has_value());
    EXPECT_TRUE(c.commit->where.opcode.starts_with("wgmma.commit_group"));
    EXPECT_GT(c.commit->where.statement, s.where.statement);
    ASSERT_FALSE(c.groupWaits.empty());
    EXPECT_TRUE(c.groupWaits.back().pending.has_value());
    EXPECT_TRUE(c.resolved) << c.reason;
  }
}

TEST(Discover, RegionFilterCoversSubtree) {
  ptx::Module m = load("examples_tma_gemm.ptx");
  auto all = discoverAsyncOps(m, "", "");
  auto inner = discoverAsyncOps(m, "", "mainloop/tma_load");
  auto outer = discoverAsyncOps(m, "", "mainloop");
  ASSERT_TRUE(all && inner && outer);
  EXPECT_EQ(inner->size(), 2u);
  EXPECT_GE(outer->size(), inner->size() + countOpcodes(m, "tma_gemm", "wgmma.mma_async"));
  // IDs do not depend on the filter.
  std::set<std::string> ids;
  for (const OpSite& s : *all) ids.insert(s.opId);
  EXPECT_EQ(ids.size(), all->size());
  for (const OpSite& s : *outer) EXPECT_TRUE(ids.contains(s.opId)) << s.opId;
}

TEST(Discover, UnknownRegionListsRegions) {
  ptx::Module m = load("examples_tma_gemm.ptx");
  auto r = discoverAsyncOps(m, "", "nope");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("nope"), std::string::npos);
  EXPECT_NE(r.error().message.find("mainloop/tma_load"), std::string::npos);
  auto k = discoverAsyncOps(m, "missing_kernel", "");
  ASSERT_FALSE(k.has_value());
  EXPECT_NE(k.error().message.find("tma_gemm"), std::string::npos);
}

TEST(Discover, WarpSpecializedLoadsMatchConsumerWait) {
  ptx::Module m = load("examples_warp_specialized.ptx");
  auto sites = discoverAsyncOps(m, "", "producer");
  ASSERT_TRUE(sites.has_value()) << sites.error().text();
  auto loads = ofKind(*sites, OpKind::TmaLoad);
  ASSERT_EQ(loads.size(), 2u);
  for (const OpSite& s : loads) {
    EXPECT_EQ(s.regions, std::vector<std::string>{"producer/mainloop/tma_load"});
    EXPECT_FALSE(s.completion.expectTx.empty());
    EXPECT_FALSE(s.completion.waits.empty());
  }
}

TEST(Discover, TritonMatmulTmaLoadsAndStore) {
  ptx::Module m = load("triton_matmul_tma.ptx");
  auto sites = discoverAsyncOps(m, "", "");
  ASSERT_TRUE(sites.has_value()) << sites.error().text();
  auto loads = ofKind(*sites, OpKind::TmaLoad);
  EXPECT_EQ(loads.size(), countOpcodes(m, "matmul_tma", "cp.async.bulk.tensor.2d.shared"));
  ASSERT_FALSE(loads.empty());
  for (const OpSite& s : loads) {
    const Completion& c = s.completion;
    ASSERT_TRUE(c.barrier.has_value());
    EXPECT_TRUE(c.barrier->resolved) << c.barrier->reason;
    EXPECT_EQ(c.barrier->base, "global_smem");
    EXPECT_FALSE(c.expectTx.empty()) << s.opId;
  }
  // The first load uses barrier 0 (global_smem+98304) exactly as armed by its expect_tx.
  EXPECT_EQ(loads[0].completion.barrier->offset, 98304);
  EXPECT_EQ(loads[0].completion.expectTx[0].match, "exact");
  EXPECT_FALSE(loads[0].completion.waits.empty());
  EXPECT_EQ(loads[0].completion.waits[0].parity, "%r159");
  EXPECT_FALSE(loads[0].completion.waits[0].parityIsImmediate);

  auto stores = ofKind(*sites, OpKind::TmaStore);
  ASSERT_EQ(stores.size(), 1u);
  ASSERT_TRUE(stores[0].completion.commit.has_value());
  EXPECT_EQ(stores[0].completion.commit->where.opcode, "cp.async.bulk.commit_group");
  ASSERT_EQ(stores[0].completion.groupWaits.size(), 1u);
  EXPECT_EQ(stores[0].completion.groupWaits[0].pending, 0);
  EXPECT_TRUE(stores[0].completion.groupWaits[0].afterCommit);
}

TEST(Discover, TritonAttentionCpAsyncGroups) {
  ptx::Module m = load("triton_attention_fwd.ptx");
  auto sites = discoverAsyncOps(m, "", "");
  ASSERT_TRUE(sites.has_value()) << sites.error().text();
  auto cps = ofKind(*sites, OpKind::CpAsync);
  EXPECT_EQ(cps.size(), countOpcodes(m, "attention_fwd", "cp.async.cg."));
  ASSERT_FALSE(cps.empty());
  for (const OpSite& s : cps) {
    const Completion& c = s.completion;
    ASSERT_TRUE(c.commit.has_value());
    EXPECT_EQ(c.commit->where.opcode, "cp.async.commit_group");
    EXPECT_FALSE(c.groupWaits.empty());
    EXPECT_TRUE(c.resolved) << c.reason;
  }
  // The first two copies share the first commit group.
  EXPECT_EQ(cps[0].completion.commit->where.statement, cps[1].completion.commit->where.statement);
  EXPECT_NE(cps[1].completion.commit->where.statement, cps[2].completion.commit->where.statement);
}

// Parity phases: the consumer waits on full[kt % 3] for parity (kt / 3) & 1 and the producer on
// empty[kt % 3] for the complement; nvcc divides by 3 with a multiply-high by 0xAAAAAAAB.
TEST(Discover, TmaGemmWaitParityIsIterationPhase) {
  ptx::Module m = load("examples_tma_gemm.ptx");
  auto sites = discoverAsyncOps(m, "tma_gemm", "");
  ASSERT_TRUE(sites.has_value()) << sites.error().text();
  auto loads = ofKind(*sites, OpKind::TmaLoad);
  ASSERT_FALSE(loads.empty());
  const auto& waits = loads[0].completion.waits;
  ASSERT_EQ(waits.size(), 1u);
  ASSERT_TRUE(waits[0].phase.has_value());
  const ParityPhase& p = *waits[0].phase;
  EXPECT_EQ(p.form, "iteration") << p.reason;
  EXPECT_EQ(p.iteration, "%r147");
  EXPECT_EQ(p.iterationRegion, "mainloop");
  EXPECT_EQ(p.stages, 3);
  EXPECT_FALSE(p.inverted);
  EXPECT_EQ(p.expression, "(%r147 / 3) & 1");
  nlohmann::json j = toJson(loads[0])["completion"]["waits"][0]["parity"];
  EXPECT_EQ(j["operand"], "%r7");
  EXPECT_EQ(j["phase"]["form"], "iteration");
  EXPECT_EQ(j["phase"]["stages"], 3);
  EXPECT_EQ(j["phase"]["iteration_region"], "mainloop");
}

TEST(Discover, WarpSpecializedWaitParityIsIterationPhase) {
  ptx::Module m = load("examples_warp_specialized.ptx");
  auto sites = discoverAsyncOps(m, "", "producer");
  ASSERT_TRUE(sites.has_value()) << sites.error().text();
  auto loads = ofKind(*sites, OpKind::TmaLoad);
  ASSERT_FALSE(loads.empty());
  ASSERT_FALSE(loads[0].completion.waits.empty());
  for (const BarrierSite& w : loads[0].completion.waits) {
    ASSERT_TRUE(w.phase.has_value());
    EXPECT_EQ(w.phase->form, "iteration") << w.phase->reason;
    EXPECT_EQ(w.phase->iterationRegion, "consumer/mainloop");
    EXPECT_GT(w.phase->stages.value_or(0), 1);
  }
}

// Triton carries the phase in a register flipped when the stage counter wraps past 2.
TEST(Discover, TritonWaitParityIsLoopToggle) {
  ptx::Module m = load("triton_matmul_tma.ptx");
  auto sites = discoverAsyncOps(m, "", "");
  ASSERT_TRUE(sites.has_value()) << sites.error().text();
  auto loads = ofKind(*sites, OpKind::TmaLoad);
  ASSERT_FALSE(loads.empty());
  ASSERT_FALSE(loads[0].completion.waits.empty());
  const auto& w = loads[0].completion.waits[0];
  ASSERT_TRUE(w.phase.has_value());
  EXPECT_EQ(w.phase->form, "toggle") << w.phase->reason;
  EXPECT_EQ(w.phase->iteration, "%r160");
  EXPECT_EQ(w.phase->stages, 3);
  EXPECT_EQ(w.phase->initial, 0);
}

TEST(Discover, UnprovableParityHasReason) {
  auto m = ptx::parseModule(R"(.version 8.0
.target sm_90a
.address_size 64
.shared .align 8 .b64 bar;
.visible .entry k()
{
	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	mov.u32 %r1, bar;
	mov.u32 %r2, 1024;
	mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], %r2;
	cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%r1, {%r2}], [%r1];
	ld.shared.u32 %r3, [%r1];
	mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r3;
	mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;
	ret;
}
)",
                            "k.ptx");
  ASSERT_TRUE(m.has_value()) << m.error().text();
  auto sites = discoverAsyncOps(*m, "", "");
  ASSERT_TRUE(sites.has_value()) << sites.error().text();
  ASSERT_EQ(sites->size(), 1u);
  const auto& waits = (*sites)[0].completion.waits;
  ASSERT_EQ(waits.size(), 2u);
  ASSERT_TRUE(waits[0].phase && waits[1].phase);
  EXPECT_EQ(waits[0].phase->form, "unknown");
  EXPECT_NE(waits[0].phase->reason.find("%r3 is defined by `ld.shared.u32`"), std::string::npos)
      << waits[0].phase->reason;
  EXPECT_EQ(waits[1].phase->form, "immediate");
  EXPECT_EQ(waits[1].phase->initial, 0);
}

// CUTLASS example 54 (MainloopSm90TmaGmmaWarpSpecializedFP8<6, ...>): the PipelineState's
// phase is a register with constant, copy and xor definitions. In the producer's K loop
// ($L__BB0_502, source line 370) the empty-barrier wait reads %r1356, flipped by
// `xor %r1356, %r1356, selp(%r1357 + 1 == 6)` while `%r1357 = selp 0, %r1357 + 1`; the loop
// enters with index %r1362 and phase %r1349. The consumer's K loop ($L__BB0_66, line 519)
// waits on the full barrier with %r1318, stepped the same way with index %r1319.
TEST(Discover, CutlassWaitParityIsPipelineState) {
  ptx::Module m = load("cutlass_54_fp8_gemm.ptx");
  auto sites = discoverAsyncOps(m, "", "");
  ASSERT_TRUE(sites.has_value()) << sites.error().text();
  auto loads = ofKind(*sites, OpKind::TmaLoad);
  ASSERT_FALSE(loads.empty());
  const BarrierSite* producer = nullptr;
  const BarrierSite* consumer = nullptr;
  for (const BarrierSite& w : loads[0].completion.waits) {
    if (w.parity == "%r1356") producer = &w;
    if (w.parity == "%r1318" && consumer == nullptr) consumer = &w;
  }
  ASSERT_TRUE(producer && consumer);
  ASSERT_TRUE(producer->phase && consumer->phase);
  const ParityPhase& p = *producer->phase;
  EXPECT_EQ(p.form, "pipeline_state") << p.reason;
  EXPECT_EQ(p.stages, 6);
  EXPECT_EQ(p.index, "%r1357");
  EXPECT_EQ(p.indexEntry, "%r1362");
  EXPECT_EQ(p.carried, "%r1356");
  EXPECT_EQ(p.initialEntry, "%r1349");
  EXPECT_FALSE(p.initial.has_value());
  EXPECT_EQ(p.loop, "$L__BB0_502");
  EXPECT_TRUE(p.reason.empty()) << p.reason;
  EXPECT_TRUE(p.expression.starts_with("((%r1362 + k) / 6 + %r1349) & 1")) << p.expression;
  const ParityPhase& c = *consumer->phase;
  EXPECT_EQ(c.form, "pipeline_state") << c.reason;
  EXPECT_EQ(c.stages, 6);
  EXPECT_EQ(c.index, "%r1319");
  EXPECT_EQ(c.loop, "$L__BB0_66");
  // The peeled first iteration gives the loop two entry values: not derived, and said so.
  EXPECT_FALSE(c.initial.has_value());
  EXPECT_NE(c.reason.find("%r1318 enters the loop through 2 definitions"), std::string::npos)
      << c.reason;
  // Every wait on these barriers that reads the mainloop's phase (%r1349 and the tail's
  // unrolled steps from it) is proven with 6 stages; the epilogue's phase stays unknown.
  size_t proven = 0;
  for (const BarrierSite& w : loads[0].completion.waits) {
    ASSERT_TRUE(w.phase.has_value());
    if (w.phase->form != "pipeline_state") continue;
    ++proven;
    EXPECT_EQ(w.phase->stages, 6) << w.parity;
  }
  EXPECT_GE(proven, 9u);
  nlohmann::json j = toJson(loads[0])["completion"]["waits"];
  bool found = false;
  for (const auto& w : j)
    if (w["parity"]["operand"] == "%r1356") {
      found = true;
      EXPECT_EQ(w["parity"]["phase"]["form"], "pipeline_state");
      EXPECT_EQ(w["parity"]["phase"]["stages"], 6);
      EXPECT_EQ(w["parity"]["phase"]["index"], "%r1357");
      EXPECT_EQ(w["parity"]["phase"]["loop"], "$L__BB0_502");
    }
  EXPECT_TRUE(found);
}

// A CUTLASS-like K loop: index %r3 and phase %r4 stepped by operator++ over 4 stages, the phase
// initialised through a copy of a constant (so the `toggle` form does not apply). `init` and
// `bit` replace the phase's initialisation and the flip bit's definition.
std::string pipelineKernel(std::string_view init, std::string_view bit) {
  return std::string(R"(.version 8.0
.target sm_90a
.address_size 64
.shared .align 8 .b64 bar[4];
.visible .entry k(.param .u32 n)
{
	.reg .pred %p<5>;
	.reg .b32 %r<16>;
	ld.param.u32 %r9, [n];
	mov.u32 %r1, bar;
	mov.u32 %r2, 1024;
	mov.u32 %r3, 0;
	mov.u32 %r11, 1;
)") + std::string(init) +
         R"(
	mov.u32 %r5, 0;
$L__BB0_1:
	shl.b32 %r6, %r3, 3;
	add.s32 %r7, %r1, %r6;
	mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r7], %r2;
	cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%r7], [%r7, {%r2}], [%r7];
	mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r7], %r4;
	add.s32 %r8, %r3, 1;
	setp.eq.s32 %p2, %r8, 4;
	selp.b32 %r3, 0, %r8, %p2;
)" + std::string(bit) +
         R"(
	xor.b32 %r4, %r4, %r10;
	add.s32 %r5, %r5, 1;
	setp.lt.s32 %p3, %r5, %r9;
	@%p3 bra $L__BB0_1;
	ret;
}
)";
}

ParityPhase pipelinePhase(std::string_view init, std::string_view bit) {
  auto m = ptx::parseModule(pipelineKernel(init, bit), "k.ptx");
  EXPECT_TRUE(m.has_value()) << m.error().text();
  if (!m) return {};
  auto sites = discoverAsyncOps(*m, "", "");
  EXPECT_TRUE(sites.has_value()) << sites.error().text();
  if (!sites || sites->size() != 1 || (*sites)[0].completion.waits.size() != 1) return {};
  return (*sites)[0].completion.waits[0].phase.value_or(ParityPhase{});
}

TEST(Discover, HandWrittenPipelineStateIsProven) {
  ParityPhase p = pipelinePhase("\tmov.u32 %r4, %r11;", "\tselp.u32 %r10, 1, 0, %p2;");
  EXPECT_EQ(p.form, "pipeline_state") << p.reason;
  EXPECT_EQ(p.stages, 4);
  EXPECT_EQ(p.index, "%r3");
  EXPECT_EQ(p.indexInitial, 0);
  EXPECT_EQ(p.initial, 1);
  EXPECT_EQ(p.carried, "%r4");
  EXPECT_EQ(p.loop, "$L__BB0_1");
  EXPECT_TRUE(p.reason.empty()) << p.reason;
  EXPECT_TRUE(p.expression.starts_with("((0 + k) / 4 + 1) & 1 at iteration k")) << p.expression;
}

TEST(Discover, PipelineStateNeedsOneBitDefinitions) {
  // The phase starts from a loaded value: not provably 0 or 1.
  ParityPhase p = pipelinePhase("\tld.param.u32 %r4, [n];", "\tselp.u32 %r10, 1, 0, %p2;");
  EXPECT_EQ(p.form, "unknown");
  EXPECT_NE(p.reason.find("%r4 has a definition that is not provably 1-bit (PTX line 14: "
                          "`ld.param.u32`)"),
            std::string::npos)
      << p.reason;
}

TEST(Discover, PipelineStateNeedsFlipTiedToCompare) {
  // The flip bit depends on a loaded flag, not on the stage index reaching the stage count.
  ParityPhase p = pipelinePhase("\tmov.u32 %r4, %r11;",
                                "\tld.param.u32 %r12, [n];\n\tsetp.ne.s32 %p4, %r12, 0;\n"
                                "\tselp.u32 %r10, 1, 0, %p4;");
  EXPECT_EQ(p.form, "unknown");
  EXPECT_NE(p.reason.find("is not tied to a stage-index compare: %p4 is `setp.ne.s32 %r12, 0`"),
            std::string::npos)
      << p.reason;
  EXPECT_FALSE(p.stages.has_value());
}

TEST(Discover, JsonIsStable) {
  ptx::Module m = load("examples_tma_gemm.ptx");
  auto a = discoverAsyncOps(m, "", "");
  auto b = discoverAsyncOps(m, "", "");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(toJson(*a).dump(), toJson(*b).dump());
  nlohmann::json j = toJson(a->front());
  EXPECT_TRUE(j.contains("op_id"));
  EXPECT_TRUE(j["completion"].contains("resolved"));
}

}  // namespace
}  // namespace argus::analysis
