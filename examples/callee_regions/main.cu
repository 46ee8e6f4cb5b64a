// Host driver of the callee_regions example: random inputs, one launch, a CPU reference that runs
// the same FP32 operations in the same order, PASS/FAIL. Usage: argus_example_callee_regions
// [BLOCKS] (default 64 blocks of 128 threads = 256 warps).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../common/example_util.h"
#include "callee_regions.h"

namespace {

float tileReference(float v) {
  float acc = v;
  for (int t = 0; t < kCombineTrips; ++t) acc = combineStep(acc, v);
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

  const std::size_t count = static_cast<std::size_t>(blocks) * kCalleeThreads;
  const std::vector<float> hostX = example::randomValues(count * kTiles, -1.0f, 1.0f, 11u);
  float* devX = nullptr;
  float* devY = nullptr;
  EXAMPLE_CHECK(cudaMalloc(&devX, hostX.size() * sizeof(float)));
  EXAMPLE_CHECK(cudaMalloc(&devY, count * sizeof(float)));
  EXAMPLE_CHECK(
      cudaMemcpy(devX, hostX.data(), hostX.size() * sizeof(float), cudaMemcpyHostToDevice));
  EXAMPLE_CHECK(cudaMemset(devY, 0xff, count * sizeof(float)));  // NaN

  EXAMPLE_CHECK(launchCalleeRegions(devX, devY, blocks, nullptr));
  EXAMPLE_CHECK(cudaDeviceSynchronize());

  std::vector<float> hostY(count);
  EXAMPLE_CHECK(cudaMemcpy(hostY.data(), devY, count * sizeof(float), cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK(cudaFree(devX));
  EXAMPLE_CHECK(cudaFree(devY));

  // FMA contraction on the device may differ from the host's separate multiply and add.
  std::vector<double> reference(count);
  for (std::size_t i = 0; i < count; ++i) {
    float acc = 0.0f;
    for (int tile = 0; tile < kTiles; ++tile)
      acc = acc * 0.5f + tileReference(hostX[static_cast<std::size_t>(tile) * count + i]);
    reference[i] = acc;
  }
  std::printf("callee_regions: blocks=%d threads=%d (tiles %d, combine trips %d)\n", blocks,
              kCalleeThreads, kTiles, kCombineTrips);
  return example::checkRelative("callee_regions", hostY, reference, 1e-4) ? 0 : 1;
}
