// The marker header included by a plain C++ translation unit (no CUDA compiler): every macro
// must compile to nothing, warning-free under Argus's strict host flags.
#include <argus/region.cuh>

#include <cstdint>

static_assert(ARGUS_MARKERS_ACTIVE == 0, "markers must be inactive outside device compilation");

int hostOnlyMarkers(int n, std::int64_t wide) {
  int sum = 0;
  ARGUS_REGION_BEGIN("main");
  for (int i = 0; i < n; ++i) {
    ARGUS_REGION_BEGIN_ITER("body", i);
    ARGUS_REGION_BEGIN_ROLE("role", "producer");
    ARGUS_REGION_END("role");
    ARGUS_REGION_BEGIN_ITER_ROLE("iter_role", wide, "consumer");
    ARGUS_REGION_END("iter_role");
    ARGUS_REGION_END("body");
    ARGUS_REGION("scoped");
    ARGUS_REGION_ITER("scoped_iter", i);
    ARGUS_REGION_ROLE("scoped_role", "producer");
    ARGUS_REGION_ITER_ROLE("scoped_iter_role", i, "consumer");
    sum += i;
  }
  ARGUS_REGION_END("main");
  return sum;
}

int main() {
  return hostOnlyMarkers(3, 7) == 3 ? 0 : 1;
}
