// Helpers shared by the overlap benches (pipeline.cu, nccl_pipeline.cu).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#define ARGUS_BENCH_CHECK(call)                                                                  \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

namespace argus::bench {

inline float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// "M:K[,M:K...]" as (M, K) pairs.
inline std::vector<std::pair<long, long>> parseShapes(const std::string& list) {
  std::vector<std::pair<long, long>> shapes;
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string shape = list.substr(at, end - at);
    at = end + 1;
    const size_t colon = shape.find(':');
    if (colon == std::string::npos) {
      std::fprintf(stderr, "shape `%s` is not M:K\n", shape.c_str());
      std::exit(2);
    }
    shapes.emplace_back(std::atol(shape.c_str()), std::atol(shape.c_str() + colon + 1));
  }
  return shapes;
}

/// Exit 77 (ctest's skip) unless the current device is sm_90.
inline void requireSm90() {
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      major != 9) {
    std::printf("SKIP: needs an sm_90 device\n");
    std::exit(77);
  }
}

}  // namespace argus::bench
