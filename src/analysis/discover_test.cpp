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
