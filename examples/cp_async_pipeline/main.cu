// Host driver of the cp_async_pipeline example: random A and x, one launch, a double-precision
// CPU reference, PASS/FAIL. Usage: argus_example_cp_async_pipeline [M K] (M a multiple of 32,
// K a multiple of 128).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../common/example_util.h"
#include "cp_async_pipeline.h"

int main(int argc, char** argv) {
  int m = 256;
  int k = 1024;  // 8 iterations of the mainloop region
  if (argc == 3) {
    m = std::atoi(argv[1]);
    k = std::atoi(argv[2]);
  }
  if (m <= 0 || k <= 0 || m % kCpAsyncRows != 0 || k % kCpAsyncCols != 0) {
    std::fprintf(stderr, "usage: %s [M K] with M %% %d == 0 and K %% %d == 0\n", argv[0],
                 kCpAsyncRows, kCpAsyncCols);
    return 2;
  }
  if (const int skip = example::requireSm90(); skip != 0) return skip;

  const std::size_t count = static_cast<std::size_t>(m) * static_cast<std::size_t>(k);
  const std::vector<float> hostA = example::randomValues(count, -1.0f, 1.0f, 7u);
  const std::vector<float> hostX =
      example::randomValues(static_cast<std::size_t>(k), -1.0f, 1.0f, 11u);

  float* devA = nullptr;
  float* devX = nullptr;
  float* devY = nullptr;
  EXAMPLE_CHECK(cudaMalloc(&devA, count * sizeof(float)));
  EXAMPLE_CHECK(cudaMalloc(&devX, static_cast<std::size_t>(k) * sizeof(float)));
  EXAMPLE_CHECK(cudaMalloc(&devY, static_cast<std::size_t>(m) * sizeof(float)));
  EXAMPLE_CHECK(cudaMemcpy(devA, hostA.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  EXAMPLE_CHECK(cudaMemcpy(devX, hostX.data(), static_cast<std::size_t>(k) * sizeof(float),
                           cudaMemcpyHostToDevice));
  EXAMPLE_CHECK(cudaMemset(devY, 0xff, static_cast<std::size_t>(m) * sizeof(float)));  // NaN

  EXAMPLE_CHECK(launchCpAsyncGemv(devA, devX, devY, m, k, nullptr));
  EXAMPLE_CHECK(cudaDeviceSynchronize());

  std::vector<float> hostY(static_cast<std::size_t>(m));
  EXAMPLE_CHECK(
      cudaMemcpy(hostY.data(), devY, hostY.size() * sizeof(float), cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK(cudaFree(devA));
  EXAMPLE_CHECK(cudaFree(devX));
  EXAMPLE_CHECK(cudaFree(devY));

  std::vector<double> reference(static_cast<std::size_t>(m));
  for (int r = 0; r < m; ++r) {
    double sum = 0.0;
    for (int c = 0; c < k; ++c)
      sum += static_cast<double>(hostA[static_cast<std::size_t>(r) * static_cast<std::size_t>(k) +
                                       static_cast<std::size_t>(c)]) *
             hostX[static_cast<std::size_t>(c)];
    reference[static_cast<std::size_t>(r)] = sum;
  }
  std::printf("cp_async_pipeline: m=%d k=%d (%d mainloop iterations)\n", m, k, k / kCpAsyncCols);
  return example::checkRelative("cp_async_pipeline", hostY, reference, 1e-4) ? 0 : 1;
}
