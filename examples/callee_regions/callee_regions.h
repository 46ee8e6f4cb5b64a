// Host interface of the callee_regions example kernel (kernel.cu) and its fixed trip counts, from
// which every region's occurrence count per warp follows.
#pragma once

#include <cuda_runtime.h>

/// Threads per block; every thread runs the same path (no divergence anywhere).
inline constexpr int kCalleeThreads = 128;
/// Region `tiles/tile`: this many trips of the kernel's loop, one call of the helper each.
inline constexpr int kTiles = 8;
/// The helper's region `combine`: this many trips of its loop per call.
inline constexpr int kCombineTrips = 16;

/// The helper's loop step, shared by the kernel and the CPU reference.
__host__ __device__ inline float combineStep(float acc, float v) {
  return acc * 0.75f + v;
}

/// y[i] = f(x) for blocks * kCalleeThreads elements, x holding kTiles values per element (see
/// kernel.cu). Launches asynchronously on `stream`; returns the first CUDA error.
cudaError_t launchCalleeRegions(const float* x, float* y, int blocks, cudaStream_t stream);
