// specialized_callee: the ground truth for exact ownership where per-caller clones would compile
// to different machine code (issue 31). One `__noinline__` helper runs a loop whose trip count is
// a constant at every call: 8 from region `eight`, 3 from `three`, 5 from `five`, and 6 from inside
// another callee, `outer`, which region `nested` calls. ptxas unrolls the helper's loop by 4 with a
// remainder loop, so the callers run different PCs of the one helper body; a PTX clone per caller
// would instead be specialized to its constant (unrolled away), which is why the mapping run
// copies the reference's machine code instead of compiling clones. The `regions` argument (a
// run-time bit mask, so the machine code is the same for every value) lets a test run the calls
// of one region alone: the helper's per-PC counts of that run are the region's ground truth.
#include <argus/region.cuh>

#include "specialized_callee.h"

__device__ __noinline__ float helper(float x, int trips) {
  float acc = x;
  for (int i = 0; i < trips; ++i) acc = specializedStep(acc, x);
  return acc;
}

__device__ __noinline__ float outer(float x) {
  return helper(x, 6) * 0.5f + x;
}

extern "C" __global__ void __launch_bounds__(kSpecializedThreads)
    specialized_callee(const float* __restrict__ x, float* __restrict__ y, unsigned regions) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const float v = x[i];
  float acc = v;
  {
    ARGUS_REGION("eight");
    if (regions & kEight) acc += helper(v, 8);
  }
  {
    ARGUS_REGION("three");
    if (regions & kThree) acc += helper(acc, 3);
  }
  {
    ARGUS_REGION("five");
    if (regions & kFive) acc += helper(acc * 0.5f, 5);
  }
  {
    ARGUS_REGION("nested");
    if (regions & kNested) acc += outer(acc);
  }
  y[i] = acc;
}

cudaError_t launchSpecializedCallee(const float* x, float* y, unsigned regions, int blocks,
                                    cudaStream_t stream) {
  if (blocks <= 0) return cudaErrorInvalidValue;
  specialized_callee<<<static_cast<unsigned>(blocks), kSpecializedThreads, 0, stream>>>(x, y,
                                                                                        regions);
  return cudaGetLastError();
}
