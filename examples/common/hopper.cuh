// Hopper (sm_90a) building blocks shared by the tma_gemm and warp_specialized examples: shared
// memory addresses, mbarriers, TMA tile loads, WGMMA descriptors and the m64n128k16 FP16 WGMMA.
// Written as inline PTX so the examples need only the toolkit's own headers, and so the PTX that
// Argus analyses shows each asynchronous operation as one recognisable instruction.
#pragma once

#include <cuda.h>  // CUtensorMap

#include <cstdint>

namespace example {

/// 32-bit shared-state-space address of a pointer into shared memory (what PTX operands want).
__device__ inline std::uint32_t smemAddress(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// Initialises the mbarrier at `bar` to expect `count` arrivals per phase. One thread only.
__device__ inline void mbarrierInit(std::uint32_t bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" : : "r"(bar), "r"(count) : "memory");
}

/// Makes mbarrier initialisation visible to the async proxy (TMA) and to other threads; follow
/// with __syncthreads().
__device__ inline void fenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");
}

/// Arrives on `bar` and adds `bytes` to the transaction count that TMA loads must complete
/// before the phase can flip.
__device__ inline void mbarrierArriveExpectTx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :
               : "r"(bar), "r"(bytes)
               : "memory");
}

/// Plain arrival on `bar` (consumers releasing a pipeline stage).
__device__ inline void mbarrierArrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" : : "r"(bar) : "memory");
}

/// Blocks until the phase of `bar` with parity `parity` has completed. A freshly initialised
/// barrier is in phase 0, so waiting for parity 1 returns at once: producers use that to start
/// with every stage free.
__device__ inline void mbarrierWait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  do {
    // try_wait may return false after a time-out chosen by the hardware; loop in C++ so the
    // PTX needs no labels (inline asm that is inlined twice must not define labels).
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (done == 0);
}

/// TMA: loads the 2-D box at element coordinates (c0 = innermost, c1) of the tensor described
/// by `map` into shared memory at `dst`; completion is signalled as bytes on mbarrier `bar`.
/// `map` must live in kernel parameter space (__grid_constant__), constant or global memory.
__device__ inline void tmaLoad2d(std::uint32_t dst, const CUtensorMap* map, std::uint32_t bar,
                                 int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];"
      :
      : "r"(dst), "l"(reinterpret_cast<std::uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}

/// Prefetches a tensor map into the descriptor cache so the first TMA load does not wait for it.
__device__ inline void prefetchTensorMap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" : : "l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}

/// WGMMA shared-memory matrix descriptor for a K-major operand tile written by TMA with
/// CU_TENSOR_MAP_SWIZZLE_128B: rows of 64 halfs (128 bytes), 8-row swizzle atoms of 1024 bytes
/// stacked along M/N. `addr` must lie in a 1024-byte aligned tile (base offset 0); stepping K by
/// 16 elements inside the atom is done by adding 32 bytes to `addr`, which the hardware swizzles
/// exactly as TMA did.
__device__ inline std::uint64_t smemDescriptorSw128(std::uint32_t addr) {
  constexpr std::uint64_t kLeadingByteOffset = 16;   // unused for swizzled K-major; must be set
  constexpr std::uint64_t kStrideByteOffset = 1024;  // from one 8-row group to the next
  constexpr std::uint64_t kSwizzle128B = 1;
  return (static_cast<std::uint64_t>(addr & 0x3FFFF) >> 4) | ((kLeadingByteOffset >> 4) << 16) |
         ((kStrideByteOffset >> 4) << 32) | (kSwizzle128B << 62);
}

/// Orders register and shared-memory accesses before the following wgmma.mma_async.
__device__ inline void wgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;" : : : "memory");
}

/// Closes the current group of wgmma.mma_async operations.
__device__ inline void wgmmaCommitGroup() {
  asm volatile("wgmma.commit_group.sync.aligned;" : : : "memory");
}

/// Waits until at most `Pending` committed wgmma groups are still running.
template <int Pending>
__device__ inline void wgmmaWaitGroup() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" : : "n"(Pending) : "memory");
}

/// Keeps the compiler from moving accesses to an accumulator register across the asynchronous
/// WGMMA that owns it (the register is "read and written" here, at no cost).
__device__ inline void fenceAccumulator(float& r) {
  asm volatile("" : "+f"(r) : : "memory");
}

template <int N>
__device__ inline void fenceAccumulators(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) fenceAccumulator(d[i]);
}

/// Row (0..63) inside the m64 tile of accumulator register `i` held by warpgroup thread `t`.
__device__ inline int accumulatorRow(int t, int i) {
  return 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2);
}

/// Column inside the n tile of accumulator register `i` held by warpgroup thread `t`.
__device__ inline int accumulatorCol(int t, int i) {
  return 8 * (i / 4) + 2 * (t % 4) + (i % 2);
}

/// Gives registers back (producer warpgroups) so that consumer warpgroups can take more.
template <int Registers>
__device__ inline void setMaxRegistersDec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" : : "n"(Registers));
}

/// Raises this warpgroup's register limit; blocks until the registers are free.
template <int Registers>
__device__ inline void setMaxRegistersInc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" : : "n"(Registers));
}

/// D[64x128] = A[64x16] * B[128x16]^T + (scaleD ? D : 0) for one warpgroup: A and B are K-major in
/// shared memory, described by `descA` and `descB`; D is FP32 in registers in the wgmma fragment
/// layout (see accumulatorRow/accumulatorCol). All 128 threads of the warpgroup must call it
/// together.
__device__ inline void wgmmaM64N128K16(float (&d)[64], std::uint64_t descA, std::uint64_t descB,
                                       int scaleD) {
  // scale-d: 0 overwrites D, 1 accumulates. scale-a = scale-b = 1; no transpose (both operands
  // K-major).
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "l"(descA), "l"(descB), "r"(scaleD));
}

}  // namespace example
