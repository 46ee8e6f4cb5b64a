// Host driver of the specialized_callee example: random inputs, one launch, a CPU reference that
// runs the same FP32 operations, PASS/FAIL. Usage: argus_example_specialized_callee
// [--only eight|three|five|nested] [BLOCKS] (default: every region, 64 blocks of 128 threads).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../common/example_util.h"
#include "specialized_callee.h"

namespace {

float helperReference(float x, int trips) {
  float acc = x;
  for (int i = 0; i < trips; ++i) acc = specializedStep(acc, x);
  return acc;
}

float kernelReference(float v, unsigned regions) {
  float acc = v;
  if (regions & kEight) acc += helperReference(v, 8);
  if (regions & kThree) acc += helperReference(acc, 3);
  if (regions & kFive) acc += helperReference(acc * 0.5f, 5);
  if (regions & kNested) acc += helperReference(acc, 6) * 0.5f + acc;
  return acc;
}

/// The bit of a region named on the command line, or 0.
unsigned regionBit(const char* name) {
  const struct {
    const char* name;
    unsigned bit;
  } regions[] = {{"eight", kEight}, {"three", kThree}, {"five", kFive}, {"nested", kNested}};
  for (const auto& r : regions)
    if (std::strcmp(name, r.name) == 0) return r.bit;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned regions = kAllRegions;
  int blocks = 64;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--only") == 0 && a + 1 < argc) {
      regions = regionBit(argv[++a]);
      if (regions == 0) {
        std::fprintf(stderr, "--only %s: the regions are eight, three, five, nested\n", argv[a]);
        return 2;
      }
    } else {
      blocks = std::atoi(argv[a]);
    }
  }
  if (blocks <= 0) {
    std::fprintf(stderr, "usage: %s [--only eight|three|five|nested] [BLOCKS > 0]\n", argv[0]);
    return 2;
  }
  if (const int skip = example::requireSm90(); skip != 0) return skip;

  const std::size_t count = static_cast<std::size_t>(blocks) * kSpecializedThreads;
  const std::vector<float> hostX = example::randomValues(count, -1.0f, 1.0f, 11u);
  const std::vector<float> hostY =
      example::runOnDevice(hostX, count, [&](const float* x, float* y) {
        return launchSpecializedCallee(x, y, regions, blocks, nullptr);
      });

  std::vector<double> reference(count);
  for (std::size_t i = 0; i < count; ++i) reference[i] = kernelReference(hostX[i], regions);
  std::printf("specialized_callee: blocks=%d threads=%d regions=%#x\n", blocks, kSpecializedThreads,
              regions);
  return example::checkRelative("specialized_callee", hostY, reference, 1e-4) ? 0 : 1;
}
