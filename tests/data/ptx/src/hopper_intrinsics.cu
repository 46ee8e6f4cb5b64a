// Seed fixture for the Argus PTX front end: one kernel that makes nvcc emit the Hopper (sm_90a)
// instructions Argus must parse and print back unchanged. It is compiled to PTX only and never
// run, so the values it computes do not matter. See tests/data/ptx/README.md for the command.
#include <cuda.h>
#include <cstdint>

__constant__ int kTable[4] = {1, 2, 3, -4};
__device__ float gScale = 1.5f;
__device__ unsigned long long gCounter;

// A non-inlined helper so that the PTX contains a .func with a return value and a call sequence.
__device__ __noinline__ float scaleValue(float v, int k) { return v * gScale + float(kTable[k & 3]); }

__device__ __forceinline__ uint32_t smemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__global__ void __launch_bounds__(384, 1) __cluster_dims__(2, 1, 1)
    hopperKernel(const __grid_constant__ CUtensorMap tmap, float* out, int iters) {
  __shared__ alignas(128) float tile[64 * 64];
  __shared__ alignas(8) uint64_t bar[2];

  asm volatile("// @argus begin mainloop" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("prefetch.tensormap [%0];" ::"l"(&tmap) : "memory");

  uint32_t isLeader = 0;
  asm volatile(
      "{\n\t.reg .pred P1;\n\t"
      "elect.sync _|P1, -1;\n\t"
      "selp.b32 %0, 1, 0, P1;\n\t}"
      : "=r"(isLeader));
  uint32_t laneId = 0, pred = 0;
  asm volatile(
      "{\n\t.reg .pred P2;\n\t"
      "elect.sync %0|P2, 0xffffffff;\n\t"
      "selp.b32 %1, 1, 0, P2;\n\t}"
      : "=r"(laneId), "=r"(pred));

  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smemAddr(&bar[0])), "r"(1));
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");

  if (threadIdx.x >= 256) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  }

  float acc[8] = {};
  for (int it = 0; it < iters; ++it) {
    asm volatile("// @argus begin load iter=%0 role=producer" ::"r"(it) : "memory");
    if (isLeader) {
      asm volatile(
          "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smemAddr(&bar[0])),
          "r"(64 * 64 * 4)
          : "memory");
      asm volatile(
          "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
          " [%0], [%1, {%2, %3}], [%4];" ::"r"(smemAddr(tile)),
          "l"(&tmap), "r"(0), "r"(it * 64), "r"(smemAddr(&bar[0]))
          : "memory");
    }
    asm volatile("// @argus end load" ::: "memory");
    uint32_t phase = static_cast<uint32_t>(it & 1);
    asm volatile(
        "{\n\t.reg .pred p;\n"
        "LAB_WAIT:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
        "@p bra.uni DONE;\n\t"
        "bra.uni LAB_WAIT;\n"
        "DONE:\n\t}" ::"r"(smemAddr(&bar[0])),
        "r"(phase)
        : "memory");
    /* block comment emitted through inline asm */
    asm volatile("/* argus block comment */" ::: "memory");
    uint64_t desc = 0x4000004000010000ull + static_cast<uint64_t>(it);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %10, 0;\n\t"
        "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1;\n\t}"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]), "+f"(acc[4]), "+f"(acc[5]),
          "+f"(acc[6]), "+f"(acc[7])
        : "l"(desc), "l"(desc + 2), "r"(it));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  asm volatile("// @argus end mainloop" ::: "memory");

  float sum = 0.0f;
#pragma unroll 1
  for (int i = 0; i < 8; ++i) sum += scaleValue(acc[i], i);
  if (sum < -1e30f) atomicAdd(&gCounter, 1ull);
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum + 0.25f + float(laneId + pred);
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
