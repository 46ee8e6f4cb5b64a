// Ground truth of examples/shared_callee for the attribution tests (the exact one on a warp
// replay, and the GPU one): the example's trip counts and the rule that gives each SASS loop its
// trip count by the region that owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "warp_replay_test_util.h"

namespace argus::synthesis::testing {

// examples/shared_callee/shared_callee.h and its launch: 64 blocks x 128 threads.
inline constexpr uint64_t kLightCalls = 6;
inline constexpr uint64_t kLightTrips = 4;
inline constexpr uint64_t kHeavyCalls = 2;
inline constexpr uint64_t kHeavyTrips = 96;
inline constexpr uint64_t kInlineTrips = 10;
inline constexpr uint64_t kWarps = 64 * 128 / 32;
inline const std::string kKernel = "shared_callee";

/// Trip counts for replayWarp: a kernel loop by the region of its back edge, a helper loop by
/// the region of the call it runs under. `ownerAt(pc)` names the region owning a kernel PC.
inline TripCounts sharedCalleeTrips(std::function<std::string(uint64_t)> ownerAt) {
  return [ownerAt = std::move(ownerAt)](uint64_t backEdge,
                                        const std::vector<uint64_t>& calls) -> uint64_t {
    const std::string region = calls.empty() ? ownerAt(backEdge) : ownerAt(calls.back());
    const std::map<std::string, uint64_t> kernelLoops = {
        {"light", kLightCalls}, {"heavy", kHeavyCalls}, {"inline_work", kInlineTrips}};
    const std::map<std::string, uint64_t> helperLoops = {{"light", kLightTrips},
                                                         {"heavy", kHeavyTrips}};
    const auto& table = calls.empty() ? kernelLoops : helperLoops;
    auto found = table.find(region);
    EXPECT_NE(found, table.end()) << "loop at " << backEdge << " in region `" << region << "`";
    return found == table.end() ? 1 : found->second;
  };
}

}  // namespace argus::synthesis::testing
