// Seed microbenchmark kernels (see seed_kernel.h). The region `occurrence` is marked around each of
// the 64 occurrences with its index as the iteration coordinate, so a full_trace variant records
// 64 records per warp (128 x 8 warps x 64 = 65,536 records per launch) and a trace_free variant
// records none. The occurrence loop is kept rolled (#pragma unroll 1), as are the inner loops, so
// the marked and unmarked code differ only by the recording instructions the trace pass adds.
#include <argus/region.cuh>

#include "seed_kernel.h"

extern "C" __global__ void __launch_bounds__(kSeedThreads)
    seed_compute(float* out, int inner, float a, float b) {
  const int tid = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  float acc = 1.0f + 1e-3f * static_cast<float>(threadIdx.x);
#pragma unroll 1
  for (int occ = 0; occ < kSeedOccurrences; ++occ) {
    ARGUS_REGION_BEGIN_ITER("occurrence", occ);
#pragma unroll 1
    for (int i = 0; i < inner; ++i) {
#pragma unroll
      for (int k = 0; k < kSeedFmasPerIteration; ++k) acc = fmaf(acc, a, b);
    }
    ARGUS_REGION_END("occurrence");
  }
  out[tid] = acc;
}

extern "C" __global__ void __launch_bounds__(kSeedThreads)
    seed_memory(float* out, const int* __restrict__ next, const float* __restrict__ values,
                int inner, int tableMask) {
  const int tid = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  int j = (tid * 977) & tableMask;
  float acc = 0.0f;
#pragma unroll 1
  for (int occ = 0; occ < kSeedOccurrences; ++occ) {
    ARGUS_REGION_BEGIN_ITER("occurrence", occ);
#pragma unroll 1
    for (int i = 0; i < inner; ++i) {
      j = __ldg(next + j);  // indexed (dependent) load
      const float v = __ldg(values + j);
      acc = fmaf(acc, 0.999f, v);  // followed by FMAs
      acc = fmaf(acc, 0.999f, 0.5f);
    }
    ARGUS_REGION_END("occurrence");
  }
  out[tid] = acc + static_cast<float>(j);
}
