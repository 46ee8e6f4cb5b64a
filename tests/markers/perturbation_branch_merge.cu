// Known perturbation: nvcc does not merge branch conditions across a marker. Unmarked, the inner
// loop's entry test is folded into the role test; marked, the consumer markers must run even when
// the loop runs zero times, so both tests stay. (examples/nested_regions avoids this with
// __builtin_assume on the block size.) Checked by marker_perturbation_branch_merge.
#include <argus/region.cuh>

extern "C" __global__ void perturbation_branch_merge(const float* x, float* y, int chunks) {
  __shared__ float chunk[128];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  float partial = 0.0f;
  for (int it = 0; it < chunks; ++it) {
    if (warp == 0) chunk[threadIdx.x % 32] = x[it * 32 + static_cast<int>(threadIdx.x)];
    __syncthreads();
    if (warp != 0) {
      ARGUS_REGION_BEGIN_ROLE("consumer", "consumer");
      for (int j = static_cast<int>(threadIdx.x) - 32; j < 32; j += 96) partial += chunk[j];
      ARGUS_REGION_END("consumer");
    }
    __syncthreads();
  }
  y[threadIdx.x] = partial;
}
