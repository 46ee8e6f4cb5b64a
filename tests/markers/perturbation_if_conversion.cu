// Known perturbation: nvcc does not if-convert a branch that holds a marker. Unmarked, both arms
// become one load, two adds and a select; marked, the branch stays. Checked by
// marker_perturbation_if_conversion, which expects the SASS to differ.
#include <argus/region.cuh>

extern "C" __global__ void perturbation_if_conversion(float* data, int n) {
  const int t = static_cast<int>(threadIdx.x);
  for (int i = 0; i < n; ++i) {
    if (t < 32) {
      ARGUS_REGION_ROLE("producer", "producer");
      data[i] += 1.0f;
    } else {
      data[i] *= 2.0f;
    }
  }
}
