// Attribution on real builds of examples/shared_callee (ptxas + nvdisasm, no GPU): the reference
// build and the mapping build (clone_shared_callees + paint_ptx) join PC for PC through PTX
// instruction identity, and with per-PC counts predicted by replaying one warp through each
// build's SASS with the example's fixed trip counts (warp_replay_test_util.h), the attributed
// per-region instruction counts of the reference build equal the ground truth (the mapping
// build's counts, where every PC has one owner) exactly, while call-count weighting does not.
// On the H200 the same counts come from the CUPTI SASS collector; that they equal this replay is
// the GPU half of the check (see the lead's gpu test).
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <set>
#include <tuple>

#include "argus/passes/transforms.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/sass/pcmap.h"
#include "argus/support/process.h"
#include "argus/synthesis/attribution.h"
#include "shared_callee_truth.h"
#include "warp_replay_test_util.h"

namespace argus::synthesis {
namespace {

namespace fs = std::filesystem;

using testing::kHeavyCalls;
using testing::kKernel;
using testing::kLightCalls;
using testing::kWarps;
const std::string kHelper = "_Z12sharedHelperfi";

struct Build {
  fs::path cubin;
  std::vector<sass::PcEntry> pcmap;
  std::map<uint64_t, uint64_t> perWarp;  ///< replayed executions per PC of one warp
  /// Replayed executions per (PC, kernel CALL PC it ran under, or kNoCall) of one warp.
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> byCallSite;
};

class SharedCalleeBuilds : public ::testing::Test {
 protected:
  void SetUp() override {
    auto text = readFile(fs::path(ARGUS_TEST_DATA_DIR) / "ptx" / "examples_shared_callee.ptx");
    ASSERT_TRUE(text.has_value()) << text.error().text();
    auto parsed = ptx::parseModule(*text, "examples_shared_callee.ptx");
    ASSERT_TRUE(parsed.has_value()) << parsed.error().text();
    auto tmp = makeTempDir("argus-attribution");
    ASSERT_TRUE(tmp.has_value());
    dir_ = *tmp;

    ptx::Module painted = *parsed;
    auto paint = passes::applyTransforms(painted, {"paint_ptx"}, {});
    ASSERT_TRUE(paint.has_value()) << paint.error().text();
    ptx::Module mapping = *parsed;
    auto clone = passes::applyTransforms(mapping, {"clone_shared_callees", "paint_ptx"}, {});
    ASSERT_TRUE(clone.has_value()) << clone.error().text();

    auto unpainted = sass::assemblePtx(ptx::printModule(*parsed), "sm_90a", dir_, "reference",
                                       /*lineInfo=*/true);
    if (!unpainted && unpainted.error().message.find("ptxas failed") == std::string::npos) {
      skip_ = unpainted.error().text();
      return;
    }
    ASSERT_TRUE(unpainted.has_value()) << unpainted.error().text();
    if (!findTool("nvdisasm")) {
      skip_ = "nvdisasm not found";
      return;
    }
    ASSERT_NO_FATAL_FAILURE(make(painted, paint->paintMap, "painted", reference_));
    ASSERT_NO_FATAL_FAILURE(make(mapping, clone->paintMap, "mapping", mapping_));
    // The map of the painted build is the reference build's map only if the SASS is the same.
    auto same = sass::sameSass(*unpainted, reference_.cubin);
    ASSERT_TRUE(same.has_value()) << same.error().text();
  }

  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  void make(const ptx::Module& module, const nlohmann::json& paintMap, const std::string& stem,
            Build& build) {
    auto cubin = sass::assemblePtx(ptx::printModule(module), "sm_90a", dir_, stem, true);
    ASSERT_TRUE(cubin.has_value()) << cubin.error().text();
    build.cubin = *cubin;
    auto map = sass::readPcMap(*cubin, paintMap);
    ASSERT_TRUE(map.has_value()) << map.error().text();
    build.pcmap = std::move(*map);
    auto text = sass::disassemble(*cubin, /*lineInfo=*/false);
    ASSERT_TRUE(text.has_value()) << text.error().text();
    const auto functions = testing::parseSass(*text);
    ASSERT_TRUE(functions.contains(kKernel));
    const auto& pcmap = build.pcmap;
    auto ownerAt = [&pcmap](uint64_t pc) -> std::string {
      for (const auto& e : pcmap) {
        if (e.function == kKernel && e.pc == pc && e.owners.size() == 1) {
          return e.owners[0].region;
        }
      }
      return "?";
    };
    auto replay = testing::replayWarp(functions.at(kKernel), testing::sharedCalleeTrips(ownerAt));
    ASSERT_TRUE(replay.has_value()) << replay.error().text();
    build.perWarp = std::move(replay->perPc);
    build.byCallSite = std::move(replay->byCallSite);
  }

  static std::vector<PcMetrics> counts(const Build& build) {
    std::vector<PcMetrics> out;
    for (const auto& [pc, n] : build.perWarp) {
      out.push_back({kKernel, pc, {{std::string(kInstExecuted), static_cast<double>(n * kWarps)}}});
    }
    return out;
  }

  fs::path dir_;
  std::string skip_;
  Build reference_;
  Build mapping_;
};

TEST_F(SharedCalleeBuilds, EveryPcOfTheSharedHelperJoinsOnePcInEachCopy) {
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  const PcJoin join = joinBuilds(reference_.pcmap, mapping_.pcmap);
  // ptxas compiles the builds differently where a copy has one caller: it moves the trip-count
  // parameter load from the call site into each copy (an extra LDC per copy, none in the
  // kernel). Those groups differ in size and are reported; none of them holds a PC of the
  // reference with several owners, which is all that needs the mapping run.
  std::set<std::tuple<std::string, std::string, size_t>> mismatched;
  for (const auto& m : join.mismatches) {
    if (m.unjoinedReferencePcs > 0) mismatched.insert({m.function, m.ptxFunction, m.statement});
    std::cout << "join mismatch (reported, not guessed): " << toJson(m).dump() << "\n";
  }
  EXPECT_FALSE(join.mismatches.empty());  // the moved parameter loads
  size_t helperPcs = 0;
  for (size_t i = 0; i < reference_.pcmap.size(); ++i) {
    const auto& e = reference_.pcmap[i];
    if (!e.line || e.padding) continue;
    if (e.owners.size() > 1) {
      ++helperPcs;
      EXPECT_EQ(e.ptxFunction, kHelper) << e.instruction;
      EXPECT_FALSE(mismatched.contains({e.function, e.ptxFunction, *e.ptxStatement}))
          << e.instruction;
      auto joined = join.mappingOf.find(i);
      ASSERT_NE(joined, join.mappingOf.end()) << e.instruction;
      std::set<std::string> copies;
      for (size_t q : joined->second) {
        const auto& c = mapping_.pcmap[q];
        EXPECT_EQ(c.originFunction, kHelper);
        EXPECT_EQ(c.originStatement, e.ptxStatement);
        ASSERT_EQ(c.owners.size(), 1u);
        copies.insert(c.owners[0].region);
      }
      EXPECT_EQ(copies, (std::set<std::string>{"light", "heavy"})) << e.instruction;
    } else if (reference_.perWarp.contains(e.pc) &&
               !mismatched.contains({e.function, e.ptxFunction, *e.ptxStatement})) {
      EXPECT_TRUE(join.mappingOf.contains(i)) << e.instruction;
    }
  }
  EXPECT_GT(helperPcs, 8u);
}

TEST_F(SharedCalleeBuilds, AttributedRegionCountsEqualTheGroundTruthExactly) {
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  // Ground truth of the reference build, without any clone: the replay knows for every execution
  // of a helper PC which of the kernel's CALLs it ran under, and that CALL's single owner.
  auto ownerOf = [this](uint64_t pc) -> std::string {
    for (const auto& e : reference_.pcmap) {
      if (e.function == kKernel && e.pc == pc) {
        EXPECT_EQ(e.owners.size(), 1u) << e.instruction;
        if (e.owners.empty()) return "?";
        return e.owners[0].region.empty() ? std::string(kOutsideRegions) : e.owners[0].region;
      }
    }
    ADD_FAILURE() << "no reference PC " << pc;
    return "?";
  };
  std::map<std::string, double> truth;
  double truthTotal = 0.0;
  for (const auto& [key, n] : reference_.byCallSite) {
    const auto [pc, call] = key;
    const double executed = static_cast<double>(n * kWarps);
    truth[ownerOf(call == testing::kNoCall ? pc : call)] += executed;
    truthTotal += executed;
  }
  ASSERT_TRUE(truth.contains("light") && truth.contains("heavy") && truth.contains("inline_work"));

  MappingRun run{mapping_.pcmap, counts(mapping_)};
  auto report = attribute(reference_.pcmap, counts(reference_), run, {kKernel, {}});
  ASSERT_TRUE(report.has_value()) << report.error().text();
  const auto& r = *report;
  EXPECT_TRUE(r["exact"].get<bool>()) << r["estimate_reasons"].dump(2);
  for (const auto& [region, value] : truth) {
    EXPECT_EQ(r["regions"][region]["inst_executed"]["value"].get<double>(), value) << region;
  }
  EXPECT_EQ(r["total"]["inst_executed"]["value"].get<double>(), truthTotal);
  EXPECT_EQ(r["regions"].size(), truth.size());
  EXPECT_GT(r["regions"]["heavy"]["ambiguity"]["ambiguous_share"].get<double>(), 0.9);
  EXPECT_EQ(r["regions"]["inline_work"]["ambiguity"]["ambiguous_share"].get<double>(), 0.0);

  // Call-count weighting (6 calls from light, 2 from heavy) would give light far more.
  double helperTotal = 0.0;
  double lightHelper = 0.0;
  for (const auto& [key, n] : reference_.byCallSite) {
    if (key.second == testing::kNoCall) continue;
    helperTotal += static_cast<double>(n * kWarps);
    if (ownerOf(key.second) == "light") lightHelper += static_cast<double>(n * kWarps);
  }
  const double callWeighted = helperTotal * static_cast<double>(kLightCalls) /
                              static_cast<double>(kLightCalls + kHeavyCalls);
  EXPECT_GT(lightHelper, 0.0);
  EXPECT_GT(callWeighted, 2.0 * lightHelper);

  // Without the mapping run the same evidence is an estimate, and says so.
  auto estimate = attribute(reference_.pcmap, counts(reference_), std::nullopt, {kKernel, {}});
  ASSERT_TRUE(estimate.has_value());
  EXPECT_TRUE((*estimate)["estimate"].get<bool>());
  EXPECT_NE((*estimate)["regions"]["light"]["inst_executed"]["value"].get<double>(),
            truth["light"]);
}

}  // namespace
}  // namespace argus::synthesis
