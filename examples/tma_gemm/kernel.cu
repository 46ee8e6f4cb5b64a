// tma_gemm: a pipelined FP16 GEMM for sm_90a. One producer warp issues two TMA tile loads (A and
// B) per K-iteration into a 3-stage shared-memory ring guarded by mbarriers; one consumer
// warpgroup multiplies each stage with WGMMA (m64n128k16, FP32 accumulate) and releases it.
//
// Regions (paths from the kernel root):
//   mainloop          one K-iteration, iter = k-tile index; role=producer in the producer warp,
//                     role=consumer in the consumer warpgroup (entered from both role branches)
//   mainloop/tma_load expect_tx + the two TMA loads of one iteration (8 iterations x 2 loads with
//                     the default K = 512: 16 forced-wait probe candidates)
//   mainloop/mma      the four WGMMAs of one stage and the wait for them
//   epilogue          accumulator registers to global memory
#include <argus/region.cuh>

#include "../common/hopper.cuh"
#include "../common/tma_host.h"
#include "tma_gemm.h"

namespace tma_gemm_config {

inline constexpr int kStages = 3;
inline constexpr int kConsumerThreads = 128;  // one warpgroup
inline constexpr int kConsumerWarps = kConsumerThreads / 32;
inline constexpr int kThreads = kConsumerThreads + 32;  // + one producer warp
inline constexpr int kProducerWarp = kConsumerWarps;
inline constexpr std::uint32_t kTileABytes = kTmaGemmBlockM * kTmaGemmBlockK * 2;
inline constexpr std::uint32_t kTileBBytes = kTmaGemmBlockN * kTmaGemmBlockK * 2;
inline constexpr std::uint32_t kStageBytes = kTileABytes + kTileBBytes;
// 128B-swizzled tiles must start on 1024-byte boundaries; dynamic shared memory is only
// guaranteed 16-byte alignment, hence the slack.
inline constexpr std::uint32_t kSmemBytes = kStages * kStageBytes + 1024;
inline constexpr int kAccumulators = kTmaGemmBlockN / 2;  // m64n128 FP32: 64 registers per thread

static_assert(kTileABytes % 1024 == 0 && kStageBytes % 1024 == 0, "tiles must stay 1024-aligned");
static_assert(kTmaGemmBlockK * 2 == 128, "BK must span exactly one 128-byte swizzle row");

}  // namespace tma_gemm_config

using namespace tma_gemm_config;

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    tma_gemm(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB,
             float* __restrict__ c, int m, int n, int k) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // nvcc 13 with -arch=sm_90a also embeds generic compute_90 PTX, where wgmma does not exist.
  // That copy is never chosen on an sm_90 device (the sm_90a cubin is), so it only traps.
  (void)c, (void)m, (void)n, (void)k;
  __trap();
#else
  extern __shared__ unsigned char smemRaw[];
  __shared__ alignas(8) std::uint64_t fullBarrier[kStages];
  __shared__ alignas(8) std::uint64_t emptyBarrier[kStages];

  const std::uint32_t smemBase = (example::smemAddress(smemRaw) + 1023u) & ~1023u;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int m0 = static_cast<int>(blockIdx.y) * kTmaGemmBlockM;
  const int n0 = static_cast<int>(blockIdx.x) * kTmaGemmBlockN;
  const int kTiles = k / kTmaGemmBlockK;
  (void)m;

  if (threadIdx.x == 0) {
    example::prefetchTensorMap(&mapA);
    example::prefetchTensorMap(&mapB);
    for (int s = 0; s < kStages; ++s) {
      example::mbarrierInit(example::smemAddress(&fullBarrier[s]), 1);
      // Every consumer warp arrives after its own wgmma.wait_group, so a stage is only reused
      // once all four warps have finished reading it.
      example::mbarrierInit(example::smemAddress(&emptyBarrier[s]), kConsumerWarps);
    }
    example::fenceBarrierInit();
  }
  __syncthreads();

  if (warp == kProducerWarp) {
    if (lane == 0) {
      for (int kt = 0; kt < kTiles; ++kt) {
        ARGUS_REGION_ITER_ROLE("mainloop", kt, "producer");
        const int s = kt % kStages;
        const std::uint32_t phase = static_cast<std::uint32_t>(kt / kStages) & 1u;
        const std::uint32_t full = example::smemAddress(&fullBarrier[s]);
        const std::uint32_t tileA = smemBase + static_cast<std::uint32_t>(s) * kStageBytes;
        example::mbarrierWait(example::smemAddress(&emptyBarrier[s]), phase ^ 1u);
        ARGUS_REGION("tma_load");
        example::mbarrierArriveExpectTx(full, kStageBytes);
        example::tmaLoad2d(tileA, &mapA, full, kt * kTmaGemmBlockK, m0);
        example::tmaLoad2d(tileA + kTileABytes, &mapB, full, kt * kTmaGemmBlockK, n0);
      }
    }
    return;
  }

  float acc[kAccumulators];
#pragma unroll
  for (int i = 0; i < kAccumulators; ++i) acc[i] = 0.0f;

  for (int kt = 0; kt < kTiles; ++kt) {
    ARGUS_REGION_ITER_ROLE("mainloop", kt, "consumer");
    const int s = kt % kStages;
    const std::uint32_t phase = static_cast<std::uint32_t>(kt / kStages) & 1u;
    const std::uint32_t tileA = smemBase + static_cast<std::uint32_t>(s) * kStageBytes;
    example::mbarrierWait(example::smemAddress(&fullBarrier[s]), phase);
    {
      ARGUS_REGION("mma");
      example::fenceAccumulators(acc);
      example::wgmmaFence();
#pragma unroll
      for (int kk = 0; kk < kTmaGemmBlockK / 16; ++kk) {
        // 16 halfs = 32 bytes further along K inside the swizzled 128-byte rows.
        const std::uint32_t offset = static_cast<std::uint32_t>(kk) * 32u;
        example::wgmmaM64N128K16(acc, example::smemDescriptorSw128(tileA + offset),
                                 example::smemDescriptorSw128(tileA + kTileABytes + offset), 1);
      }
      example::wgmmaCommitGroup();
      example::wgmmaWaitGroup<0>();
      example::fenceAccumulators(acc);
    }
    __syncwarp();
    if (lane == 0) example::mbarrierArrive(example::smemAddress(&emptyBarrier[s]));
  }

  ARGUS_REGION("epilogue");
  const int t = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int i = 0; i < kAccumulators; i += 2) {
    const int row = m0 + example::accumulatorRow(t, i);
    const int col = n0 + example::accumulatorCol(t, i);
    *reinterpret_cast<float2*>(&c[static_cast<long long>(row) * n + col]) =
        make_float2(acc[i], acc[i + 1]);
  }
#endif
}

cudaError_t launchTmaGemm(const __half* a, const __half* b, float* c, int m, int n, int k,
                          cudaStream_t stream) {
  if (m <= 0 || n <= 0 || k <= 0 || m % kTmaGemmBlockM != 0 || n % kTmaGemmBlockN != 0 ||
      k % kTmaGemmBlockK != 0) {
    return cudaErrorInvalidValue;
  }
  CUtensorMap mapA{};
  CUtensorMap mapB{};
  if (!example::encodeTensorMapF16(&mapA, a, static_cast<std::uint64_t>(m),
                                   static_cast<std::uint64_t>(k), kTmaGemmBlockM, kTmaGemmBlockK) ||
      !example::encodeTensorMapF16(&mapB, b, static_cast<std::uint64_t>(n),
                                   static_cast<std::uint64_t>(k), kTmaGemmBlockN, kTmaGemmBlockK)) {
    return cudaErrorInvalidValue;
  }
  cudaError_t status =
      cudaFuncSetAttribute(tma_gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  if (status != cudaSuccess) return status;
  const dim3 grid(static_cast<unsigned>(n / kTmaGemmBlockN),
                  static_cast<unsigned>(m / kTmaGemmBlockM));
  tma_gemm<<<grid, kThreads, kSmemBytes, stream>>>(mapA, mapB, c, m, n, k);
  return cudaGetLastError();
}

int tmaGemmCtasPerSm() {
  int ctas = 0;
  if (cudaFuncSetAttribute(tma_gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes) !=
          cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, tma_gemm, kThreads, kSmemBytes) !=
          cudaSuccess)
    return 0;
  return ctas;
}
