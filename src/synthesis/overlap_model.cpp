// The closed-form all-gather + GEMM overlap model and its ranking
// (argus/synthesis/overlap_model.h).
#include "argus/synthesis/overlap_model.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace argus::synthesis {

CommTable::CommTable(const std::vector<CommGroup>& groups, std::string source) {
  // A chunk of unknown size (an NCCL kernel outside any labelled range, such as a barrier's
  // all-reduce) says nothing about time per byte: it stays out of the table.
  for (const auto& g : groups)
    if ((source.empty() || g.source == source) && g.bytes > 0) groups_.push_back(g);
}

Result<std::pair<double, bool>> CommTable::chunkTimeNs(uint64_t bytes, int sms) const {
  std::vector<const CommGroup*> atR;
  for (const auto& g : groups_) {
    if (g.sms != sms) continue;
    if (g.bytes == bytes) return std::pair{g.medianNs, true};
    atR.push_back(&g);
  }
  if (atR.empty())
    return fail("overlap_model", fmt::format("no communication chunk was measured with {} SMs; "
                                             "trace the stand-in (or NCCL) at that reservation",
                                             sms));
  if (atR.size() == 1) {
    // One size: scale by bytes at its throughput (no latency term can be separated).
    const auto& g = *atR.front();
    return std::pair{g.medianNs * static_cast<double>(bytes) / static_cast<double>(g.bytes), false};
  }
  // Least squares t = a + c·bytes.
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto* g : atR) {
    const double x = static_cast<double>(g->bytes), y = g->medianNs;
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double den = n * sxx - sx * sx;
  const double c = den != 0 ? (n * sxy - sx * sy) / den : 0;
  const double a = (sy - c * sx) / n;
  return std::pair{std::max(0.0, a + c * static_cast<double>(bytes)), false};
}

double CommTable::launchOverheadNs(int sms) const {
  std::vector<double> v;
  for (const auto& g : groups_)
    if (g.sms == sms && g.launchOverheadNs >= 0) v.push_back(g.launchOverheadNs);
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double chunkComputeNs(const GemmProblem& problem, const TileTiming& tile, int s, int r) {
  const int64_t rows = problem.m / s;
  const int64_t tiles = ((rows + problem.tileM - 1) / problem.tileM) *
                        ((problem.n + problem.tileN - 1) / problem.tileN);
  const int64_t sms = problem.totalSms - r;
  if (sms <= 0 || rows <= 0) return 0;
  const int64_t occupancy = std::max(1, problem.ctasPerSm);
  const int64_t perSm = (tiles + sms - 1) / sms;
  const int64_t waves = (perSm + occupancy - 1) / occupancy;
  const int64_t shared = std::min(perSm, occupancy);
  const double measured = tile.mainNs + tile.epilogueNs;
  double tileNs = measured;
  if (tile.aloneNs > 0 && tile.coResident > 1)
    tileNs = tile.aloneNs + (measured - tile.aloneNs) * static_cast<double>(shared - 1) /
                                static_cast<double>(tile.coResident - 1);
  else if (tile.aloneNs > 0 && shared == 1)
    tileNs = tile.aloneNs;
  return static_cast<double>(waves) * tileNs;
}

double pipelineTimeNs(int s, int p, double tCommNs, double tCompNs) {
  const double stages = static_cast<double>(s) / static_cast<double>(p);
  const double comm = static_cast<double>(p) * tCommNs;
  const double comp = static_cast<double>(p) * tCompNs;
  return comm + (stages - 1.0) * std::max(comm, comp) + comp;
}

Result<std::vector<OverlapCandidate>> rankOverlap(const GemmProblem& problem,
                                                  const TileTiming& tile, const CommTable& comm,
                                                  const OverlapOptions& options) {
  std::vector<OverlapCandidate> out;
  const double operandBytes = static_cast<double>(problem.m) * static_cast<double>(problem.k) *
                              problem.elementBytes * problem.gatherFraction;
  for (int s : options.splits)
    for (int r : options.commSms)
      for (int p : options.stepsPerBarrier) {
        if (s <= 0 || p <= 0 || s % p != 0 || r >= problem.totalSms || r < 0) continue;
        if (problem.m % s != 0 || problem.m / s < 1) continue;
        OverlapCandidate c;
        c.s = s;
        c.r = r;
        c.p = p;
        c.chunkBytes = static_cast<uint64_t>(std::llround(operandBytes / s));
        auto t = comm.chunkTimeNs(c.chunkBytes, r);
        if (!t) return std::unexpected(t.error());
        c.tCommNs = t->first;
        c.commMeasured = t->second;
        c.tCompNs = chunkComputeNs(problem, tile, s, r);
        c.launchOverheadNs = options.addLaunchOverhead ? comm.launchOverheadNs(r) : 0;
        c.predictedNs = c.launchOverheadNs + pipelineTimeNs(s, p, c.tCommNs, c.tCompNs);
        out.push_back(c);
      }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.predictedNs < b.predictedNs; });
  return out;
}

nlohmann::json candidateJson(const OverlapCandidate& c) {
  nlohmann::json j = {{"S", c.s},
                      {"R", c.r},
                      {"P", c.p},
                      {"chunk_bytes", c.chunkBytes},
                      {"t_comm_ns", c.tCommNs},
                      {"t_comm_measured", c.commMeasured},
                      {"t_comp_ns", c.tCompNs},
                      {"launch_overhead_ns", c.launchOverheadNs},
                      {"predicted_ns", c.predictedNs},
                      {"qualification", "derived"}};
  if (c.measuredNs) j["measured_ns"] = *c.measuredNs;
  return j;
}

}  // namespace argus::synthesis
