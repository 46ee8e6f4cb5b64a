// Single-GPU stand-in for the all-gather + GEMM pipeline of issue 9. It is NOT an all-gather:
// "communication" is a device-to-device copy of the gathered operand A (M x K, FP16) in S chunks,
// done by a copy kernel of R CTAs that each hold 160 KiB of shared memory, so that no tma_gemm CTA
// (73 KiB) fits beside one: while a chunk copies, R SMs are reserved for it. The GEMM
// (examples/tma_gemm) of the rows of a chunk starts when that chunk has landed.
//
//   argus_overlap_pipeline comm M:K[,M:K...]  chunked copies for S in {1,2,4,8}, R in
//                                            {8,16,32,64} and cudaMemcpyAsync (R 0), each chunk
//                                            in an NVTX range "argus.comm impl=.. bytes=.. sms=..";
//                                            run it under libargus_system_trace.so
//   argus_overlap_pipeline grid M N K         measures the pipeline for every (S, R, P) of the grid
//                                            and the GEMM of one chunk alone; JSON lines on stdout
// Exit 77 without an sm_90 device.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "pipeline_common.h"
#include "tma_gemm.h"

namespace {

namespace bench = argus::bench;

constexpr int kCopyThreads = 512;
constexpr int kCopySmem = 160 * 1024;  // one copy CTA per SM, and no GEMM CTA beside it
constexpr int kReps = 7;
const int kSplits[] = {1, 2, 4, 8};
const int kCommSms[] = {8, 16, 32, 64};
const int kSteps[] = {1, 2};

#define CHECK ARGUS_BENCH_CHECK

__global__ void argus_comm_copy(const int4* __restrict__ src, int4* __restrict__ dst, size_t n) {
  extern __shared__ int4 reserve[];
  if (n == 0) reserve[threadIdx.x] = src[0];  // keeps the reservation honest; never taken
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

void copyChunk(const void* src, void* dst, size_t bytes, int sms, cudaStream_t stream) {
  if (sms == 0) {
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  argus_comm_copy<<<sms, kCopyThreads, kCopySmem, stream>>>(static_cast<const int4*>(src),
                                                            static_cast<int4*>(dst), bytes / 16);
  CHECK(cudaGetLastError());
}

int commSweep(const char* shapes) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const auto& [m, k] : bench::parseShapes(shapes)) {
    const size_t bytes = static_cast<size_t>(m) * k * sizeof(__half);
    void *src, *dst;
    CHECK(cudaMalloc(&src, bytes));
    CHECK(cudaMalloc(&dst, bytes));
    CHECK(cudaMemset(src, 1, bytes));
    for (int s : kSplits)
      for (int r : {8, 16, 32, 64, 0}) {
        const size_t chunk = bytes / s;
        for (int rep = 0; rep < kReps; ++rep) {
          for (int c = 0; c < s; ++c) {
            char name[160];
            std::snprintf(name, sizeof name,
                          "argus.comm impl=%s bytes=%zu sms=%d splits=%d chunk=%d M=%ld K=%ld",
                          r == 0 ? "memcpy" : "copy_kernel", chunk, r, s, c, m, k);
            nvtxRangePushA(name);
            copyChunk(static_cast<char*>(src) + c * chunk, static_cast<char*>(dst) + c * chunk,
                      chunk, r, stream);
            nvtxRangePop();
          }
          CHECK(cudaStreamSynchronize(stream));
        }
      }
    CHECK(cudaFree(src));
    CHECK(cudaFree(dst));
  }
  std::printf("comm sweep done\n");
  return 0;
}

using bench::median;

int grid(int m, int n, int k) {
  const size_t aBytes = static_cast<size_t>(m) * k * sizeof(__half);
  __half *remote, *a, *b;
  float* c;
  CHECK(cudaMalloc(&remote, aBytes));
  CHECK(cudaMalloc(&a, aBytes));
  CHECK(cudaMalloc(&b, static_cast<size_t>(n) * k * sizeof(__half)));
  CHECK(cudaMalloc(&c, static_cast<size_t>(m) * n * sizeof(float)));
  CHECK(cudaMemset(remote, 0, aBytes));
  CHECK(cudaMemset(b, 0, static_cast<size_t>(n) * k * sizeof(__half)));
  cudaStream_t comm, comp;
  CHECK(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<cudaEvent_t> landed(8);
  for (auto& e : landed) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));

  for (int s : kSplits) {
    const int rows = m / s;
    // The GEMM of one chunk alone (compute-only reference for t_comp).
    std::vector<float> alone;
    for (int rep = 0; rep < kReps + 1; ++rep) {
      CHECK(cudaEventRecord(start, comp));
      CHECK(launchTmaGemm(a, b, c, rows, n, k, comp));
      CHECK(cudaEventRecord(stop, comp));
      CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (rep > 0) alone.push_back(ms);
    }
    std::printf(
        "{\"kind\":\"gemm_chunk\",\"M\":%d,\"N\":%d,\"K\":%d,\"S\":%d,\"rows\":%d,"
        "\"median_ns\":%.0f}\n",
        m, n, k, s, rows, median(alone) * 1e6);
    for (int r : kCommSms)
      for (int p : kSteps) {
        if (s % p != 0) continue;
        std::vector<float> times;
        for (int rep = 0; rep < kReps + 1; ++rep) {
          CHECK(cudaDeviceSynchronize());
          CHECK(cudaEventRecord(start, comm));
          CHECK(cudaStreamWaitEvent(comp, start));
          const size_t chunk = aBytes / s;
          for (int ch = 0; ch < s; ++ch) {
            copyChunk(reinterpret_cast<char*>(remote) + ch * chunk,
                      reinterpret_cast<char*>(a) + ch * chunk, chunk, r, comm);
            // Compute is released every P chunks: it waits for the last chunk of the group.
            if ((ch + 1) % p == 0) {
              CHECK(cudaEventRecord(landed[ch], comm));
              CHECK(cudaStreamWaitEvent(comp, landed[ch]));
              const int first = ch + 1 - p;
              CHECK(launchTmaGemm(a + static_cast<size_t>(first) * rows * k, b,
                                  c + static_cast<size_t>(first) * rows * n, rows * p, n, k, comp));
            }
          }
          CHECK(cudaEventRecord(stop, comp));
          CHECK(cudaEventSynchronize(stop));
          float ms = 0;
          CHECK(cudaEventElapsedTime(&ms, start, stop));
          if (rep > 0) times.push_back(ms);
        }
        std::printf(
            "{\"kind\":\"pipeline\",\"M\":%d,\"N\":%d,\"K\":%d,\"S\":%d,\"R\":%d,"
            "\"P\":%d,\"median_ns\":%.0f,\"min_ns\":%.0f,\"reps\":%d}\n",
            m, n, k, s, r, p, median(times) * 1e6,
            *std::min_element(times.begin(), times.end()) * 1e6, kReps);
      }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  argus::bench::requireSm90();
  // CUDA (and with it the injection library) is initialised before the first NVTX call.
  CHECK(cudaFree(nullptr));
  CHECK(cudaFuncSetAttribute(argus_comm_copy, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kCopySmem));
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "comm" && argc == 3) return commSweep(argv[2]);
  if (mode == "grid" && argc == 5)
    return grid(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]));
  std::fprintf(stderr, "usage: %s comm M:K[,M:K...] | grid M N K\n", argv[0]);
  return 2;
}
