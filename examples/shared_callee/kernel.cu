// shared_callee: the ground-truth kernel for exact ownership (docs/architecture.md, "Dynamic
// ownership"). One `__noinline__` helper is called from two regions with different trip counts:
//   light        kLightCalls calls, kLightTrips loop trips each    (many cheap calls)
//   heavy        kHeavyCalls calls, kHeavyTrips loop trips each    (few expensive calls)
//   inline_work  kInlineTrips iterations of inline FMAs, no call
// plus unmarked kernel-body code (load, store). Every loop has a fixed, warp-uniform trip count
// and no thread diverges, so each SASS PC executes a number of times that follows from the trip
// counts alone: the per-region executed-instruction counts are known by construction, and
// weighting the helper's PCs by call counts (6 : 2) gives the wrong split. `#pragma unroll 1`
// keeps every loop a loop, so the SASS has one back edge per loop.
#include <argus/region.cuh>

#include "shared_callee.h"

// Kept out of line on purpose: one SASS body, two calling regions.
__device__ __noinline__ float sharedHelper(float x, int trips) {
  float acc = x;
#pragma unroll 1
  for (int i = 0; i < trips; ++i) acc = sharedStep(acc, x);
  return acc;
}

extern "C" __global__ void __launch_bounds__(kSharedThreads)
    shared_callee(const float* __restrict__ x, float* __restrict__ y, int lightTrips,
                  int heavyTrips) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const float v = x[i];
  float acc = 0.0f;
  {
    ARGUS_REGION("light");
#pragma unroll 1
    for (int c = 0; c < kLightCalls; ++c)
      acc += sharedHelper(v + static_cast<float>(c), lightTrips);
  }
  {
    ARGUS_REGION("heavy");
#pragma unroll 1
    for (int c = 0; c < kHeavyCalls; ++c) acc += sharedHelper(acc, heavyTrips);
  }
  {
    ARGUS_REGION("inline_work");
#pragma unroll 1
    for (int t = 0; t < kInlineTrips; ++t) acc = acc * 0.5f + v;
  }
  y[i] = acc;
}

cudaError_t launchSharedCallee(const float* x, float* y, int blocks, cudaStream_t stream) {
  if (blocks <= 0) return cudaErrorInvalidValue;
  shared_callee<<<static_cast<unsigned>(blocks), kSharedThreads, 0, stream>>>(x, y, kLightTrips,
                                                                              kHeavyTrips);
  return cudaGetLastError();
}
