// A/B comparison of two program versions' region timings: per region, the change of the median
// occurrence duration with a bootstrap interval, flagged where the interval holds no change.
// What an optimization loop asks after each candidate (`argus compare`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/synthesis/region_timing.h"

namespace argus::synthesis {

/// How the intervals are made.
struct CompareOptions {
  uint32_t resamples = 2000;  ///< Bootstrap resamples of each side.
  double confidence = 0.95;   ///< Two-sided level of the interval.
  uint64_t seed = 1;  ///< The resampling is deterministic: the same samples, the same answer.
};

/// The change of a statistic from A to B with its interval.
struct Change {
  double a = 0;      ///< A's median.
  double b = 0;      ///< B's median.
  double delta = 0;  ///< b - a.
  double low = 0;    ///< Interval of b - a.
  double high = 0;
  /// The interval holds 0: the data do not tell the versions apart at this confidence.
  bool withinNoise = true;
};

/// The median difference of two samples with a percentile bootstrap interval (each side
/// resampled on its own: occurrences of two runs are not paired). Both samples non-empty.
[[nodiscard]] Change medianChange(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b,
                                  const CompareOptions& options);

/// Every region either side has, and the traced kernel's launch times when both have them, as
/// the `argus.compare/1` document's `duration` part: regions[{path, a: {count, median},
/// b: {...}, change: {delta, relative, low, high, within_noise}}] (a region one side lacks
/// has no change and says which side has it).
[[nodiscard]] nlohmann::json compareSamples(const RegionSamples& a, const RegionSamples& b,
                                            const CompareOptions& options);

}  // namespace argus::synthesis
