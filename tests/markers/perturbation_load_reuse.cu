// Known perturbation: nvcc does not reuse a load across a marker. Unmarked, the second read of
// p[t] reuses the first (1 load); marked, it is loaded again (2 loads). Checked by
// marker_perturbation_load_reuse, which expects the SASS to differ.
#include <argus/region.cuh>

extern "C" __global__ void perturbation_load_reuse(float* p, float* out) {
  const unsigned t = threadIdx.x;
  const float x = p[t];
  p[t + 1] = 3.0f;
  ARGUS_REGION_BEGIN("reload");
  const float y = p[t];
  ARGUS_REGION_END("reload");
  out[t] = x + y;
}
