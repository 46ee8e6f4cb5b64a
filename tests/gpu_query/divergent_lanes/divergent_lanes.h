// Shared by the divergent_lanes kernel and its host check.
#pragma once

inline constexpr int kDivergentThreads = 128;
inline constexpr int kDivergentCtas = 4;
inline constexpr int kDivergentIterations = 8;

__host__ __device__ inline float divergentLow(float v) {
  return v * 1.0001f + 1.0f;
}
__host__ __device__ inline float divergentHigh(float v) {
  return v * 0.9999f + 2.0f;
}
__host__ __device__ inline float divergentAfter(float v) {
  return v + 0.5f;
}

extern "C" __global__ void divergent_lanes(float* out, int n);
