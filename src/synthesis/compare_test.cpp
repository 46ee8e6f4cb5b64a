// A/B comparison: the bootstrap interval of a median change, and region samples of a real H200
// trace bundle (tests/data/reports/tma_gemm_duration, README there says how it was captured).
#include "argus/synthesis/compare.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

namespace argus::synthesis {
namespace {

std::vector<uint64_t> noisy(uint64_t center, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(static_cast<double>(center), 20.0);
  std::vector<uint64_t> v;
  for (size_t i = 0; i < n; ++i) v.push_back(static_cast<uint64_t>(std::max(0.0, d(rng))));
  return v;
}

TEST(Compare, AShiftOfTheMedianIsToldFromNoise) {
  const CompareOptions options;
  const auto a = noisy(300, 400, 1);
  const auto same = noisy(300, 400, 2);
  const auto slower = noisy(350, 400, 3);
  const Change none = medianChange(a, same, options);
  EXPECT_TRUE(none.withinNoise) << none.low << " .. " << none.high;
  const Change change = medianChange(a, slower, options);
  EXPECT_FALSE(change.withinNoise);
  EXPECT_NEAR(change.delta, 50, 8);
  EXPECT_GT(change.low, 30);
  EXPECT_LT(change.high, 70);
  // Deterministic: the same samples and seed give the same interval.
  const Change again = medianChange(a, slower, options);
  EXPECT_EQ(again.low, change.low);
  EXPECT_EQ(again.high, change.high);
}

TEST(Compare, ARealTraceAgainstItselfChangesNothing) {
  std::ifstream in(std::filesystem::path(ARGUS_TEST_DATA_DIR) / "reports" / "tma_gemm_duration" /
                       "inputs" / "evidence",
                   std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  auto scope = query::parseScope("");
  ASSERT_TRUE(scope);
  auto samples = regionSamples(bytes.str(), "mainloop", *scope);
  ASSERT_TRUE(samples) << samples.error().text();
  EXPECT_EQ(samples->unit, "ns");
  // The report of this bundle counts 320 mainloop, 64 tma_load and 256 mma occurrences.
  EXPECT_EQ(samples->durations.at("mainloop").size(), 320u);
  EXPECT_EQ(samples->durations.at("mainloop/tma_load").size(), 64u);
  EXPECT_EQ(samples->durations.at("mainloop/mma").size(), 256u);
  const auto doc = compareSamples(*samples, *samples, CompareOptions{});
  ASSERT_EQ(doc["regions"].size(), 3u);
  for (const auto& r : doc["regions"]) {
    EXPECT_EQ(r["change"]["delta"], 0.0) << r.dump();
    EXPECT_TRUE(r["change"]["within_noise"]) << r.dump();
  }
  // One side without a region: said, not compared.
  RegionSamples fewer = *samples;
  fewer.durations.erase("mainloop/mma");
  const auto partial = compareSamples(*samples, fewer, CompareOptions{});
  bool saw = false;
  for (const auto& r : partial["regions"])
    if (r["path"] == "mainloop/mma") {
      EXPECT_EQ(r["only_in"], "a");
      EXPECT_FALSE(r.contains("change"));
      saw = true;
    }
  EXPECT_TRUE(saw);
}

}  // namespace
}  // namespace argus::synthesis
