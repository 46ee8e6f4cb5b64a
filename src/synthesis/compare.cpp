// A/B comparison of region timings (argus/synthesis/compare.h).
#include "argus/synthesis/compare.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

namespace argus::synthesis {
namespace {

using json = nlohmann::json;

double median(std::vector<uint64_t> v) {
  const size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
  const double upper = static_cast<double>(v[n / 2]);
  if (n % 2 == 1) return upper;
  const double lower = static_cast<double>(
      *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2)));
  return (lower + upper) / 2;
}

/// The median of a resample (with replacement) of `v`.
double resampledMedian(const std::vector<uint64_t>& v, std::mt19937_64& rng,
                       std::vector<uint64_t>& scratch) {
  std::uniform_int_distribution<size_t> pick(0, v.size() - 1);
  scratch.resize(v.size());
  for (auto& x : scratch) x = v[pick(rng)];
  return median(scratch);
}

json side(const std::vector<uint64_t>& v) {
  return v.empty() ? json(nullptr) : json{{"count", v.size()}, {"median", median(v)}};
}

json changeJson(const Change& c) {
  return {{"delta", c.delta},
          {"relative", c.a != 0 ? json(c.delta / c.a) : json(nullptr)},
          {"low", c.low},
          {"high", c.high},
          {"within_noise", c.withinNoise}};
}

}  // namespace

Change medianChange(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b,
                    const CompareOptions& options) {
  Change c;
  c.a = median(a);
  c.b = median(b);
  c.delta = c.b - c.a;
  std::mt19937_64 rng(options.seed);
  std::vector<double> deltas;
  deltas.reserve(options.resamples);
  std::vector<uint64_t> scratch;
  for (uint32_t i = 0; i < options.resamples; ++i) {
    const double ma = resampledMedian(a, rng, scratch);
    const double mb = resampledMedian(b, rng, scratch);
    deltas.push_back(mb - ma);
  }
  std::sort(deltas.begin(), deltas.end());
  const double tail = (1 - options.confidence) / 2;
  auto at = [&](double q) {
    const auto i = static_cast<size_t>(std::floor(q * static_cast<double>(deltas.size() - 1)));
    return deltas[std::min(i, deltas.size() - 1)];
  };
  c.low = deltas.empty() ? c.delta : at(tail);
  c.high = deltas.empty() ? c.delta : at(1 - tail);
  c.withinNoise = c.low <= 0 && c.high >= 0;
  return c;
}

json compareSamples(const RegionSamples& a, const RegionSamples& b, const CompareOptions& options) {
  std::set<std::string> paths;
  for (const auto& [path, _] : a.durations) paths.insert(path);
  for (const auto& [path, _] : b.durations) paths.insert(path);
  json regions = json::array();
  static const std::vector<uint64_t> kNone;
  for (const auto& path : paths) {
    const auto ia = a.durations.find(path), ib = b.durations.find(path);
    const auto& sa = ia == a.durations.end() ? kNone : ia->second;
    const auto& sb = ib == b.durations.end() ? kNone : ib->second;
    json entry{{"path", path}, {"a", side(sa)}, {"b", side(sb)}};
    if (sa.empty() || sb.empty())
      entry["only_in"] = sa.empty() ? "b" : "a";
    else
      entry["change"] = changeJson(medianChange(sa, sb, options));
    regions.push_back(std::move(entry));
  }
  json out{{"unit", a.unit},
           {"regions", regions},
           {"method",
            {{"statistic", "median occurrence duration"},
             {"interval",
              "percentile bootstrap of median(B) - median(A), each side "
              "resampled on its own"},
             {"resamples", options.resamples},
             {"confidence", options.confidence},
             {"seed", options.seed}}}};
  if (a.unit != b.unit) out["unit_b"] = b.unit;
  if (!a.kernelNs.empty() && !b.kernelNs.empty())
    out["traced_kernel"] = {{"a", side(a.kernelNs)},
                            {"b", side(b.kernelNs)},
                            {"change", changeJson(medianChange(a.kernelNs, b.kernelNs, options))}};
  return out;
}

}  // namespace argus::synthesis
