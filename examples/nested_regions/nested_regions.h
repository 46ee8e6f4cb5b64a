// Host interface of the nested_regions example kernel (kernel.cu).
#pragma once

#include <cuda_runtime.h>

/// Columns one block stages in shared memory per iteration; `cols` must be a multiple.
inline constexpr int kNestedChunk = 128;

/// The function the producer applies to each input element (and consumers to small values).
/// Shared by the kernel and the CPU reference so both compute the same thing.
__host__ __device__ inline float nestedTransform(float v) {
  return 0.25f * v * v + 0.5f * v;
}

/// y[r] = sum over c of combine(transform(x[r][c])) for each of `rows` rows of `cols` floats,
/// where combine(t) = 2t for t > 0.1 and transform(t) - t otherwise. Launches asynchronously on
/// `stream`; returns the first CUDA error.
cudaError_t launchNestedRegions(const float* x, float* y, int rows, int cols, cudaStream_t stream);
