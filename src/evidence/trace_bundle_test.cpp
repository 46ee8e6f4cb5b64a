#include "argus/evidence/trace_bundle.h"

#include <gtest/gtest.h>

namespace argus::evidence {
namespace {

TEST(TraceBundle, RoundTrip) {
  TraceBundle b;
  b.traceMap = {{"k", {{"argus_trace_map", 1}}}};
  b.run = {{"exit_code", 0}};
  b.launches.push_back({{{"seq", 1}, {"kernel", "k"}}, std::string("\0\1\2\3", 4)});
  b.launches.push_back({{{"seq", 2}}, ""});
  b.launches.push_back({{{"seq", 3}}, std::string(1000, 'x')});
  auto back = decodeBundle(encodeBundle(b));
  ASSERT_TRUE(back) << back.error().text();
  EXPECT_EQ(back->traceMap, b.traceMap);
  EXPECT_EQ(back->run, b.run);
  ASSERT_EQ(back->launches.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back->launches[i].info, b.launches[i].info);
    EXPECT_EQ(back->launches[i].buffer, b.launches[i].buffer);
  }
}

TEST(TraceBundle, DamageIsReportedWithOffsets) {
  TraceBundle b;
  b.launches.push_back({{{"seq", 1}}, std::string(64, 'y')});
  std::string bytes = encodeBundle(b);
  EXPECT_NE(decodeBundle("garbage").error().message.find("bad magic"), std::string::npos);
  auto cut = decodeBundle(std::string_view(bytes).substr(0, bytes.size() - 10));
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message.find("truncated"), std::string::npos) << cut.error().message;
  auto header = decodeBundle(std::string_view(bytes).substr(0, 20));
  ASSERT_FALSE(header);
  EXPECT_NE(header.error().message.find("truncated"), std::string::npos);
}

// Streams are told apart by (context, stream): CUPTI numbers streams per context. Lines as the
// injection library writes them to kernels.jsonl (after a JSON round trip: unsigned numbers).
TEST(KernelStreams, CountsContextStreamPairsAndSaysWhenUnknown) {
  auto lines = [](const char* text) {
    std::vector<nlohmann::json> out;
    for (auto& line : nlohmann::json::parse(text)) out.push_back(line);
    return out;
  };
  EXPECT_EQ(kernelStreams(lines(R"([{"context": 1, "stream": 7}, {"context": 1, "stream": 7},
                                    {"context": 1, "stream": 13}])")),
            std::optional<std::size_t>(2));
  EXPECT_EQ(kernelStreams(lines(R"([{"context": 1, "stream": 7}, {"context": 2, "stream": 7}])")),
            std::optional<std::size_t>(2));
  EXPECT_EQ(kernelStreams(lines(R"([{"context": 1, "stream": 7}])")),
            std::optional<std::size_t>(1));
  // Kernel records without stream ids (an older library), or none at all: unknown, not 0.
  EXPECT_EQ(kernelStreams(lines(R"([{"seq": 0, "start_ns": 1, "end_ns": 2}])")), std::nullopt);
  EXPECT_EQ(kernelStreams({}), std::nullopt);
}

// A setting the program runs with: the spec's run.env wins over Argus's own environment, which the
// program inherits; neither: nullopt.
// Each traced launch gets the kernel time CUPTI recorded for its seq; unknown seqs and
// launches without a record stay as they were.
TEST(KernelTimes, JoinedToTracedLaunchesBySeq) {
  std::vector<BundleLaunch> launches(3);
  launches[0].info = {{"seq", 0}, {"kernel", "k"}};
  launches[1].info = {{"seq", 1}, {"kernel", "k"}};
  launches[2].info = {{"kernel", "k"}};
  const std::vector<nlohmann::json> kernels = {
      {{"seq", 1}, {"start_ns", 1000}, {"end_ns", 1750}},
      {{"seq", -1}, {"start_ns", 2000}, {"end_ns", 2100}},
      {{"seq", 0}, {"start_ns", 0}, {"end_ns", 0}},  // no times: no duration
  };
  addKernelTimes(launches, kernels);
  EXPECT_FALSE(launches[0].info.contains("kernel_ns"));
  EXPECT_EQ(launches[1].info["kernel_ns"], 750);
  EXPECT_FALSE(launches[2].info.contains("kernel_ns"));
}

// Slots that overflowed ask for a capacity that keeps every record (a quarter more than the
// average need), capped by the buffer's limit; drops with slots far from full (passes without
// lane 0) and untraced launches ask for nothing.
TEST(OverflowCapacity, ScalesWhenSlotsWereFull) {
  std::vector<BundleLaunch> launches(2);
  launches[0].info = {{"traced", true},
                      {"records", 2'088'960},
                      {"dropped", 3'604'480},
                      {"warp_slots", 4096},
                      {"capacity_per_warp", 510}};
  launches[1].info = {{"traced", false}, {"records", 0}, {"dropped", 0}};
  // (2,088,960 + 3,604,480) / 2,088,960 = 2.73; x 1.25 x 256.
  EXPECT_EQ(overflowCapacity(launches, 256, 4ull << 30), 873u);
  EXPECT_EQ(overflowCapacity(launches, 256, 4096ull * 32 * 600), 600u);          // the cap
  EXPECT_EQ(overflowCapacity(launches, 256, 4096ull * 32 * 200), std::nullopt);  // nothing larger
  launches[0].info["records"] = 401'408;  // nested_regions: 3072 warps lost a pass each
  launches[0].info["dropped"] = 131'072;
  EXPECT_EQ(overflowCapacity(launches, 256, 4ull << 30), std::nullopt);
}

}  // namespace
}  // namespace argus::evidence
