// Nested regions in a loop with warp-role branches; the scoped form closes `tail` on return.
#include <argus/region.cuh>

extern "C" __global__ void nested(const float* in, float* out, int n) {
  ARGUS_REGION_BEGIN("main");
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) {
    ARGUS_REGION_BEGIN_ITER("body", i);
    if (threadIdx.x / 32 == 0) {
      ARGUS_REGION_BEGIN_ROLE("producer", "producer");
      acc += in[i * blockDim.x + threadIdx.x];
      ARGUS_REGION_END("producer");
    } else {
      ARGUS_REGION_BEGIN_ROLE("consumer", "consumer");
      acc *= in[i];
      ARGUS_REGION_END("consumer");
    }
    ARGUS_REGION_END("body");
  }
  ARGUS_REGION_END("main");
  {
    ARGUS_REGION("tail");
    out[threadIdx.x] = acc;
  }
}
