// cp_async_pipeline: a matrix-vector product y = A x whose A tiles stream into shared memory
// through a 3-stage cp.async pipeline (16-byte cp.async.cg copies, one commit group per tile,
// cp.async.wait_group 1 before a tile is used). Runs on any sm_80+ GPU; built for sm_90a like the
// other examples.
//
// Regions (paths from the kernel root):
//   prologue          the copies of the first two tiles (two commit groups)
//   mainloop          one K-tile, iter = tile index
//   mainloop/wait     cp.async.wait_group 1 + __syncthreads: tile `iter` has landed
//   mainloop/load     the 8 cp.async of tile iter + 2 per thread and their commit (forced-wait
//                     probe candidates: 8 copies x the number of tiles)
//   mainloop/compute  each warp's 8 rows of the tile times x
//   epilogue          warp reductions and the store of y
#include <argus/region.cuh>

#include <cstdint>

#include "cp_async_pipeline.h"

namespace cp_async_config {

inline constexpr int kStages = 3;
inline constexpr int kThreads = 128;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kRowsPerWarp = kCpAsyncRows / kWarps;
inline constexpr int kTileFloats = kCpAsyncRows * kCpAsyncCols;
inline constexpr int kChunksPerThread = kTileFloats / 4 / kThreads;  // 16-byte chunks

static_assert(kTileFloats % (4 * kThreads) == 0, "a tile must split into 16-byte chunks evenly");

}  // namespace cp_async_config

using namespace cp_async_config;

namespace {

__device__ inline void cpAsync16(float* dst, const float* src) {
  const auto s = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : : "r"(s), "l"(src) : "memory");
}

__device__ inline void cpAsyncCommit() {
  asm volatile("cp.async.commit_group;" : : : "memory");
}

/// Waits until at most `Pending` committed groups of this thread are still in flight.
template <int Pending>
__device__ inline void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;" : : "n"(Pending) : "memory");
}

/// Issues this thread's copies of tile `kt` (rows m0.., columns kt * kCpAsyncCols..) into `dst`.
__device__ inline void loadTile(float* dst, const float* a, int m0, int k, int kt) {
#pragma unroll
  for (int i = 0; i < kChunksPerThread; ++i) {
    const int chunk = static_cast<int>(threadIdx.x) + i * kThreads;
    const int row = chunk / (kCpAsyncCols / 4);
    const int col = (chunk % (kCpAsyncCols / 4)) * 4;
    cpAsync16(dst + row * kCpAsyncCols + col,
              a + static_cast<long long>(m0 + row) * k + kt * kCpAsyncCols + col);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads)
    cp_async_gemv(const float* __restrict__ a, const float* __restrict__ x, float* __restrict__ y,
                  int m, int k) {
  __shared__ alignas(16) float tiles[kStages][kTileFloats];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int m0 = static_cast<int>(blockIdx.x) * kCpAsyncRows;
  const int kTiles = k / kCpAsyncCols;
  (void)m;

  {
    ARGUS_REGION("prologue");
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < kTiles) loadTile(tiles[s], a, m0, k, s);
      cpAsyncCommit();  // also when empty, so group counting stays uniform
    }
  }

  float partial[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) partial[r] = 0.0f;

  for (int kt = 0; kt < kTiles; ++kt) {
    ARGUS_REGION_ITER("mainloop", kt);
    {
      ARGUS_REGION("wait");
      cpAsyncWait<kStages - 2>();  // groups 0..kt have landed
      __syncthreads();             // ... for every thread; stage (kt - 1) % kStages is free
    }
    {
      ARGUS_REGION("load");
      const int next = kt + kStages - 1;
      if (next < kTiles) loadTile(tiles[next % kStages], a, m0, k, next);
      cpAsyncCommit();
    }
    {
      ARGUS_REGION("compute");
      const float* tile = tiles[kt % kStages];
#pragma unroll
      for (int c = 0; c < kCpAsyncCols / 32; ++c) {
        const int col = lane + 32 * c;
        const float xv = x[kt * kCpAsyncCols + col];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r)
          partial[r] += tile[(warp * kRowsPerWarp + r) * kCpAsyncCols + col] * xv;
      }
    }
  }
  cpAsyncWait<0>();

  ARGUS_REGION("epilogue");
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    float v = partial[r];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (lane == 0) y[m0 + warp * kRowsPerWarp + r] = v;
  }
}

cudaError_t launchCpAsyncGemv(const float* a, const float* x, float* y, int m, int k,
                              cudaStream_t stream) {
  if (m <= 0 || k <= 0 || m % kCpAsyncRows != 0 || k % kCpAsyncCols != 0) {
    return cudaErrorInvalidValue;
  }
  cp_async_gemv<<<static_cast<unsigned>(m / kCpAsyncRows), kThreads, 0, stream>>>(a, x, y, m, k);
  return cudaGetLastError();
}
