// callee_regions: region markers inside a device function that stays a call. The kernel's loop
// region `tiles/tile` (one trip per tile, iteration = the tile) calls the `__noinline__` helper
// `tileStep`, whose own regions `load` and `combine` therefore run as `tiles/tile/load` and
// `tiles/tile/combine` of the kernel, once per tile and warp, with the tile as their iteration.
// Every loop has a fixed, warp-uniform trip count and no thread diverges, so each region's
// occurrences per warp are known: tiles 1, tiles/tile kTiles, load kTiles, combine kTiles.
#include <argus/region.cuh>

#include "callee_regions.h"

// Kept out of line on purpose: its markers sit in a .func of the PTX.
__device__ __noinline__ float tileStep(const float* __restrict__ x, int at, int trips) {
  float v = 0.0f;
  {
    ARGUS_REGION("load");
    v = x[at];
  }
  float acc = v;
  {
    ARGUS_REGION("combine");
#pragma unroll 1
    for (int t = 0; t < trips; ++t) acc = combineStep(acc, v);
  }
  return acc;
}

extern "C" __global__ void __launch_bounds__(kCalleeThreads)
    callee_regions(const float* __restrict__ x, float* __restrict__ y, int trips) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int n = static_cast<int>(gridDim.x * blockDim.x);
  float acc = 0.0f;
  {
    ARGUS_REGION("tiles");
#pragma unroll 1
    for (int tile = 0; tile < kTiles; ++tile) {
      ARGUS_REGION_ITER("tile", tile);
      acc = acc * 0.5f + tileStep(x, tile * n + i, trips);
    }
  }
  y[i] = acc;
}

cudaError_t launchCalleeRegions(const float* x, float* y, int blocks, cudaStream_t stream) {
  if (blocks <= 0) return cudaErrorInvalidValue;
  callee_regions<<<static_cast<unsigned>(blocks), kCalleeThreads, 0, stream>>>(x, y, kCombineTrips);
  return cudaGetLastError();
}
