// Times the seed kernels with CUDA events and prints one JSON line per configuration:
//   harness [--kernel compute|memory|both] [--inner 8,16,...] [--reps 200] [--warmup 20]
//           [--table 4096] [--pair CUBIN]
// For each (kernel, inner) it runs `warmup` untimed launches, then `reps` launches, each between
// two events and followed by a synchronization (so every launch starts from an idle GPU and the
// injection library's per-launch work never overlaps a timed kernel), and reports the median,
// min, p10 and p90 in microseconds. The launch order is fixed (kernels, then inner sizes, then
// warm-up and timed launches), so run.sh can pair these launches with the injection library's
// kernels.jsonl (CUPTI's GPU start/end per kernel), which excludes the trace set-up that sits
// between the events and a traced kernel.
//
// --pair CUBIN (paired.sh) loads the same kernels from another build's cubin (the trace-free
// one) and runs each launch of this executable's kernel next to one of that cubin's: per
// configuration `warmup` then `reps` pairs, pair r in the order own, other when r is even and
// other, own when it is odd (so a drift during the run falls on both alike), each launch followed
// by a synchronization; no event timing (paired.sh compares CUPTI durations pair by pair). The
// JSON line then has "paired": true.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "seed_kernel.h"

#define CHECK(call)                                                      \
  do {                                                                   \
    const cudaError_t status = (call);                                   \
    if (status != cudaSuccess) {                                         \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(status));                          \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

namespace {

std::vector<int> parseList(const char* text) {
  std::vector<int> values;
  for (const char* p = text; *p != '\0';) {
    char* end = nullptr;
    values.push_back(static_cast<int>(std::strtol(p, &end, 10)));
    p = (*end == ',') ? end + 1 : end;
    if (end == p && *end != '\0') break;
  }
  return values;
}

double percentile(std::vector<float> sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = "both";
  std::vector<int> inners = {8, 16, 32, 64, 128, 256, 512};
  int reps = 200;
  int warmup = 20;
  int tableSize = kSeedDefaultTableSize;
  const char* pairCubin = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--kernel") == 0)
      which = argv[i + 1];
    else if (std::strcmp(argv[i], "--inner") == 0)
      inners = parseList(argv[i + 1]);
    else if (std::strcmp(argv[i], "--reps") == 0)
      reps = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--warmup") == 0)
      warmup = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--table") == 0)
      tableSize = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--pair") == 0)
      pairCubin = argv[i + 1];
    else {
      std::fprintf(stderr,
                   "usage: %s [--kernel compute|memory|both] [--inner LIST] [--reps N] "
                   "[--warmup N] [--table POW2] [--pair CUBIN]\n",
                   argv[0]);
      return 2;
    }
  }
  if (tableSize < 2 || (tableSize & (tableSize - 1)) != 0) {
    std::fprintf(stderr, "--table must be a power of two >= 2\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  reps = std::max(reps, 1);

  // A random single cycle through the table, so the chase never settles into a short loop.
  std::vector<int> order(static_cast<std::size_t>(tableSize));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(12345));
  std::vector<int> next(static_cast<std::size_t>(tableSize));
  for (int i = 0; i < tableSize; ++i) next[order[i]] = order[(i + 1) % tableSize];
  std::vector<float> values(static_cast<std::size_t>(tableSize));
  for (int i = 0; i < tableSize; ++i) values[i] = static_cast<float>(i % 7) * 0.125f;

  float* out = nullptr;
  int* devNext = nullptr;
  float* devValues = nullptr;
  CHECK(cudaMalloc(&out, sizeof(float) * kSeedCtas * kSeedThreads));
  CHECK(cudaMalloc(&devNext, sizeof(int) * tableSize));
  CHECK(cudaMalloc(&devValues, sizeof(float) * tableSize));
  CHECK(cudaMemcpy(devNext, next.data(), sizeof(int) * tableSize, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(devValues, values.data(), sizeof(float) * tableSize, cudaMemcpyHostToDevice));
  // The other build's kernels (--pair), launched through the runtime's library API.
  cudaKernel_t otherCompute = nullptr;
  cudaKernel_t otherMemory = nullptr;
  cudaLibrary_t library = nullptr;
  if (pairCubin != nullptr) {
    CHECK(cudaLibraryLoadFromFile(&library, pairCubin, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CHECK(cudaLibraryGetKernel(&otherCompute, library, "seed_compute"));
    CHECK(cudaLibraryGetKernel(&otherMemory, library, "seed_memory"));
  }
  cudaEvent_t start;
  cudaEvent_t stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));

  std::vector<std::string> kernels;
  if (which == "compute" || which == "both") kernels.emplace_back("compute");
  if (which == "memory" || which == "both") kernels.emplace_back("memory");
  for (const std::string& kernel : kernels) {
    for (const int inner : inners) {
      auto launch = [&] {
        if (kernel == "compute") {
          seed_compute<<<kSeedCtas, kSeedThreads>>>(out, inner, 0.9999f, 1e-4f);
        } else {
          seed_memory<<<kSeedCtas, kSeedThreads>>>(out, devNext, devValues, inner, tableSize - 1);
        }
        CHECK(cudaGetLastError());
      };
      if (pairCubin != nullptr) {
        float a = 0.9999f;
        float b = 1e-4f;
        int mask = tableSize - 1;
        void* computeArgs[] = {&out, const_cast<int*>(&inner), &a, &b};
        void* memoryArgs[] = {&out, &devNext, &devValues, const_cast<int*>(&inner), &mask};
        auto other = [&] {
          CHECK(cudaLaunchKernel(
              reinterpret_cast<const void*>(kernel == "compute" ? otherCompute : otherMemory),
              dim3(kSeedCtas), dim3(kSeedThreads), kernel == "compute" ? computeArgs : memoryArgs,
              0, nullptr));
        };
        for (int r = 0; r < warmup + reps; ++r) {
          for (int k = 0; k < 2; ++k) {
            if ((r % 2 == 0) == (k == 0))
              launch();
            else
              other();
            CHECK(cudaDeviceSynchronize());
          }
        }
        std::printf(
            "{\"kernel\":\"seed_%s\",\"inner\":%d,\"table\":%d,\"warmup\":%d,\"reps\":%d,"
            "\"paired\":true}\n",
            kernel.c_str(), inner, kernel == "memory" ? tableSize : 0, warmup, reps);
        std::fflush(stdout);
        continue;
      }
      for (int w = 0; w < warmup; ++w) {
        launch();
        CHECK(cudaDeviceSynchronize());
      }
      std::vector<float> ms(static_cast<std::size_t>(reps));
      for (int r = 0; r < reps; ++r) {
        CHECK(cudaEventRecord(start));
        launch();
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&ms[static_cast<std::size_t>(r)], start, stop));
      }
      std::sort(ms.begin(), ms.end());
      std::printf(
          "{\"kernel\":\"seed_%s\",\"inner\":%d,\"table\":%d,\"warmup\":%d,\"reps\":%d,"
          "\"median_us\":%.3f,\"min_us\":%.3f,\"p10_us\":%.3f,\"p90_us\":%.3f}\n",
          kernel.c_str(), inner, kernel == "memory" ? tableSize : 0, warmup, reps,
          1e3 * percentile(ms, 0.5), 1e3 * static_cast<double>(ms.front()),
          1e3 * percentile(ms, 0.1), 1e3 * percentile(ms, 0.9));
      std::fflush(stdout);
    }
  }
  float check = 0.0f;
  CHECK(cudaMemcpy(&check, out, sizeof check, cudaMemcpyDeviceToHost));
  std::fprintf(stderr, "harness: out[0] = %g\n", static_cast<double>(check));
  CHECK(cudaFree(out));
  CHECK(cudaFree(devNext));
  CHECK(cudaFree(devValues));
  if (library != nullptr) CHECK(cudaLibraryUnload(library));
  return 0;
}
