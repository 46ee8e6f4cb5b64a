// Markers cross: `outer` ends while `inner` is still open.
#include <argus/region.cuh>

extern "C" __global__ void crossing(float* out) {
  ARGUS_REGION_BEGIN("outer");
  ARGUS_REGION_BEGIN("inner");
  out[threadIdx.x] = 1.0f;
  ARGUS_REGION_END("outer");
  ARGUS_REGION_END("inner");
}
