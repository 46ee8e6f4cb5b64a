// Must NOT compile: a region name held in a variable. Used by marker_rejects_nonliteral_name,
// which expects nvcc to fail with the header's message.
#include <argus/region.cuh>

extern "C" __global__ void bad_name(float* data) {
  constexpr const char kName[] = "main";
  ARGUS_REGION_BEGIN(kName);
  data[0] = 1.0f;
  ARGUS_REGION_END("main");
}
