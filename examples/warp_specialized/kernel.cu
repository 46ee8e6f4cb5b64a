// warp_specialized: a warp-specialized FP16 GEMM for sm_90a. Warpgroup 0 is the producer: it
// gives registers back (setmaxnreg.dec) and one thread streams A and B tiles with TMA into a
// 4-stage shared-memory ring. Warpgroups 1 and 2 are consumers: they take the registers
// (setmaxnreg.inc), wait for a full stage, each multiply their 64-row half of the 128x128 tile
// with WGMMA (m64n128k16, FP32 accumulate), release the stage to the producer through an
// "empty" mbarrier, and finally write their accumulators.
//
// Regions (paths from the kernel root; role tags on the role branches):
//   producer                     role=producer, the whole producer warpgroup
//   producer/mainloop            iter = k-tile index (the elected producer thread)
//   producer/mainloop/tma_load   expect_tx + two TMA loads (A tile, B tile)
//   consumer                     role=consumer, both consumer warpgroups
//   consumer/mainloop            iter = k-tile index
//   consumer/mainloop/wait_full  waiting for the stage's TMA bytes
//   consumer/mainloop/mma        four WGMMAs over the stage and the wait for them
//   consumer/epilogue            accumulators to global memory
#include <argus/region.cuh>

#include "../common/hopper.cuh"
#include "../common/tma_host.h"
#include "warp_specialized.h"

namespace ws_gemm_config {

inline constexpr int kStages = 4;
inline constexpr int kWarpgroupThreads = 128;
inline constexpr int kConsumerWarpgroups = 2;
inline constexpr int kThreads = kWarpgroupThreads * (1 + kConsumerWarpgroups);
inline constexpr int kConsumerRows = kWsGemmBlockM / kConsumerWarpgroups;  // 64: one m64 WGMMA
inline constexpr std::uint32_t kTileABytes = kWsGemmBlockM * kWsGemmBlockK * 2;
inline constexpr std::uint32_t kTileBBytes = kWsGemmBlockN * kWsGemmBlockK * 2;
inline constexpr std::uint32_t kStageBytes = kTileABytes + kTileBBytes;
inline constexpr std::uint32_t kConsumerTileABytes = kConsumerRows * kWsGemmBlockK * 2;
// Slack so the ring can start on a 1024-byte boundary (128B swizzle atoms).
inline constexpr std::uint32_t kSmemBytes = kStages * kStageBytes + 1024;
inline constexpr int kAccumulators = kWsGemmBlockN / 2;  // m64n128 FP32: 64 per thread
// 128 * 40 + 256 * 232 = 64512 <= 65536 registers per SM for the single resident CTA.
inline constexpr int kProducerRegisters = 40;
inline constexpr int kConsumerRegisters = 232;

static_assert(kConsumerRows == 64, "each consumer warpgroup owns one m64 WGMMA row block");
static_assert(kConsumerTileABytes % 1024 == 0 && kStageBytes % 1024 == 0,
              "WGMMA operand tiles must stay 1024-aligned");
static_assert(kWsGemmBlockK * 2 == 128, "BK must span exactly one 128-byte swizzle row");
static_assert(kWarpgroupThreads * kProducerRegisters +
                      kConsumerWarpgroups * kWarpgroupThreads * kConsumerRegisters <=
                  65536,
              "register budget after setmaxnreg exceeds the register file");

}  // namespace ws_gemm_config

using namespace ws_gemm_config;

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    warp_specialized_gemm(const __grid_constant__ CUtensorMap mapA,
                          const __grid_constant__ CUtensorMap mapB, float* __restrict__ c, int m,
                          int n, int k) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // nvcc 13 with -arch=sm_90a also embeds generic compute_90 PTX, where wgmma and setmaxnreg do
  // not exist. That copy is never chosen on an sm_90 device, so it only traps.
  (void)c, (void)m, (void)n, (void)k;
  __trap();
#else
  extern __shared__ unsigned char smemRaw[];
  __shared__ alignas(8) std::uint64_t fullBarrier[kStages];
  __shared__ alignas(8) std::uint64_t emptyBarrier[kStages];

  const std::uint32_t smemBase = (example::smemAddress(smemRaw) + 1023u) & ~1023u;
  const int warpgroup = static_cast<int>(threadIdx.x) / kWarpgroupThreads;
  const int groupThread = static_cast<int>(threadIdx.x) % kWarpgroupThreads;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int m0 = static_cast<int>(blockIdx.y) * kWsGemmBlockM;
  const int n0 = static_cast<int>(blockIdx.x) * kWsGemmBlockN;
  const int kTiles = k / kWsGemmBlockK;
  (void)m;

  if (threadIdx.x == 0) {
    example::prefetchTensorMap(&mapA);
    example::prefetchTensorMap(&mapB);
    for (int s = 0; s < kStages; ++s) {
      example::mbarrierInit(example::smemAddress(&fullBarrier[s]), 1);
      // One arrival per consumer warp, each after its own wgmma.wait_group.
      example::mbarrierInit(example::smemAddress(&emptyBarrier[s]), kConsumerWarpgroups * 4);
    }
    example::fenceBarrierInit();
  }
  __syncthreads();

  if (warpgroup == 0) {
    ARGUS_REGION_ROLE("producer", "producer");
    example::setMaxRegistersDec<kProducerRegisters>();
    if (groupThread == 0) {
      for (int kt = 0; kt < kTiles; ++kt) {
        ARGUS_REGION_ITER("mainloop", kt);
        const int s = kt % kStages;
        const std::uint32_t phase = static_cast<std::uint32_t>(kt / kStages) & 1u;
        const std::uint32_t full = example::smemAddress(&fullBarrier[s]);
        const std::uint32_t tileA = smemBase + static_cast<std::uint32_t>(s) * kStageBytes;
        // Parity 1 on a fresh barrier passes at once: every stage starts empty.
        example::mbarrierWait(example::smemAddress(&emptyBarrier[s]), phase ^ 1u);
        ARGUS_REGION("tma_load");
        example::mbarrierArriveExpectTx(full, kStageBytes);
        example::tmaLoad2d(tileA, &mapA, full, kt * kWsGemmBlockK, m0);
        example::tmaLoad2d(tileA + kTileABytes, &mapB, full, kt * kWsGemmBlockK, n0);
      }
    }
    return;
  }

  ARGUS_REGION_ROLE("consumer", "consumer");
  example::setMaxRegistersInc<kConsumerRegisters>();
  const int consumer = warpgroup - 1;
  float acc[kAccumulators];
#pragma unroll
  for (int i = 0; i < kAccumulators; ++i) acc[i] = 0.0f;

  for (int kt = 0; kt < kTiles; ++kt) {
    ARGUS_REGION_ITER("mainloop", kt);
    const int s = kt % kStages;
    const std::uint32_t phase = static_cast<std::uint32_t>(kt / kStages) & 1u;
    const std::uint32_t stage = smemBase + static_cast<std::uint32_t>(s) * kStageBytes;
    const std::uint32_t tileA = stage + static_cast<std::uint32_t>(consumer) * kConsumerTileABytes;
    const std::uint32_t tileB = stage + kTileABytes;
    {
      ARGUS_REGION("wait_full");
      example::mbarrierWait(example::smemAddress(&fullBarrier[s]), phase);
    }
    {
      ARGUS_REGION("mma");
      example::fenceAccumulators(acc);
      example::wgmmaFence();
#pragma unroll
      for (int kk = 0; kk < kWsGemmBlockK / 16; ++kk) {
        const std::uint32_t offset = static_cast<std::uint32_t>(kk) * 32u;  // 16 halfs along K
        example::wgmmaM64N128K16(acc, example::smemDescriptorSw128(tileA + offset),
                                 example::smemDescriptorSw128(tileB + offset), 1);
      }
      example::wgmmaCommitGroup();
      example::wgmmaWaitGroup<0>();
      example::fenceAccumulators(acc);
    }
    __syncwarp();
    if (lane == 0) example::mbarrierArrive(example::smemAddress(&emptyBarrier[s]));
  }

  ARGUS_REGION("epilogue");
  const int rowBase = m0 + consumer * kConsumerRows;
#pragma unroll
  for (int i = 0; i < kAccumulators; i += 2) {
    const int row = rowBase + example::accumulatorRow(groupThread, i);
    const int col = n0 + example::accumulatorCol(groupThread, i);
    *reinterpret_cast<float2*>(&c[static_cast<long long>(row) * n + col]) =
        make_float2(acc[i], acc[i + 1]);
  }
#endif
}

cudaError_t launchWarpSpecializedGemm(const __half* a, const __half* b, float* c, int m, int n,
                                      int k, cudaStream_t stream) {
  if (m <= 0 || n <= 0 || k <= 0 || m % kWsGemmBlockM != 0 || n % kWsGemmBlockN != 0 ||
      k % kWsGemmBlockK != 0) {
    return cudaErrorInvalidValue;
  }
  CUtensorMap mapA{};
  CUtensorMap mapB{};
  if (!example::encodeTensorMapF16(&mapA, a, static_cast<std::uint64_t>(m),
                                   static_cast<std::uint64_t>(k), kWsGemmBlockM, kWsGemmBlockK) ||
      !example::encodeTensorMapF16(&mapB, b, static_cast<std::uint64_t>(n),
                                   static_cast<std::uint64_t>(k), kWsGemmBlockN, kWsGemmBlockK)) {
    return cudaErrorInvalidValue;
  }
  cudaError_t status = cudaFuncSetAttribute(
      warp_specialized_gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  if (status != cudaSuccess) return status;
  const dim3 grid(static_cast<unsigned>(n / kWsGemmBlockN),
                  static_cast<unsigned>(m / kWsGemmBlockM));
  warp_specialized_gemm<<<grid, kThreads, kSmemBytes, stream>>>(mapA, mapB, c, m, n, k);
  return cudaGetLastError();
}
