// `work` is still open when the kernel returns.
#include <argus/region.cuh>

extern "C" __global__ void open_at_return(float* out) {
  ARGUS_REGION_BEGIN("work");
  out[threadIdx.x] = 1.0f;
}
