// regionTiming on a hand-made trace bundle: statistics, and the injection library's launch notes
// (why records were dropped) carried into the duration document.
#include "argus/synthesis/region_timing.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "argus/evidence/trace_bundle.h"
#include "argus/trace/format.h"

namespace argus::synthesis {
namespace {

using nlohmann::json;

/// A launch buffer in the full form: header + warpSlots x capacity records (one valid here).
std::string launchBuffer(std::uint64_t dropped) {
  trace::TraceHeader header;
  header.capacityPerWarp = 2;
  header.warpSlots = 1;
  header.warpsPerCta = 1;
  header.dropped = dropped;
  trace::TraceRecord records[2];
  records[0] = {100, 350, trace::kValidBit | (trace::kNoRole << 12) | 3u, 0, 0, 0};
  std::string bytes(sizeof header + sizeof records, '\0');
  std::memcpy(bytes.data(), &header, sizeof header);
  std::memcpy(bytes.data() + sizeof header, records, sizeof records);
  return bytes;
}

evidence::TraceBundle bundleWith(const std::vector<std::string>& notes) {
  evidence::TraceBundle bundle;
  bundle.traceMap["k"] = json::parse(R"({"argus_trace_map": 1, "kernel": "k",
      "time_base": "globaltimer", "overflow": "clamp",
      "regions": [{"index": 0, "path": "a", "parent": null}]})");
  for (size_t i = 0; i < notes.size(); ++i) {
    json info = {{"seq", i}, {"kernel", "k"}};
    if (!notes[i].empty()) info["note"] = notes[i];
    bundle.launches.push_back({info, launchBuffer(2)});
  }
  return bundle;
}

TEST(RegionTiming, CarriesTheLaunchNotesThatSayWhyRecordsWereDropped) {
  const auto scope = query::parseScope("");
  ASSERT_TRUE(scope.has_value());
  const std::string lost = "5 records of 1 warps lost: lanes ran markers without lane 0 ...";
  auto timing = regionTiming(evidence::encodeBundle(bundleWith({lost, "", lost})), "", *scope);
  ASSERT_TRUE(timing.has_value()) << timing.error().text();
  const json& d = (*timing)["duration"];
  EXPECT_EQ(d["launches"], 3);
  EXPECT_EQ(d["dropped"], 6);
  ASSERT_EQ(d["regions"].size(), 1u);
  EXPECT_EQ(d["regions"][0]["duration"]["count"], 3);
  EXPECT_EQ(d["launch_notes"], json::array({"launch 0: " + lost, "launch 2: " + lost}));
  EXPECT_FALSE(d.contains("traced_kernel"));  // no kernel times in the bundle

  // Quiet launches add no notes; many noisy ones are capped and say so.
  auto quiet = regionTiming(evidence::encodeBundle(bundleWith({"", ""})), "", *scope);
  ASSERT_TRUE(quiet.has_value()) << quiet.error().text();
  EXPECT_FALSE((*quiet)["duration"].contains("launch_notes"));
  auto noisy = regionTiming(evidence::encodeBundle(bundleWith(std::vector<std::string>(20, lost))),
                            "", *scope);
  ASSERT_TRUE(noisy.has_value()) << noisy.error().text();
  const json& notes = (*noisy)["duration"]["launch_notes"];
  ASSERT_EQ(notes.size(), 8u);
  EXPECT_NE(notes.back().get<std::string>().find("(12 further launches' notes left out)"),
            std::string::npos);
  // Exactly as many as are kept: nothing is said to be left out.
  auto eight = regionTiming(evidence::encodeBundle(bundleWith(std::vector<std::string>(8, lost))),
                            "", *scope);
  ASSERT_TRUE(eight.has_value()) << eight.error().text();
  EXPECT_EQ((*eight)["duration"]["launch_notes"].back(), "launch 7: " + lost);
}

// A trace built for the spec's block shape (trace map `block`): a launch with another shape
// is noted, since its lane-0 analysis may not hold there; one with that shape is not.
TEST(RegionTiming, NotesLaunchesWhoseBlockIsNotTheOneTheTraceAssumed) {
  const auto scope = query::parseScope("");
  ASSERT_TRUE(scope.has_value());
  evidence::TraceBundle bundle = bundleWith({"", "5 records lost"});
  bundle.traceMap["k"]["block"] = {128, 1, 1};
  bundle.launches[0].info["block"] = {128, 1, 1};
  bundle.launches[1].info["block"] = {64, 2, 1};
  auto timing = regionTiming(evidence::encodeBundle(bundle), "", *scope);
  ASSERT_TRUE(timing.has_value()) << timing.error().text();
  const json& notes = (*timing)["duration"]["launch_notes"];
  ASSERT_EQ(notes.size(), 1u) << notes.dump();
  EXPECT_EQ(notes[0].get<std::string>(),
            "launch 1: 5 records lost; the trace was built for blocks of [128,1,1] threads "
            "(kernels[].block in the program spec) and this launch ran [64,2,1]: occurrences its "
            "warps began without lane 0 may be lost without a count; correct the spec's block and "
            "query again");
  // A malformed block in the trace map is an error that names it.
  bundle.traceMap["k"]["block"] = {128, 1};
  auto bad = regionTiming(evidence::encodeBundle(bundle), "", *scope);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("`block` is not three unsigned extents"), std::string::npos)
      << bad.error().message;
}

// The traced launches' CUPTI kernel times (joined by the collection) become traced_kernel
// statistics over the launches the scope selects.
TEST(RegionTiming, TracedKernelTimesOfTheSelectedLaunches) {
  evidence::TraceBundle bundle = bundleWith({"", "", ""});
  bundle.launches[0].info["kernel_ns"] = 1000;
  bundle.launches[1].info["kernel_ns"] = 3000;
  bundle.launches[2].info["kernel_ns"] = 2000;
  const auto all = query::parseScope("");
  const auto first = query::parseScope("launch=0..1");
  ASSERT_TRUE(all.has_value() && first.has_value());
  auto timing = regionTiming(evidence::encodeBundle(bundle), "", *all);
  ASSERT_TRUE(timing.has_value()) << timing.error().text();
  const json& k = (*timing)["duration"]["traced_kernel"];
  EXPECT_EQ(k["count"], 3);
  EXPECT_EQ(k["median"], 2000.0);
  EXPECT_EQ(k["max"], 3000);
  auto two = regionTiming(evidence::encodeBundle(bundle), "", *first);
  ASSERT_TRUE(two.has_value()) << two.error().text();
  EXPECT_EQ((*two)["duration"]["traced_kernel"]["median"], 2000.0);
  EXPECT_EQ((*two)["duration"]["traced_kernel"]["count"], 2);
}

TEST(RegionTiming, LaunchesOfOtherKernelsAreLeftOutWithANote) {
  // A CUTLASS example fills its operands and checks its result with reference kernels before
  // and after the GEMM (issue 30: "launch 0 of kernel BlockForEach has no trace map").
  evidence::TraceBundle bundle = bundleWith({"", ""});
  bundle.launches.insert(bundle.launches.begin(),
                         {json{{"seq", 0}, {"kernel", "fill"}}, launchBuffer(0)});
  bundle.launches.push_back({json{{"seq", 3}, {"kernel", "check"}}, launchBuffer(0)});
  auto scope = query::parseScope("");
  ASSERT_TRUE(scope);
  auto timing = regionTiming(evidence::encodeBundle(bundle), "", *scope);
  ASSERT_TRUE(timing) << timing.error().text();
  EXPECT_EQ((*timing)["duration"]["launches"], 2);
  const std::string notes = (*timing)["duration"]["launch_notes"].dump();
  EXPECT_NE(notes.find("1 launch of kernel `fill` left out: no trace map"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("kernel `check`"), std::string::npos);
}

}  // namespace
}  // namespace argus::synthesis
