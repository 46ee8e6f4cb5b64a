// Host interface of the tma_gemm example kernel (kernel.cu).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

/// Tile sizes of the tma_gemm kernel; M, N and K must be multiples of them.
inline constexpr int kTmaGemmBlockM = 64;
inline constexpr int kTmaGemmBlockN = 128;
inline constexpr int kTmaGemmBlockK = 64;

/// C[m x n] (FP32, row-major) = A[m x k] * B[n x k]^T with A and B FP16 and K-major (row-major
/// with k contiguous). Launches asynchronously on `stream`; returns the first CUDA error.
cudaError_t launchTmaGemm(const __half* a, const __half* b, float* c, int m, int n, int k,
                          cudaStream_t stream);

/// How many tma_gemm CTAs one SM of the current device holds at once (0 on error).
int tmaGemmCtasPerSm();
