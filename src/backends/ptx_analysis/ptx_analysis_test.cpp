// Branch materialization of the op_latency discovery Control task on real PTX (the TMA GEMM
// example's nvcc output) and a synthetic reference trace: which (op, iteration) pairs get a
// probe branch, what those branches carry, and what is refused with a reason.
#include "argus/backends/ptx_analysis.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "argus/analysis/discover.h"
#include "argus/evidence/trace_bundle.h"
#include "argus/passes/transforms.h"
#include "argus/ptx/parser.h"
#include "argus/trace/format.h"

namespace argus::backends {
namespace {

using json = nlohmann::json;

std::string readFixture(const std::string& name) {
  std::ifstream in(std::string(ARGUS_TEST_DATA_DIR) + "/ptx/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The trace map lower_markers_to_trace makes for `kernel`.
json traceMapOf(const std::string& ptx, const std::string& kernel) {
  auto module = ptx::parseModule(ptx, "fixture.ptx");
  EXPECT_TRUE(module);
  passes::TransformOptions options;
  options.kernel = kernel;
  options.config = {{"record_layout", "full"}};  // referenceBundle writes full records
  auto result = passes::applyTransforms(*module, {"lower_markers_to_trace"}, options);
  EXPECT_TRUE(result) << result.error().text();
  return result->traceMap;
}

/// A one-launch trace bundle: `region` recorded by warp `warp` of `ctas` CTAs in iterations
/// 0..iterations-1 (full buffer layout).
std::string referenceBundle(const json& traceMaps, const std::string& kernel,
                            const std::vector<std::string>& regions, uint32_t ctas,
                            uint32_t warpsPerCta, uint32_t warp, uint32_t iterations) {
  std::map<std::string, uint32_t> index;
  for (const auto& r : traceMaps[kernel]["regions"])
    index[r["path"].get<std::string>()] = r["index"].get<uint32_t>();
  const uint32_t capacity = 64;
  trace::TraceHeader header;
  header.capacityPerWarp = capacity;
  header.warpSlots = ctas * warpsPerCta;
  header.warpsPerCta = warpsPerCta;
  std::vector<trace::TraceRecord> records(size_t{header.warpSlots} * capacity);
  for (uint32_t cta = 0; cta < ctas; ++cta) {
    size_t slot = (size_t{cta} * warpsPerCta + warp) * capacity;
    for (uint32_t i = 0; i < iterations; ++i)
      for (const auto& path : regions) {
        EXPECT_TRUE(index.contains(path)) << path;
        trace::TraceRecord& r = records[slot++];
        r.begin = 1000 * i + 10;
        r.end = 1000 * i + 500;
        r.meta = trace::kValidBit | (index[path] << 16) | (trace::kNoRole << 12);
        r.cta = cta;
        r.iteration = i;
        r.warp = warp;
      }
  }
  std::string buffer(sizeof header + records.size() * sizeof(trace::TraceRecord), '\0');
  std::memcpy(buffer.data(), &header, sizeof header);
  std::memcpy(buffer.data() + sizeof header, records.data(),
              records.size() * sizeof(trace::TraceRecord));
  evidence::TraceBundle bundle;
  bundle.traceMap = traceMaps;
  bundle.run = {{"exit_code", 0}};
  bundle.launches.push_back(evidence::BundleLaunch{{{"seq", 0}, {"kernel", kernel}}, buffer});
  return evidence::encodeBundle(bundle);
}

class TmaGemmDiscovery : public ::testing::Test {
 protected:
  void SetUp() override {
    ptx_ = readFixture("examples_tma_gemm.ptx");
    ASSERT_FALSE(ptx_.empty());
    maps_ = traceMapOf(ptx_, "tma_gemm");
  }
  ProbeDiscoveryInput input(const std::string& region, const std::string& scope) {
    ProbeDiscoveryInput in;
    in.ptx = ptx_;
    in.programVersion = "v1";
    in.kernel = "tma_gemm";
    in.region = region;
    in.scope = *query::parseScope(scope);
    return in;
  }
  std::string ptx_;
  json maps_;
};

TEST_F(TmaGemmDiscovery, OneBranchPerLoadAndIterationSeenInTheReference) {
  auto in = input("mainloop/tma_load", "");
  // The producer warp (4) of 8 CTAs, 8 iterations.
  in.referenceBundle =
      referenceBundle(maps_, "tma_gemm", {"mainloop", "mainloop/tma_load"}, 8, 5, 4, 8);
  auto found = discoverProbes(in);
  ASSERT_TRUE(found) << found.error().text();
  const json& sites = found->opSites;
  ASSERT_EQ(sites["probes"].size(), 16u) << sites.dump(2);  // 2 loads x 8 iterations
  EXPECT_TRUE(sites["not_probed"].empty()) << sites["not_probed"].dump(2);
  EXPECT_EQ(sites["reference"]["launches"], 1);
  ASSERT_EQ(found->branches.size(), 48u);  // variant, build, collect per probe

  // The loads share one expect_tx phase: the first is probed with the wait after the last and
  // says so; the second (the last of the phase) is probed on its own.
  int shared = 0;
  for (const auto& p : sites["probes"]) {
    EXPECT_EQ(p["instances"], 8) << p.dump();  // one producer warp in each of 8 CTAs
    if (p.contains("shared_phase")) {
      ++shared;
      EXPECT_EQ(p["op"], "312c7c1477af4fae:tma_load:0");
      EXPECT_NE(p["note"].get<std::string>().find("whole phase"), std::string::npos);
    }
  }
  EXPECT_EQ(shared, 8);

  for (const auto& b : found->branches) {
    if (b.id != "variant/probe[312c7c1477af4fae:tma_load:0@5]") continue;
    EXPECT_EQ(b.executor, "ptx_pass");
    EXPECT_EQ(b.config["transforms"], json({"insert_forced_wait", "lower_markers_to_trace"}));
    EXPECT_EQ(b.config["op"], "312c7c1477af4fae:tma_load:0");
    EXPECT_EQ(b.config["iteration"], 5);
    EXPECT_EQ(b.config["shared_phase"], "wait_after_last");
    EXPECT_EQ(b.scope, "iter=5");
    EXPECT_EQ(b.outputs, (std::vector<std::string>{"ptx", "trace_map", "probe"}));
    EXPECT_EQ(b.inputs.front().task, "ptx");
  }
  int collects = 0;
  for (const auto& b : found->branches) {
    if (b.type != runtime::TaskType::Collect) continue;
    ++collects;
    EXPECT_TRUE(b.isolation.gpuTurns);  // alone on the GPU while it uses it
    EXPECT_TRUE(b.needs(runtime::Requirement::Gpu));
  }
  EXPECT_EQ(collects, 16);
}

TEST_F(TmaGemmDiscovery, ScopeIterNarrowsAndUnseenIterationsAreReported) {
  auto in = input("mainloop/tma_load", "iter=6..9,role=producer");
  in.referenceBundle =
      referenceBundle(maps_, "tma_gemm", {"mainloop", "mainloop/tma_load"}, 8, 5, 4, 8);
  auto found = discoverProbes(in);
  ASSERT_TRUE(found) << found.error().text();
  EXPECT_EQ(found->opSites["probes"].size(), 4u);  // iterations 6 and 7 of 2 loads
  int unseen = 0;
  for (const auto& n : found->opSites["not_probed"]) {
    EXPECT_TRUE(n["iteration"] == 8 || n["iteration"] == 9) << n.dump();
    ++unseen;
  }
  EXPECT_EQ(unseen, 4);
  for (const auto& b : found->branches) {
    if (b.id == "variant/probe[312c7c1477af4fae:tma_load:1@7]") {
      EXPECT_EQ(b.scope, "role=producer,iter=7") << b.scope;
    }
  }
}

TEST_F(TmaGemmDiscovery, SitesWithoutReferenceInstancesGetNoBranch) {
  // The wgmma sites of mainloop/mma: the reference recorded only the loads' region.
  auto in = input("mainloop", "");
  in.referenceBundle =
      referenceBundle(maps_, "tma_gemm", {"mainloop", "mainloop/tma_load"}, 8, 5, 4, 8);
  auto found = discoverProbes(in);
  ASSERT_TRUE(found) << found.error().text();
  EXPECT_EQ(found->opSites["probes"].size(), 16u);
  ASSERT_EQ(found->opSites["not_probed"].size(), 4u);
  for (const auto& n : found->opSites["not_probed"]) {
    EXPECT_EQ(n["kind"], "wgmma");
    EXPECT_NE(n["reason"].get<std::string>().find("mainloop/mma"), std::string::npos);
  }
}

TEST_F(TmaGemmDiscovery, WithoutReferenceOnlyAnExplicitIterScopeMakesBranches) {
  auto in = input("mainloop/tma_load", "");
  auto none = discoverProbes(in);
  ASSERT_TRUE(none) << none.error().text();
  EXPECT_TRUE(none->branches.empty());
  ASSERT_EQ(none->opSites["not_probed"].size(), 2u);
  EXPECT_NE(none->opSites["not_probed"][0]["reason"].get<std::string>().find("--scope iter"),
            std::string::npos);

  in = input("mainloop/tma_load", "iter=0..1");
  in.collect = false;  // no GPU: builds only
  auto built = discoverProbes(in);
  ASSERT_TRUE(built) << built.error().text();
  EXPECT_EQ(built->opSites["probes"].size(), 4u);
  EXPECT_EQ(built->branches.size(), 8u);  // variant + build per probe
  for (const auto& b : built->branches) EXPECT_NE(b.type, runtime::TaskType::Collect) << b.id;
  EXPECT_EQ(built->opSites["not_collected"].size(), 4u);
  EXPECT_TRUE(built->opSites["reference"].contains("note"));
}

// The query's `ops` narrows discovery to named sites: one op in one iteration is one probe.
TEST_F(TmaGemmDiscovery, OpsSelectSitesAndUnknownOpsListTheSites) {
  auto in = input("mainloop/tma_load", "iter=0");
  auto module = ptx::parseModule(in.ptx, "tma_gemm.ptx");
  ASSERT_TRUE(module) << module.error().text();
  auto sites = analysis::discoverAsyncOps(*module, "tma_gemm", "mainloop/tma_load");
  ASSERT_TRUE(sites) << sites.error().text();
  ASSERT_EQ(sites->size(), 2u);
  const std::string second = (*sites)[1].opId;

  in.ops = {second};
  in.collect = false;
  auto one = discoverProbes(in);
  ASSERT_TRUE(one) << one.error().text();
  ASSERT_EQ(one->opSites["probes"].size(), 1u);
  EXPECT_EQ(one->opSites["probes"][0]["op"], second);

  in.ops = {"no-such-op"};
  auto bad = discoverProbes(in);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("no-such-op"), std::string::npos);
  EXPECT_NE(bad.error().message.find(second), std::string::npos);  // lists the sites
}

TEST(CpAsyncDiscovery, PrologueSitesOutsideTheIterationLoopAreRefusedWithTheReason) {
  const std::string ptx = readFixture("examples_cp_async_pipeline.ptx");
  ProbeDiscoveryInput in;
  in.ptx = ptx;
  in.kernel = "cp_async_gemv";
  in.scope = *query::parseScope("iter=0");
  auto found = discoverProbes(in);
  ASSERT_TRUE(found) << found.error().text();
  EXPECT_EQ(found->opSites["probes"].size(), 8u);  // the 8 cp.async of mainloop/load
  EXPECT_EQ(found->opSites["not_probed"].size(), 16u);
  for (const auto& n : found->opSites["not_probed"])
    EXPECT_NE(n["reason"].get<std::string>().find("insert_forced_wait refuses"), std::string::npos)
        << n.dump();
}

// Triton's pipeliner issues the K loop's TMA loads in `mainloop` after `mainloop/iteration` has
// ended (tests/data/ptx/triton_matmul_tma_argus.ptx, Triton 3.6 for examples/triton_matmul): they
// take the loop trip's iteration, so their instances are the iteration region's occurrences.
TEST(TritonDiscovery, LoadsAfterTheIterationRegionCountItsOccurrences) {
  const std::string ptx = readFixture("triton_matmul_tma_argus.ptx");
  ASSERT_FALSE(ptx.empty());
  const json maps = traceMapOf(ptx, "matmul_tma_argus");
  ProbeDiscoveryInput in;
  in.ptx = ptx;
  in.programVersion = "v1";
  in.kernel = "matmul_tma_argus";
  in.region = "mainloop";
  in.scope = *query::parseScope("iter=0|3");
  in.referenceBundle =
      referenceBundle(maps, "matmul_tma_argus", {"mainloop/iteration"}, 2, 4, 0, 8);
  auto found = discoverProbes(in);
  ASSERT_TRUE(found) << found.error().text();
  std::map<std::string, std::vector<int64_t>> loads;
  for (const auto& p : found->opSites["probes"])
    if (p["kind"] == "tma_load") loads[p["op"]].push_back(p["iteration"].get<int64_t>());
  // The two loads in the loop (PTX lines 567 and 577), in iterations 0 and 3.
  ASSERT_EQ(loads.size(), 2u) << found->opSites.dump(1);
  for (const auto& [op, its] : loads) EXPECT_EQ(its, (std::vector<int64_t>{0, 3})) << op;
  // The four prologue loads before the loop cannot be selected by an iteration; the pass says so.
  size_t prologue = 0;
  for (const auto& n : found->opSites["not_probed"]) {
    if (n["kind"] != "tma_load") continue;
    ++prologue;
    EXPECT_NE(n["reason"].get<std::string>().find("insert_forced_wait refuses it"),
              std::string::npos)
        << n.dump();
  }
  EXPECT_EQ(prologue, 4u);
}

}  // namespace
}  // namespace argus::backends
