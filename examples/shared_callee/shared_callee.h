// Host interface of the shared_callee example kernel (kernel.cu) and the trip counts that make
// its per-region instruction counts known by construction.
#pragma once

#include <cuda_runtime.h>

/// Threads per block; every thread runs the same path (no divergence anywhere).
inline constexpr int kSharedThreads = 128;
/// Region `light`: this many calls of the helper, each running its loop kLightTrips times.
inline constexpr int kLightCalls = 6;
inline constexpr int kLightTrips = 4;
/// Region `heavy`: few calls with many trips, so call counts say `light`, instructions `heavy`.
inline constexpr int kHeavyCalls = 2;
inline constexpr int kHeavyTrips = 96;
/// Region `inline_work`: this many iterations of inline FMAs, no call.
inline constexpr int kInlineTrips = 10;

/// The helper's loop step, shared by the kernel and the CPU reference.
__host__ __device__ inline float sharedStep(float acc, float x) {
  return acc * 0.75f + x;
}

/// y[i] = f(x[i]) for blocks * kSharedThreads elements (see kernel.cu). Launches asynchronously on
/// `stream`; returns the first CUDA error.
cudaError_t launchSharedCallee(const float* x, float* y, int blocks, cudaStream_t stream);
