// The overlap model on hand-computable cases.
#include <gtest/gtest.h>

#include "argus/synthesis/overlap_model.h"

namespace argus::synthesis {
namespace {

TEST(OverlapModel, SeedFormulaForPOne) {
  // S = 4, t_comm = 10, t_comp = 30: 10 + 3*30 + 30 = 130.
  EXPECT_DOUBLE_EQ(pipelineTimeNs(4, 1, 10, 30), 130);
  // Communication-bound: 30 + 3*30 + 10 = 130 as well (symmetric).
  EXPECT_DOUBLE_EQ(pipelineTimeNs(4, 1, 30, 10), 130);
  // S = 1 is serial.
  EXPECT_DOUBLE_EQ(pipelineTimeNs(1, 1, 7, 5), 12);
}

TEST(OverlapModel, StepsPerBarrierGroupChunks) {
  // S = 4, P = 2: two stages of 2 chunks: 2*10 + 1*max(20, 60) + 60 = 140.
  EXPECT_DOUBLE_EQ(pipelineTimeNs(4, 2, 10, 30), 140);
}

TEST(OverlapModel, ComputeWavesOnTheSmsLeft) {
  GemmProblem p{.m = 1024, .n = 512, .k = 256, .tileM = 64, .tileN = 128, .totalSms = 10};
  TileTiming t{.mainNs = 100, .epilogueNs = 20};
  // S = 2: 512 rows -> 8 x 4 = 32 tiles on 10 - 2 = 8 SMs: 4 waves of 120 ns.
  EXPECT_DOUBLE_EQ(chunkComputeNs(p, t, 2, 2), 480);
  // 9 SMs reserved leave 1: 32 waves.
  EXPECT_DOUBLE_EQ(chunkComputeNs(p, t, 2, 9), 32 * 120);
  EXPECT_DOUBLE_EQ(chunkComputeNs(p, t, 2, 10), 0);
}

TEST(OverlapModel, ComputeWavesFollowOccupancy) {
  // 64 tiles on 8 SMs: 8 per SM. Three CTAs fit an SM: ceil(8 / 3) = 3 waves of 3 co-resident.
  GemmProblem p{.m = 1024, .n = 512, .k = 256, .tileM = 64, .tileN = 128, .totalSms = 10};
  p.ctasPerSm = 3;
  // Measured with 3 CTAs per SM: 300 ns a tile; alone: 100 ns.
  TileTiming t{.mainNs = 280, .epilogueNs = 20, .aloneNs = 100, .coResident = 3};
  EXPECT_DOUBLE_EQ(chunkComputeNs(p, t, 1, 2), 3 * 300);
  // S = 8: 8 tiles on 8 SMs, one each: one wave at the alone time.
  EXPECT_DOUBLE_EQ(chunkComputeNs(p, t, 8, 2), 100);
  // S = 4: 16 tiles, 2 per SM: one wave at the time of 2 co-resident (interpolated: 200).
  EXPECT_DOUBLE_EQ(chunkComputeNs(p, t, 4, 2), 200);
  // Without an alone measurement every wave takes the measured time.
  EXPECT_DOUBLE_EQ(chunkComputeNs(p, TileTiming{280, 20}, 8, 2), 300);
}

std::vector<CommGroup> groups() {
  // R = 2: t = 100 + bytes/10; R = 4: t = 100 + bytes/20 (exact at two sizes each).
  std::vector<CommGroup> g;
  for (int r : {2, 4})
    for (uint64_t bytes : {1000u, 2000u}) {
      CommGroup x;
      x.source = "copy_kernel";
      x.sms = r;
      x.bytes = bytes;
      x.medianNs = 100.0 + static_cast<double>(bytes) / (r == 2 ? 10.0 : 20.0);
      x.launchOverheadNs = 5;
      g.push_back(x);
    }
  return g;
}

TEST(OverlapModel, CommTableExactThenFit) {
  CommTable table(groups());
  auto exact = table.chunkTimeNs(1000, 2);
  ASSERT_TRUE(exact);
  EXPECT_DOUBLE_EQ(exact->first, 200);
  EXPECT_TRUE(exact->second);
  auto fitted = table.chunkTimeNs(4000, 4);
  ASSERT_TRUE(fitted);
  EXPECT_NEAR(fitted->first, 300, 1e-9);
  EXPECT_FALSE(fitted->second);
  auto missing = table.chunkTimeNs(1000, 8);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("8 SMs"), std::string::npos);
  EXPECT_DOUBLE_EQ(table.launchOverheadNs(2), 5);
  EXPECT_DOUBLE_EQ(CommTable(groups(), "nccl").launchOverheadNs(2), 0);
}

TEST(OverlapModel, ChunksOfUnknownSizeStayOutOfTheFit) {
  // An NCCL barrier outside any labelled range: bytes 0, at R = 4, slow, with a large overhead.
  auto g = groups();
  CommGroup barrier;
  barrier.source = "copy_kernel";
  barrier.sms = 4;
  barrier.medianNs = 9000;
  barrier.launchOverheadNs = 7000;
  g.push_back(barrier);
  CommTable table(g);
  auto fitted = table.chunkTimeNs(4000, 4);
  ASSERT_TRUE(fitted);
  EXPECT_NEAR(fitted->first, 300, 1e-9);
  EXPECT_DOUBLE_EQ(table.launchOverheadNs(4), 5);
}

TEST(OverlapModel, RanksByPredictedTime) {
  // A = 64 x 31.25 halves... use bytes directly: m*k*2 = 4000 bytes at S = 1.
  GemmProblem p{.m = 128, .n = 128, .k = 16, .tileM = 64, .tileN = 128, .totalSms = 6};
  TileTiming t{.mainNs = 150, .epilogueNs = 50};
  OverlapOptions o;
  o.splits = {1, 2};
  o.commSms = {2, 4};
  o.addLaunchOverhead = false;
  auto ranked = rankOverlap(p, t, CommTable(groups()), o);
  ASSERT_TRUE(ranked) << ranked.error().message;
  ASSERT_EQ(ranked->size(), 4u);
  // Chunk bytes: S=1 4096, S=2 2048. t_comm (fit/exact): R=2: 509.6 / 304.8; R=4: 304.8 / 202.4.
  // t_comp: S=1 2 tiles -> 1 wave = 200 (R=2 or 4 leave >= 2 SMs); S=2 1 tile -> 200.
  // T: (1,2) 709.6; (1,4) 504.8; (2,2) 304.8+304.8+200 = 809.6; (2,4) 202.4+202.4+200 = 604.8.
  EXPECT_EQ((*ranked)[0].s, 1);
  EXPECT_EQ((*ranked)[0].r, 4);
  EXPECT_NEAR((*ranked)[0].predictedNs, 504.8, 1e-6);
  EXPECT_EQ((*ranked)[1].s, 2);
  EXPECT_EQ((*ranked)[1].r, 4);
  EXPECT_NEAR((*ranked)[1].predictedNs, 604.8, 1e-6);
  EXPECT_NEAR((*ranked)[3].predictedNs, 809.6, 1e-6);
  EXPECT_FALSE((*ranked)[0].commMeasured);
  auto j = candidateJson((*ranked)[0]);
  EXPECT_EQ(j["qualification"], "derived");
}

TEST(OverlapModel, SkipsImpossibleConfigurations) {
  GemmProblem p{.m = 128, .n = 128, .k = 16, .totalSms = 4};
  OverlapOptions o;
  o.splits = {3, 2};  // 128 % 3 != 0
  o.commSms = {4};    // leaves no SM
  o.stepsPerBarrier = {1};
  auto ranked = rankOverlap(p, TileTiming{1, 1}, CommTable(groups()), o);
  ASSERT_TRUE(ranked);
  EXPECT_TRUE(ranked->empty());
}

}  // namespace
}  // namespace argus::synthesis
