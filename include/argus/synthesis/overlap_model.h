// The closed-form overlap model of an all-gather + GEMM pipeline and the ranking of its
// configurations (S splits of the gathered operand, R SMs reserved for communication, P steps
// per communication barrier):
//   T = o + P·t_comm + (S/P − 1)·max(P·t_comm, P·t_comp) + P·t_comp
// which for P = 1 is the seed's T = t_comm + (S−1)·max(t_comm, t_comp) + t_comp, plus the
// communication's launch overhead o once (later launches are queued while work runs).
// t_comp of one chunk comes from per-tile region timings (T_main + T_epilogue per tile, from a
// region trace) and the waves the chunk's tiles need on the SMs left to compute, with as many
// CTAs per SM as the kernel's occupancy allows; t_comm of one chunk from the system trace (exact
// group when measured, else a per-R latency/bandwidth fit).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "argus/support/status.h"
#include "argus/synthesis/comm_signals.h"

namespace argus::synthesis {

/// GEMM C[M,N] = A[M,K]·B[K,N]; A is the gathered operand, split along M into S chunks.
struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  int64_t tileM = 128, tileN = 128;
  int elementBytes = 2;
  int totalSms = 132;
  int ctasPerSm = 1;  ///< GEMM CTAs one SM holds at once (the CUDA occupancy API's answer)
  /// Bytes of A moved per chunk = m·k·elementBytes·gatherFraction / S (single-GPU stand-in: 1;
  /// an all-gather over W ranks: (W−1)/W).
  double gatherFraction = 1.0;
};

/// Per-tile compute time from region timings. A tile's time depends on how many CTAs share its
/// SM: mainNs/epilogueNs were measured in a run with `coResident` CTAs per SM; aloneNs (when
/// known) in a run with one. Between them the time is interpolated linearly in CTAs per SM.
struct TileTiming {
  double mainNs = 0;      ///< T_main: mainloop time of one tile (all its k-steps)
  double epilogueNs = 0;  ///< T_epilogue of one tile
  double aloneNs = 0;     ///< T_main + T_epilogue with one CTA per SM (0: not measured)
  int coResident = 1;     ///< CTAs per SM in the run that measured mainNs and epilogueNs
};

/// t_comm(bytes, R): exact measured groups, else a least-squares fit t = a_R + bytes / b_R over
/// the groups measured at R.
class CommTable {
 public:
  explicit CommTable(const std::vector<CommGroup>& groups, std::string source = "");
  /// Per-chunk time and whether it was measured exactly; error when nothing was measured at R.
  [[nodiscard]] Result<std::pair<double, bool>> chunkTimeNs(uint64_t bytes, int sms) const;
  /// Median launch overhead measured at R (0 when none).
  [[nodiscard]] double launchOverheadNs(int sms) const;

 private:
  std::vector<CommGroup> groups_;
};

struct OverlapCandidate {
  int s = 1, r = 0, p = 1;
  uint64_t chunkBytes = 0;
  double tCommNs = 0, tCompNs = 0, launchOverheadNs = 0;
  double predictedNs = 0;
  bool commMeasured = false;  ///< t_comm from an exact group, not the fit
  std::optional<double> measuredNs;
};

/// Compute time of one chunk: its tiles spread over totalSms − R SMs, c = ceil(tiles / SMs) per
/// SM, run in ceil(c / ctasPerSm) waves, each as long as a tile with min(c, ctasPerSm) CTAs per
/// SM takes.
[[nodiscard]] double chunkComputeNs(const GemmProblem& problem, const TileTiming& tile, int s,
                                    int r);

/// T for given per-chunk times (P must divide S). [thread-safe]
[[nodiscard]] double pipelineTimeNs(int s, int p, double tCommNs, double tCompNs);

struct OverlapOptions {
  std::vector<int> splits{1, 2, 4, 8};
  std::vector<int> commSms{8, 16, 32};
  std::vector<int> stepsPerBarrier{1};
  bool addLaunchOverhead = true;  ///< add the measured launch overhead (once per pipeline)
};

/// Evaluates the model over the grid and returns candidates sorted by predicted time (fastest
/// first). Configurations whose S is not a multiple of P, or leave no SM to compute, or whose
/// chunk has no rows, are skipped; an R with no communication measurement is an error.
[[nodiscard]] Result<std::vector<OverlapCandidate>> rankOverlap(const GemmProblem& problem,
                                                                const TileTiming& tile,
                                                                const CommTable& comm,
                                                                const OverlapOptions& options);

[[nodiscard]] nlohmann::json candidateJson(const OverlapCandidate& c);

}  // namespace argus::synthesis
