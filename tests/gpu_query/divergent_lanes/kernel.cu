// divergent_lanes: regions that the two halves of every warp run apart (issue 5: a warp's records
// are stored by its lane 0, so the occurrences lanes 16-31 run without it must be counted as lost,
// never missing silently). Each of `n` iterations runs `low` in lanes 0-15 and `high` in lanes
// 16-31 (an if/else on the lane: the warp runs the two arms one after the other), then `after`
// with the whole warp again.
#include <argus/region.cuh>

#include "divergent_lanes.h"

extern "C" __global__ void __launch_bounds__(kDivergentThreads) divergent_lanes(float* out, int n) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  float acc = static_cast<float>(threadIdx.x);
  for (int i = 0; i < n; ++i) {
    if (lane < 16) {
      ARGUS_REGION_BEGIN("low");
      acc = divergentLow(acc);
      ARGUS_REGION_END("low");
    } else {
      ARGUS_REGION_BEGIN("high");
      acc = divergentHigh(acc);
      ARGUS_REGION_END("high");
    }
    ARGUS_REGION_BEGIN("after");
    acc = divergentAfter(acc);
    ARGUS_REGION_END("after");
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
