// Host driver of the divergent_lanes kernel: one launch, checked against the CPU. Prints PASS.
// Exit codes: 0 pass, 1 mismatch or CUDA error, 77 no CUDA device.
#include <cmath>
#include <cstdio>
#include <vector>

#include "divergent_lanes.h"

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  const int threads = kDivergentCtas * kDivergentThreads;
  float* out = nullptr;
  if (cudaMalloc(&out, sizeof(float) * threads) != cudaSuccess) return 1;
  divergent_lanes<<<kDivergentCtas, kDivergentThreads>>>(out, kDivergentIterations);
  std::vector<float> got(threads);
  if (cudaMemcpy(got.data(), out, sizeof(float) * threads, cudaMemcpyDeviceToHost) != cudaSuccess) {
    std::printf("FAIL: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  cudaFree(out);
  for (int t = 0; t < threads; ++t) {
    const int x = t % kDivergentThreads;
    float acc = static_cast<float>(x);
    for (int i = 0; i < kDivergentIterations; ++i)
      acc = divergentAfter(x % 32 < 16 ? divergentLow(acc) : divergentHigh(acc));
    if (std::fabs(acc - got[t]) > 1e-3f * std::fabs(acc) + 1e-3f) {
      std::printf("FAIL: thread %d: %g, expected %g\n", t, static_cast<double>(got[t]),
                  static_cast<double>(acc));
      return 1;
    }
  }
  std::printf("PASS\n");
  return 0;
}
