// Host interface of the specialized_callee example (kernel.cu): which calling regions run, and
// the trip counts that make ptxas compile per-caller clones of the helper differently.
#pragma once

#include <cuda_runtime.h>

/// Threads per block; every thread of a warp takes the same path.
inline constexpr int kSpecializedThreads = 128;

/// The calling regions, as bits of the kernel's `regions` argument (all set: the whole kernel).
enum CallingRegion : unsigned {
  kEight = 1u << 0,   ///< region `eight`: helper(x, 8)
  kThree = 1u << 1,   ///< region `three`: helper(x, 3)
  kFive = 1u << 2,    ///< region `five`: helper(x, 5)
  kNested = 1u << 3,  ///< region `nested`: outer(x), which calls helper(x, 6)
  kAllRegions = kEight | kThree | kFive | kNested,
};

/// The helper's loop step, shared by the kernel and the CPU reference.
__host__ __device__ inline float specializedStep(float acc, float x) {
  return acc * 1.0001f + x;
}

/// y[i] = f(x[i]) for blocks * kSpecializedThreads elements, running the calls of the regions in
/// `regions` only (see kernel.cu). Launches asynchronously on `stream`; returns the first error.
cudaError_t launchSpecializedCallee(const float* x, float* y, unsigned regions, int blocks,
                                    cudaStream_t stream);
