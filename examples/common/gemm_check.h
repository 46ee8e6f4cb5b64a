// The host side shared by the GEMM examples: random FP16 inputs, one GEMM on the GPU, a
// double-precision CPU reference, PASS/FAIL. Usage of an example: NAME [M N K].
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "example_util.h"

namespace example {

/// The default problem and the tile sizes M, N and K must be multiples of.
struct GemmShape {
  int m, n, k;
  int blockM, blockN, blockK;
};

/// Launches C = A * B^T (A: M x K, B: N x K, both FP16 row-major; C: FP32) on a stream.
using GemmLaunch = cudaError_t (*)(const __half* a, const __half* b, float* c, int m, int n, int k,
                                   cudaStream_t stream);

/// Runs one GEMM and checks it against the CPU; returns the process exit code (0 PASS, 1 FAIL,
/// 2 bad arguments, 77 no sm_90 device).
inline int runGemmExample(const char* name, int argc, char** argv, GemmShape shape,
                          GemmLaunch launch) {
  int m = shape.m;
  int n = shape.n;
  int k = shape.k;
  if (argc == 4) {
    m = std::atoi(argv[1]);
    n = std::atoi(argv[2]);
    k = std::atoi(argv[3]);
  }
  if (m <= 0 || n <= 0 || k <= 0 || m % shape.blockM != 0 || n % shape.blockN != 0 ||
      k % shape.blockK != 0) {
    std::fprintf(stderr, "usage: %s [M N K] with M %% %d == 0, N %% %d == 0, K %% %d == 0\n",
                 argv[0], shape.blockM, shape.blockN, shape.blockK);
    return 2;
  }
  if (const int skip = requireSm90(); skip != 0) return skip;

  const std::size_t sizeA = static_cast<std::size_t>(m) * static_cast<std::size_t>(k);
  const std::size_t sizeB = static_cast<std::size_t>(n) * static_cast<std::size_t>(k);
  const std::size_t sizeC = static_cast<std::size_t>(m) * static_cast<std::size_t>(n);
  const std::vector<float> valuesA = randomValues(sizeA, -1.0f, 1.0f, 1234u);
  const std::vector<float> valuesB = randomValues(sizeB, -1.0f, 1.0f, 5678u);
  std::vector<__half> hostA(sizeA);
  std::vector<__half> hostB(sizeB);
  // The reference uses the FP16-rounded inputs, so only accumulation error remains.
  std::vector<float> roundedA(sizeA);
  std::vector<float> roundedB(sizeB);
  for (std::size_t i = 0; i < sizeA; ++i) {
    hostA[i] = __float2half(valuesA[i]);
    roundedA[i] = __half2float(hostA[i]);
  }
  for (std::size_t i = 0; i < sizeB; ++i) {
    hostB[i] = __float2half(valuesB[i]);
    roundedB[i] = __half2float(hostB[i]);
  }

  __half* devA = nullptr;
  __half* devB = nullptr;
  float* devC = nullptr;
  EXAMPLE_CHECK(cudaMalloc(&devA, sizeA * sizeof(__half)));
  EXAMPLE_CHECK(cudaMalloc(&devB, sizeB * sizeof(__half)));
  EXAMPLE_CHECK(cudaMalloc(&devC, sizeC * sizeof(float)));
  EXAMPLE_CHECK(cudaMemcpy(devA, hostA.data(), sizeA * sizeof(__half), cudaMemcpyHostToDevice));
  EXAMPLE_CHECK(cudaMemcpy(devB, hostB.data(), sizeB * sizeof(__half), cudaMemcpyHostToDevice));
  // NaN bytes: any element the kernel fails to write makes the check fail.
  EXAMPLE_CHECK(cudaMemset(devC, 0xff, sizeC * sizeof(float)));

  EXAMPLE_CHECK(launch(devA, devB, devC, m, n, k, nullptr));
  EXAMPLE_CHECK(cudaDeviceSynchronize());

  std::vector<float> hostC(sizeC);
  EXAMPLE_CHECK(cudaMemcpy(hostC.data(), devC, sizeC * sizeof(float), cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK(cudaFree(devA));
  EXAMPLE_CHECK(cudaFree(devB));
  EXAMPLE_CHECK(cudaFree(devC));

  // Every element must be written (no NaN left); values are checked on every row up to 2^30
  // multiply-adds, on evenly spaced rows beyond (a large shape's full CPU product takes minutes).
  for (std::size_t i = 0; i < sizeC; ++i)
    if (std::isnan(hostC[i])) {
      std::printf("%s: FAIL: C[%zu][%zu] was never written\n", name, i / n, i % n);
      return 1;
    }
  const double work = static_cast<double>(m) * n * k;
  const int rowStep = work <= 1073741824.0 ? 1 : static_cast<int>(std::ceil(work / 1073741824.0));
  std::vector<float> checked;
  std::vector<double> reference;
  for (int i = 0; i < m; i += rowStep) {
    const float* rowA = &roundedA[static_cast<std::size_t>(i) * static_cast<std::size_t>(k)];
    for (int j = 0; j < n; ++j) {
      const float* rowB = &roundedB[static_cast<std::size_t>(j) * static_cast<std::size_t>(k)];
      double sum = 0.0;
      for (int kk = 0; kk < k; ++kk) sum += static_cast<double>(rowA[kk]) * rowB[kk];
      reference.push_back(sum);
      checked.push_back(hostC[static_cast<std::size_t>(i) * static_cast<std::size_t>(n) +
                              static_cast<std::size_t>(j)]);
    }
  }
  std::printf("%s: M=%d N=%d K=%d (%d K-iterations); rows checked: every %d\n", name, m, n, k,
              k / shape.blockK, rowStep);
  return checkRelative(name, checked, reference, 1e-4) ? 0 : 1;
}

}  // namespace example
