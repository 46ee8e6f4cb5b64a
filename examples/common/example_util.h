// Host helpers shared by the Argus CUDA examples: error checks, the GPU-test skip rule, random
// inputs and the relative-error verdict. Host code only.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

/// Aborts the example with the failing call, its location and CUDA's message. An example that
/// cannot run its check must not print PASS, so every CUDA call goes through this.
#define EXAMPLE_CHECK(call)                                                             \
  do {                                                                                  \
    const cudaError_t exampleStatus = (call);                                           \
    if (exampleStatus != cudaSuccess) {                                                 \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,    \
                   cudaGetErrorName(exampleStatus), cudaGetErrorString(exampleStatus)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

namespace example {

/// ctest treats this exit code as "skipped" (SKIP_RETURN_CODE 77).
inline constexpr int kSkipExitCode = 77;

/// Returns 0 when device 0 is a compute capability 9.x GPU (the examples are built for sm_90a);
/// otherwise prints why the example is skipped and returns kSkipExitCode.
inline int requireSm90() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    std::printf("SKIP: no CUDA device (cudaGetDeviceCount: %s)\n", cudaGetErrorString(status));
    return kSkipExitCode;
  }
  if (count == 0) {
    std::printf("SKIP: no CUDA device (cudaGetDeviceCount returned 0)\n");
    return kSkipExitCode;
  }
  cudaDeviceProp prop{};
  EXAMPLE_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9) {
    std::printf("SKIP: no CUDA device of compute capability 9.x (device 0 is %s, sm_%d%d)\n",
                prop.name, prop.major, prop.minor);
    return kSkipExitCode;
  }
  return 0;
}

/// Uniform random values in [lo, hi) from a fixed seed, so a failure reproduces.
inline std::vector<float> randomValues(std::size_t count, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

/// Runs one float kernel on the device: `x` copied there, `launch(devX, devY)` (asynchronous,
/// returning its launch's cudaError_t) writing into `yCount` floats first set to NaN, and y copied
/// back. Exits through EXAMPLE_CHECK on any CUDA error.
template <class Launch>
std::vector<float> runOnDevice(const std::vector<float>& x, std::size_t yCount, Launch launch) {
  float* devX = nullptr;
  float* devY = nullptr;
  EXAMPLE_CHECK(cudaMalloc(&devX, x.size() * sizeof(float)));
  EXAMPLE_CHECK(cudaMalloc(&devY, yCount * sizeof(float)));
  EXAMPLE_CHECK(cudaMemcpy(devX, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  EXAMPLE_CHECK(cudaMemset(devY, 0xff, yCount * sizeof(float)));  // NaN
  EXAMPLE_CHECK(launch(static_cast<const float*>(devX), devY));
  EXAMPLE_CHECK(cudaDeviceSynchronize());
  std::vector<float> y(yCount);
  EXAMPLE_CHECK(cudaMemcpy(y.data(), devY, yCount * sizeof(float), cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK(cudaFree(devX));
  EXAMPLE_CHECK(cudaFree(devY));
  return y;
}

/// Compares `got` with `want`: relative error ||got - want||_2 / ||want||_2 and the largest
/// elementwise error relative to max|want|. Prints the figures and PASS or FAIL.
inline bool checkRelative(const char* what, const std::vector<float>& got,
                          const std::vector<double>& want, double tolerance) {
  double diff2 = 0.0;
  double ref2 = 0.0;
  double maxDiff = 0.0;
  double maxRef = 0.0;
  std::size_t worst = 0;
  bool finite = got.size() == want.size();
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    finite = finite && std::isfinite(got[i]);
    diff2 += d * d;
    ref2 += want[i] * want[i];
    maxRef = std::fmax(maxRef, std::fabs(want[i]));
    if (std::fabs(d) > maxDiff) {
      maxDiff = std::fabs(d);
      worst = i;
    }
  }
  const double rel = ref2 > 0.0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  const double relMax = maxRef > 0.0 ? maxDiff / maxRef : maxDiff;
  const bool pass = finite && rel <= tolerance && relMax <= 10.0 * tolerance;
  std::printf(
      "%s: relative L2 error %.3e, max error %.3e relative to max |ref| (worst index %zu:"
      " got %.6g want %.6g), tolerance %.1e\n",
      what, rel, relMax, worst, worst < got.size() ? static_cast<double>(got[worst]) : 0.0,
      worst < want.size() ? want[worst] : 0.0, tolerance);
  std::printf("%s\n", pass ? "PASS" : "FAIL");
  return pass;
}

}  // namespace example
