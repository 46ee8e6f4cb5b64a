// Input of the lower_markers_to_trace golden test. Regenerate tiny_trace.ptx with:
//   nvcc -arch=sm_90a -ptx -I include tests/data/passes/tiny_trace.cu -o tests/data/passes/tiny_trace.ptx
// (from the repository root), then tiny_trace.expected.ptx with ARGUS_UPDATE_GOLDEN=1 and the
// pass tests (argus_passes_tests --gtest_filter='*Golden*').
#include <argus/region.cuh>

extern "C" __global__ void tiny(float* out, int n) {
  float acc = 0.0f;
  ARGUS_REGION_BEGIN_ROLE("loop", "worker");
#pragma unroll 1
  for (int i = 0; i < n; ++i) {
    ARGUS_REGION_BEGIN_ITER("step", i);
    acc = acc * 1.5f + static_cast<float>(i);
    ARGUS_REGION_END("step");
  }
  ARGUS_REGION_END("loop");
  out[threadIdx.x] = acc;
}
