// Host driver of the shared_callee example: random inputs, one launch, a CPU reference that runs
// the same FP32 operations in the same order, PASS/FAIL. Usage: argus_example_shared_callee
// [BLOCKS] (default 64 blocks of 128 threads = 256 warps).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../common/example_util.h"
#include "shared_callee.h"

namespace {

float helperReference(float x, int trips) {
  float acc = x;
  for (int i = 0; i < trips; ++i) acc = sharedStep(acc, x);
  return acc;
}

float kernelReference(float v) {
  float acc = 0.0f;
  for (int c = 0; c < kLightCalls; ++c)
    acc += helperReference(v + static_cast<float>(c), kLightTrips);
  for (int c = 0; c < kHeavyCalls; ++c) acc += helperReference(acc, kHeavyTrips);
  for (int t = 0; t < kInlineTrips; ++t) acc = acc * 0.5f + v;
  return acc;
}

}  // namespace

int main(int argc, char** argv) {
  int blocks = 64;
  if (argc == 2) blocks = std::atoi(argv[1]);
  if (blocks <= 0) {
    std::fprintf(stderr, "usage: %s [BLOCKS > 0]\n", argv[0]);
    return 2;
  }
  if (const int skip = example::requireSm90(); skip != 0) return skip;

  const std::size_t count = static_cast<std::size_t>(blocks) * kSharedThreads;
  const std::vector<float> hostX = example::randomValues(count, -1.0f, 1.0f, 7u);
  float* devX = nullptr;
  float* devY = nullptr;
  EXAMPLE_CHECK(cudaMalloc(&devX, count * sizeof(float)));
  EXAMPLE_CHECK(cudaMalloc(&devY, count * sizeof(float)));
  EXAMPLE_CHECK(cudaMemcpy(devX, hostX.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  EXAMPLE_CHECK(cudaMemset(devY, 0xff, count * sizeof(float)));  // NaN

  EXAMPLE_CHECK(launchSharedCallee(devX, devY, blocks, nullptr));
  EXAMPLE_CHECK(cudaDeviceSynchronize());

  std::vector<float> hostY(count);
  EXAMPLE_CHECK(cudaMemcpy(hostY.data(), devY, count * sizeof(float), cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK(cudaFree(devX));
  EXAMPLE_CHECK(cudaFree(devY));

  // FMA contraction on the device may differ from the host's separate multiply and add.
  std::vector<double> reference(count);
  for (std::size_t i = 0; i < count; ++i) reference[i] = kernelReference(hostX[i]);
  std::printf("shared_callee: blocks=%d threads=%d (light %dx%d, heavy %dx%d, inline %d)\n", blocks,
              kSharedThreads, kLightCalls, kLightTrips, kHeavyCalls, kHeavyTrips, kInlineTrips);
  return example::checkRelative("shared_callee", hostY, reference, 1e-4) ? 0 : 1;
}
