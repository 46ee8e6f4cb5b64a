// Host interface of the warp_specialized example kernel (kernel.cu).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

/// Tile sizes of the warp-specialized GEMM; M, N and K must be multiples of them.
inline constexpr int kWsGemmBlockM = 128;
inline constexpr int kWsGemmBlockN = 128;
inline constexpr int kWsGemmBlockK = 64;

/// C[m x n] (FP32, row-major) = A[m x k] * B[n x k]^T with A and B FP16 and K-major. Launches
/// asynchronously on `stream`; returns the first CUDA error.
cudaError_t launchWarpSpecializedGemm(const __half* a, const __half* b, float* c, int m, int n,
                                      int k, cudaStream_t stream);
