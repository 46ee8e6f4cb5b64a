// The seed's "Isolated collectors" configuration (BENCHMARKS.md, "Per-PC collectors"): 128 CTAs
// of 256 threads, eight region occurrences, 2,048 dependent FMAs per thread (256 per occurrence).
// The occurrence loop is unrolled so that the eight `occurrence` regions are eight code copies,
// as eight marked sites would be; the FMA chain in each is one dependent chain.
#include <argus/region.cuh>

extern "C" __global__ void __launch_bounds__(256) pc_overhead(float* out, float a, float b) {
  float acc = 1.0f + 1e-3f * static_cast<float>(threadIdx.x);
#pragma unroll
  for (int occ = 0; occ < 8; ++occ) {
    ARGUS_REGION_BEGIN("occurrence");
#pragma unroll 1
    for (int i = 0; i < 32; ++i) {
#pragma unroll
      for (int k = 0; k < 8; ++k) acc = fmaf(acc, a, b);
    }
    ARGUS_REGION_END("occurrence");
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
