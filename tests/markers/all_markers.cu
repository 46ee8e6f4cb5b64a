// Every Argus marker macro in the contexts users write them: a __global__ kernel, a
// __host__ __device__ function (compiled by both nvcc passes), loops, role branches, early
// exits, 32- and 64-bit iteration indices, and variables that only a marker reads. Built with
// -Werror by the marker_compile_* targets and compared SASS-for-SASS by marker_sass_identity.
#include <argus/region.cuh>

#include <cstdint>

// Compiled for host and device: the host pass must see no asm and no unused variables.
__host__ __device__ inline float scaleBoth(float v, int n) {
  ARGUS_REGION("hd_scale");
  float r = v;
  for (int i = 0; i < n; ++i) {
    ARGUS_REGION_ITER("hd_step", i);
    r = r * 0.5f + 1.0f;
  }
  return r;
}

extern "C" __global__ void all_markers(float* data, int n, std::int64_t base) {
  ARGUS_REGION_BEGIN("main");
  const int tid = static_cast<int>(threadIdx.x);
  for (int it = 0; it < n; ++it) {
    ARGUS_REGION_BEGIN_ITER("body", it);
    if (tid < 32) {
      ARGUS_REGION_BEGIN_ROLE("producer", "producer");
      data[it] += 1.0f;
      ARGUS_REGION_END("producer");
    } else {
      ARGUS_REGION_BEGIN_ITER_ROLE("consumer", it, "consumer");
      data[it] *= 2.0f;
      ARGUS_REGION_END("consumer");
    }
    ARGUS_REGION_END("body");
  }
  // An iteration index that only the marker reads: no unused-variable warning in any pass.
  const std::int64_t wide = base + tid;
  for (unsigned u = 0; u < 4u; ++u) {
    ARGUS_REGION_ITER("scoped_iter", u);
    if (data[u] < 0.0f) continue;  // the scoped end also runs on this exit
    ARGUS_REGION_ROLE("scoped_role", "warp.role-1");
    ARGUS_REGION_ITER_ROLE("scoped_iter_role", wide, "consumer");
    data[u] = scaleBoth(data[u], n);
  }
  ARGUS_REGION_END("main");
}

// Host-side use of the same function: proves the markers vanish from host code.
float allMarkersHostUse(float v) {
  return scaleBoth(v, 3);
}
