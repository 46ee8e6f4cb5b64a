// nested_regions: a small row-reduction kernel whose only purpose is a rich region tree. One
// block reduces one row in chunks; per chunk a producer warp transforms a chunk into shared
// memory and three consumer warps combine and accumulate it.
//
// Regions (paths from the kernel root):
//   main                          the whole kernel body
//   main/body                     one chunk, iter = chunk index
//   main/body/producer            role=producer (warp 0): global -> transform -> shared memory
//   main/body/consumer            role=consumer (warps 1..3), iter = chunk index again
//   main/body/consumer/combine    entered from both arms of a data-dependent branch
//   main/reduce                   block reduction and the store
//   transform                     in a __noinline__ helper called from main/body/producer and
//                                 from main/body/consumer/combine: one PTX function owned by two
//                                 regions, which only a dynamic mapping run can split
#include <argus/region.cuh>

#include "nested_regions.h"

namespace nested_config {

inline constexpr int kThreads = 128;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kConsumerThreads = kThreads - 32;

}  // namespace nested_config

using namespace nested_config;

// Kept out of line on purpose (see "transform" above).
__device__ __noinline__ float transformOutOfLine(float v) {
  ARGUS_REGION("transform");
  return nestedTransform(v);
}

extern "C" __global__ void __launch_bounds__(kThreads)
    nested_regions(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float chunk[kNestedChunk];
  __shared__ float warpSums[kWarps];

  // The launch always uses kThreads threads. Telling nvcc lets it drop the consumer loop's entry
  // test; without it nvcc folds that test into the `warp != 0` branch in an unmarked build but
  // cannot in a marked one (the consumer markers must run even for zero trips), and the marked
  // and unmarked SASS would differ.
  __builtin_assume(threadIdx.x < kThreads);
  ARGUS_REGION_BEGIN("main");
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const float* row = x + static_cast<long long>(blockIdx.x) * cols;
  const int chunks = cols / kNestedChunk;
  float partial = 0.0f;

  for (int it = 0; it < chunks; ++it) {
    ARGUS_REGION_BEGIN_ITER("body", it);
    if (warp == 0) {
      ARGUS_REGION_BEGIN_ROLE("producer", "producer");
      for (int j = lane; j < kNestedChunk; j += 32) {
        chunk[j] = transformOutOfLine(row[it * kNestedChunk + j]);
      }
      ARGUS_REGION_END("producer");
    }
    __syncthreads();
    if (warp != 0) {
      ARGUS_REGION_BEGIN_ITER_ROLE("consumer", it, "consumer");
      for (int j = static_cast<int>(threadIdx.x) - 32; j < kNestedChunk; j += kConsumerThreads) {
        const float t = chunk[j];
        if (t > 0.1f) {
          ARGUS_REGION("combine");
          partial += 2.0f * t;
        } else {
          ARGUS_REGION("combine");
          partial += transformOutOfLine(t) - t;
        }
      }
      ARGUS_REGION_END("consumer");
    }
    // The producer overwrites the chunk in the next iteration.
    __syncthreads();
    ARGUS_REGION_END("body");
  }

  {
    ARGUS_REGION("reduce");
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      partial += __shfl_down_sync(0xffffffffu, partial, offset);
    }
    if (lane == 0) warpSums[warp] = partial;
    __syncthreads();
    if (threadIdx.x == 0) {
      float sum = 0.0f;
      for (int w = 0; w < kWarps; ++w) sum += warpSums[w];
      y[blockIdx.x] = sum;
    }
  }
  ARGUS_REGION_END("main");
}

cudaError_t launchNestedRegions(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0 || cols % kNestedChunk != 0) return cudaErrorInvalidValue;
  nested_regions<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, cols);
  return cudaGetLastError();
}
