// A neighbour for experiments/probe-isolation/probe-disturb-experiment.sh (issue 7): which
// activity of another process on the same GPU changes a forced-completion probe's measured
// latency? It does one kind of thing in a loop, without taking the device's turn, until SIGTERM
// or SIGINT, then prints how many rounds it did. Usage: argus_bench_disturb MODE [PAUSE_MS]:
// PAUSE_MS (default 0) is a sleep between rounds (malloc, copy, kernel, context, process), to see
// how long the effect of one round lasts.
//   cpu      four threads spinning on the host; no CUDA at all (the control)
//   idle     a context holding 1 GiB of device memory, asleep
//   malloc   cudaMalloc and cudaFree of 64 MiB (page-table updates, no kernels)
//   copy     64 MiB host-to-device copies from pinned memory (copy engine, DRAM, L2)
//   kernel   one 1-block kernel of about 20 us after another (another context's kernels)
//   pageable with a context: 64 MiB of pageable host memory allocated, written, copied to the
//            device and freed (the driver may have mapped the pages for the copy; freeing them
//            then reaches the GPU through the kernel's MMU notifiers, without a CUDA call)
//   hostmem  the same without the copy: pageable host memory allocated, written and freed
//   context  create the primary context, allocate 2 MiB, destroy it (cudaDeviceReset)
//   process  start this program as `once` and wait for it: a whole short CUDA process's start
//            and exit, like a probe process's own
//   once     create a context, allocate and free 2 MiB, exit
#include <cuda_runtime.h>

#include <unistd.h>

#include <sys/wait.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> gStop{false};

void onSignal(int) {
  gStop = true;
}

bool ok(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "argus_bench_disturb: %s: %s\n", what, cudaGetErrorString(status));
  return false;
}

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const useconds_t pause = argc > 2 ? static_cast<useconds_t>(std::atoi(argv[2]) * 1000) : 0;
  const auto rest = [&] {
    if (pause != 0) usleep(pause);
  };
  std::signal(SIGTERM, onSignal);
  std::signal(SIGINT, onSignal);
  constexpr size_t kBig = 64u << 20;
  long long rounds = 0;
  if (mode == "once") {
    void* p = nullptr;
    return ok(cudaMalloc(&p, 2u << 20), "cudaMalloc") && ok(cudaFree(p), "cudaFree") ? 0 : 1;
  } else if (mode == "cpu") {
    std::vector<std::thread> threads;
    std::atomic<long long> spins{0};
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        while (!gStop) spins.fetch_add(1, std::memory_order_relaxed);
      });
    for (auto& t : threads) t.join();
    rounds = spins;
  } else if (mode == "idle") {
    void* p = nullptr;
    if (!ok(cudaMalloc(&p, 1u << 30), "cudaMalloc")) return 1;
    while (!gStop) {
      usleep(1000);
      ++rounds;
    }
  } else if (mode == "malloc") {
    while (!gStop) {
      void* p = nullptr;
      if (!ok(cudaMalloc(&p, kBig), "cudaMalloc") || !ok(cudaFree(p), "cudaFree")) return 1;
      ++rounds;
      rest();
    }
  } else if (mode == "copy") {
    void *host = nullptr, *device = nullptr;
    if (!ok(cudaMallocHost(&host, kBig), "cudaMallocHost") ||
        !ok(cudaMalloc(&device, kBig), "cudaMalloc"))
      return 1;
    std::memset(host, 1, kBig);
    while (!gStop) {
      if (!ok(cudaMemcpy(device, host, kBig, cudaMemcpyHostToDevice), "cudaMemcpy")) return 1;
      ++rounds;
      rest();
    }
  } else if (mode == "pageable" || mode == "hostmem") {
    void* device = nullptr;
    if (!ok(cudaMalloc(&device, kBig), "cudaMalloc")) return 1;
    while (!gStop) {
      // malloc of this size is its own mmap, and free its munmap.
      void* host = std::malloc(kBig);
      if (host == nullptr) return 1;
      std::memset(host, 1, kBig);
      if (mode == "pageable" &&
          !ok(cudaMemcpy(device, host, kBig, cudaMemcpyHostToDevice), "cudaMemcpy")) {
        std::free(host);
        return 1;
      }
      std::free(host);
      ++rounds;
      rest();
    }
  } else if (mode == "kernel") {
    while (!gStop) {
      spin<<<1, 32>>>(40000);  // about 20 us at the H200's clocks
      if (!ok(cudaDeviceSynchronize(), "kernel")) return 1;
      ++rounds;
      rest();
    }
  } else if (mode == "context") {
    while (!gStop) {
      void* p = nullptr;
      if (!ok(cudaMalloc(&p, 2u << 20), "cudaMalloc") || !ok(cudaDeviceReset(), "cudaDeviceReset"))
        return 1;
      ++rounds;
      rest();
    }
  } else if (mode == "process") {
    while (!gStop) {
      const pid_t child = fork();
      if (child == 0) {
        execl("/proc/self/exe", argv[0], "once", static_cast<char*>(nullptr));
        _exit(127);
      }
      int status = 0;
      if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
          WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "argus_bench_disturb: the `once` child failed\n");
        return 1;
      }
      ++rounds;
      rest();
    }
  } else {
    std::fprintf(
        stderr,
        "usage: argus_bench_disturb cpu|idle|malloc|copy|kernel|pageable|hostmem|context|process|"
        "once [PAUSE_MS]\n");
    return 2;
  }
  std::printf("%s: %lld rounds\n", mode.c_str(), rounds);
  return 0;
}
