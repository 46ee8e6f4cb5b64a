// Host side of bench/pc_overhead: launches the kernel N times (default 5) and prints, per launch,
// the host wall time from launch to synchronize and the GPU time between two events, as JSON
// lines. Under a collector (libargus_cupti_sass.so) the wall time includes what the collector adds
// to that launch (patching, synchronization, record flush of the launch before). A last line gives
// the time from main's start to the first allocation's return (CUDA and context set-up) and to
// main's end, so that a process's added time splits into set-up, launches and exit. Exit 77: no
// GPU.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

extern "C" __global__ void pc_overhead(float* out, float a, float b);

int main(int argc, char** argv) {
  const auto mainStart = std::chrono::steady_clock::now();
  const auto msSince = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };
  const int launches = argc > 1 ? std::atoi(argv[1]) : 5;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  float* out = nullptr;
  if (cudaMalloc(&out, 128 * 256 * sizeof(float)) != cudaSuccess) return 1;
  const double setupMs = msSince(mainStart);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < launches; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    cudaEventRecord(start);
    pc_overhead<<<128, 256>>>(out, 0.999f, 0.5f);
    cudaEventRecord(stop);
    if (cudaDeviceSynchronize() != cudaSuccess) return 1;
    const double wallUs =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    float gpuMs = 0.0f;
    cudaEventElapsedTime(&gpuMs, start, stop);
    std::printf("{\"launch\": %d, \"wall_us\": %.1f, \"event_us\": %.2f}\n", i, wallUs,
                static_cast<double>(gpuMs) * 1e3);
  }
  float host = 0.0f;
  cudaMemcpy(&host, out, sizeof(float), cudaMemcpyDeviceToHost);
  std::printf("PASS out[0]=%g\n", static_cast<double>(host));
  cudaFree(out);
  std::printf("{\"setup_ms\": %.2f, \"main_ms\": %.2f}\n", setupMs, msSince(mainStart));
  return 0;
}
