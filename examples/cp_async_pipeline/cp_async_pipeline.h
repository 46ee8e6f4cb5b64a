// Host interface of the cp_async_pipeline example kernel (kernel.cu).
#pragma once

#include <cuda_runtime.h>

/// Tile of A one pipeline stage holds: kCpAsyncRows rows x kCpAsyncCols FP32 columns.
inline constexpr int kCpAsyncRows = 32;
inline constexpr int kCpAsyncCols = 128;

/// y[m] = A[m x k] * x[k] (FP32, A row-major). m must be a multiple of kCpAsyncRows and k of
/// kCpAsyncCols. Launches asynchronously on `stream`; returns the first CUDA error.
cudaError_t launchCpAsyncGemv(const float* a, const float* x, float* y, int m, int k,
                              cudaStream_t stream);
