// The all-gather + GEMM pipeline of issue 9 on W GPUs of one host, one process per GPU (forked
// before CUDA starts). Every rank holds M/W rows of the operand A (M x K, FP16) and its own
// B (N x K); A is all-gathered over NCCL in S chunks while examples/tma_gemm computes
// C (M x N, FP32) = A·Bᵀ for the chunks that have landed, released every P chunks. R is the
// number of CTAs NCCL runs its kernels with (ncclConfig_t minCTAs = maxCTAs = R, one communicator
// per R); NCCL's CTAs are large enough that a tma_gemm CTA does not fit beside one, so R SMs are
// taken from the GEMM while a chunk moves. The communication stream has the higher priority.
//
// Chunk c of the gathered buffer holds rank 0's c-th slice of M/(W·S) rows, then rank 1's, ...
// (ncclAllGather's layout); C's rows are in the same order and the check knows it.
//
//   argus_overlap_nccl comm M:K[,M:K...]   chunked all-gathers for every S and R, each chunk in an
//                                          NVTX range "argus.comm impl=nccl bytes=.. sms=..";
//                                          run under libargus_system_trace.so (rank r > 0 writes
//                                          $ARGUS_SYSTEM_TRACE_OUT.rank<r>)
//   argus_overlap_nccl grid M N K          the pipeline for every (S, R, P), each time the
//                                          slowest rank's; JSON lines on stdout (rank 0)
// Options: --ranks W (default: every visible GPU), --reps N (default 9).
// NVLink multicast (NVLS) is switched off in every rank: NCCL_NVLS_ENABLE=0 is forced.
// Exit 77 with fewer than 2 sm_90 GPUs.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "pipeline_common.h"
#include "tma_gemm.h"

namespace {

namespace bench = argus::bench;

const int kSplits[] = {1, 2, 4, 8};
const int kCommCtas[] = {2, 4, 8, 16, 32};
const int kSteps[] = {1, 2};
constexpr int kChecks = 64;
// Each timed run starts behind a GPU spin of this many cycles (about 0.1 ms), so that the host
// has enqueued the whole pipeline before the start event: the times are the GPU's, not the
// host's launch rate (torch_baseline.py does the same with torch.cuda._sleep).
constexpr long long kSpinCycles = 200000;

#define CHECK ARGUS_BENCH_CHECK
#define NCCL_CHECK(call)                                                                         \
  do {                                                                                           \
    ncclResult_t r_ = (call);                                                                    \
    if (r_ != ncclSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

struct Options {
  int ranks = 0;
  int reps = 9;
};

// Integer-valued operands, so FP32 sums of products are exact and the host can check C.
__host__ __device__ inline int aValue(int rank, long localRow, long k) {
  return static_cast<int>((rank * 7 + localRow * 3 + k) % 5) - 2;
}
__host__ __device__ inline int bValue(int rank, long n, long k) {
  return static_cast<int>((n + 2 * k + rank) % 3) - 1;
}

__global__ void fillA(__half* a, int rank, long rows, long k) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < rows * k;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    a[i] = __int2half_rn(aValue(rank, i / k, i % k));
}
__global__ void fillB(__half* b, int rank, long n, long k) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n * k;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    b[i] = __int2half_rn(bValue(rank, i / k, i % k));
}

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

/// One rank's communicators: `ctl` for barriers and reductions of timings, one per R for data.
struct Comms {
  int rank = 0, ranks = 0;
  ncclComm_t ctl{};
  std::vector<std::pair<int, ncclComm_t>> data;  // (R, comm)
  float* scratch = nullptr;                      // one device float for reductions
  cudaStream_t ctlStream{};

  [[nodiscard]] ncclComm_t forCtas(int r) const {
    for (const auto& [ctas, comm] : data)
      if (ctas == r) return comm;
    std::fprintf(stderr, "no communicator for R=%d\n", r);
    std::exit(1);
  }
  /// Blocks until every rank is here.
  void barrier() const { (void)maxOverRanks(0.0f); }
  /// The largest `value` over ranks.
  [[nodiscard]] float maxOverRanks(float value) const {
    CHECK(cudaMemcpyAsync(scratch, &value, sizeof value, cudaMemcpyHostToDevice, ctlStream));
    NCCL_CHECK(ncclAllReduce(scratch, scratch, 1, ncclFloat, ncclMax, ctl, ctlStream));
    CHECK(cudaMemcpyAsync(&value, scratch, sizeof value, cudaMemcpyDeviceToHost, ctlStream));
    CHECK(cudaStreamSynchronize(ctlStream));
    return value;
  }
};

Comms connect(int rank, int ranks, const ncclUniqueId& id) {
  Comms comms;
  comms.rank = rank;
  comms.ranks = ranks;
  NCCL_CHECK(ncclCommInitRank(&comms.ctl, ranks, id, rank));
  for (int r : kCommCtas) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.minCTAs = r;
    config.maxCTAs = r;
    ncclComm_t comm{};
    // Each data communicator is split off the control one, keeping its own CTA count.
    NCCL_CHECK(ncclCommSplit(comms.ctl, 0, rank, &comm, &config));
    comms.data.emplace_back(r, comm);
  }
  CHECK(cudaMalloc(&comms.scratch, sizeof(float)));
  CHECK(cudaStreamCreateWithFlags(&comms.ctlStream, cudaStreamNonBlocking));
  return comms;
}

void disconnect(Comms& comms) {
  for (auto& [r, comm] : comms.data) NCCL_CHECK(ncclCommDestroy(comm));
  NCCL_CHECK(ncclCommDestroy(comms.ctl));
  CHECK(cudaFree(comms.scratch));
}

/// Chunked all-gathers of every shape for every (S, R), each chunk in a labelled NVTX range.
int commSweep(const Comms& comms, const char* shapes, const Options& options) {
  int low = 0, high = 0;
  CHECK(cudaDeviceGetStreamPriorityRange(&low, &high));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, high));
  for (const auto& [m, k] : bench::parseShapes(shapes)) {
    const size_t totalBytes = static_cast<size_t>(m) * k * sizeof(__half);
    const size_t localBytes = totalBytes / comms.ranks;
    void *local, *full;
    CHECK(cudaMalloc(&local, localBytes));
    CHECK(cudaMalloc(&full, totalBytes));
    CHECK(cudaMemset(local, 1, localBytes));
    for (int s : kSplits)
      for (int r : kCommCtas) {
        const size_t slice = localBytes / s;  // this rank's part of one chunk
        // What one chunk brings to a rank from the others.
        const size_t received = slice * (comms.ranks - 1);
        ncclComm_t comm = comms.forCtas(r);
        for (int rep = 0; rep < options.reps; ++rep) {
          comms.barrier();
          for (int c = 0; c < s; ++c) {
            char name[200];
            std::snprintf(name, sizeof name,
                          "argus.comm impl=nccl bytes=%zu sms=%d splits=%d chunk=%d M=%ld K=%ld "
                          "ranks=%d",
                          received, r, s, c, m, k, comms.ranks);
            nvtxRangePushA(name);
            NCCL_CHECK(ncclAllGather(static_cast<char*>(local) + c * slice,
                                     static_cast<char*>(full) + c * slice * comms.ranks, slice,
                                     ncclChar, comm, stream));
            nvtxRangePop();
          }
          CHECK(cudaStreamSynchronize(stream));
        }
      }
    CHECK(cudaFree(local));
    CHECK(cudaFree(full));
  }
  if (comms.rank == 0) std::printf("comm sweep done on %d ranks\n", comms.ranks);
  return 0;
}

/// Compares kChecks sampled entries of C with the host's exact sums; returns the mismatches.
int checkC(const float* c, long m, long n, long k, int s, int rank, int ranks) {
  const long chunkRows = m / s, slice = chunkRows / ranks;
  int bad = 0;
  for (int i = 0; i < kChecks; ++i) {
    const long row = (i * 7919L + 13) % m, col = (i * 104729L + 5) % n;
    // Row `row` of the gathered A came from rank `src`, local row `localRow`.
    const long chunk = row / chunkRows, within = row % chunkRows;
    const int src = static_cast<int>(within / slice);
    const long localRow = chunk * slice + within % slice;
    double want = 0;
    for (long kk = 0; kk < k; ++kk) want += aValue(src, localRow, kk) * bValue(rank, col, kk);
    float got = 0;
    CHECK(cudaMemcpy(&got, c + row * n + col, sizeof got, cudaMemcpyDeviceToHost));
    if (static_cast<double>(got) != want) {
      if (bad == 0)
        std::fprintf(stderr, "rank %d: C[%ld][%ld] = %g, want %g (S=%d)\n", rank, row, col, got,
                     want, s);
      ++bad;
    }
  }
  return bad;
}

/// Every (S, R, P) of the pipeline; rank 0 prints each configuration's slowest-rank median.
int grid(const Comms& comms, long m, long n, long k, const Options& options) {
  if (m % (static_cast<long>(comms.ranks) * 8) != 0 || (m / 8) % kTmaGemmBlockM != 0) {
    std::fprintf(stderr, "M=%ld: M/8 must be a multiple of %d and M of 8·ranks\n", m,
                 kTmaGemmBlockM);
    return 2;
  }
  const long localRows = m / comms.ranks;
  __half *local, *full, *b;
  float* c;
  CHECK(cudaMalloc(&local, localRows * k * sizeof(__half)));
  CHECK(cudaMalloc(&full, m * k * sizeof(__half)));
  CHECK(cudaMalloc(&b, n * k * sizeof(__half)));
  CHECK(cudaMalloc(&c, m * n * sizeof(float)));
  fillA<<<1024, 256>>>(local, comms.rank, localRows, k);
  fillB<<<1024, 256>>>(b, comms.rank, n, k);
  CHECK(cudaDeviceSynchronize());
  int low = 0, high = 0;
  CHECK(cudaDeviceGetStreamPriorityRange(&low, &high));
  cudaStream_t commStream, comp;
  CHECK(cudaStreamCreateWithPriority(&commStream, cudaStreamNonBlocking, high));
  CHECK(cudaStreamCreateWithPriority(&comp, cudaStreamNonBlocking, low));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<cudaEvent_t> landed(8);
  for (auto& e : landed) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  auto timed = [&](cudaStream_t first, auto&& body) {
    comms.barrier();
    spin<<<1, 1, 0, first>>>(kSpinCycles);
    CHECK(cudaEventRecord(start, first));
    body();
    CHECK(cudaEventRecord(stop, comp));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    return comms.maxOverRanks(ms);
  };
  if (comms.rank == 0)
    std::printf("{\"kind\":\"occupancy\",\"kernel\":\"tma_gemm\",\"ctas_per_sm\":%d}\n",
                tmaGemmCtasPerSm());
  int failures = 0;
  for (int s : kSplits) {
    const long rows = m / s, slice = rows / comms.ranks;
    // The GEMM of one chunk alone, on every SM (compute-only reference for t_comp).
    std::vector<float> alone;
    for (int rep = 0; rep <= options.reps; ++rep) {
      const float ms = timed(comp, [&] { CHECK(launchTmaGemm(full, b, c, rows, n, k, comp)); });
      if (rep > 0) alone.push_back(ms);
    }
    if (comms.rank == 0)
      std::printf(
          "{\"kind\":\"gemm_chunk\",\"M\":%ld,\"N\":%ld,\"K\":%ld,\"S\":%d,\"rows\":%ld,"
          "\"median_ns\":%.0f,\"ranks\":%d}\n",
          m, n, k, s, rows, bench::median(alone) * 1e6, comms.ranks);
    for (int r : kCommCtas)
      for (int p : kSteps) {
        if (s % p != 0) continue;
        ncclComm_t comm = comms.forCtas(r);
        std::vector<float> times;
        for (int rep = 0; rep <= options.reps; ++rep) {
          if (rep == 0) CHECK(cudaMemset(c, 0xff, m * n * sizeof(float)));
          const float ms = timed(commStream, [&] {
            CHECK(cudaStreamWaitEvent(comp, start));
            for (int ch = 0; ch < s; ++ch) {
              NCCL_CHECK(ncclAllGather(local + ch * slice * k, full + ch * rows * k, slice * k,
                                       ncclHalf, comm, commStream));
              // Compute is released every P chunks: it waits for the last chunk of the group.
              if ((ch + 1) % p == 0) {
                CHECK(cudaEventRecord(landed[ch], commStream));
                CHECK(cudaStreamWaitEvent(comp, landed[ch]));
                const long first = ch + 1 - p;
                CHECK(launchTmaGemm(full + first * rows * k, b, c + first * rows * n,
                                    static_cast<int>(rows * p), static_cast<int>(n),
                                    static_cast<int>(k), comp));
              }
            }
          });
          if (rep == 0) {
            failures += checkC(c, m, n, k, s, comms.rank, comms.ranks);
          } else {
            times.push_back(ms);
          }
        }
        if (comms.rank == 0)
          std::printf(
              "{\"kind\":\"pipeline\",\"M\":%ld,\"N\":%ld,\"K\":%ld,\"S\":%d,\"R\":%d,"
              "\"P\":%d,\"median_ns\":%.0f,\"min_ns\":%.0f,\"reps\":%d,\"ranks\":%d}\n",
              m, n, k, s, r, p, bench::median(times) * 1e6,
              *std::min_element(times.begin(), times.end()) * 1e6, options.reps, comms.ranks);
        std::fflush(stdout);
      }
  }
  CHECK(cudaFree(local));
  CHECK(cudaFree(full));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  if (failures != 0) {
    std::fprintf(stderr, "rank %d: %d sampled entries of C were wrong\n", comms.rank, failures);
    return 1;
  }
  return 0;
}

int runRank(int rank, int ranks, int idIn, int idOut[], int argc, char** argv,
            const Options& options) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // never NVLink multicast (device machine's rule)
  if (rank > 0)
    if (const char* out = std::getenv("ARGUS_SYSTEM_TRACE_OUT"); out && *out)
      setenv("ARGUS_SYSTEM_TRACE_OUT", (std::string(out) + ".rank" + std::to_string(rank)).c_str(),
             1);
  CHECK(cudaSetDevice(rank));
  bench::requireSm90();
  ncclUniqueId id;
  if (rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    for (int r = 1; r < ranks; ++r)
      if (write(idOut[r], &id, sizeof id) != static_cast<ssize_t>(sizeof id)) return 1;
  } else if (read(idIn, &id, sizeof id) != static_cast<ssize_t>(sizeof id)) {
    std::fprintf(stderr, "rank %d: no NCCL id from rank 0\n", rank);
    return 1;
  }
  Comms comms = connect(rank, ranks, id);
  const std::string mode = argv[1];
  int status = 2;
  if (mode == "comm" && argc == 3) status = commSweep(comms, argv[2], options);
  if (mode == "grid" && argc == 5)
    status = grid(comms, std::atol(argv[2]), std::atol(argv[3]), std::atol(argv[4]), options);
  CHECK(cudaDeviceSynchronize());
  disconnect(comms);
  return status;
}

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--ranks W] [--reps N] comm M:K[,M:K...] | grid M N K\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::vector<char*> args{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--ranks" || a == "--reps") && i + 1 < argc) {
      (a == "--ranks" ? options.ranks : options.reps) = std::atoi(argv[++i]);
    } else {
      args.push_back(argv[i]);
    }
  }
  const int n = static_cast<int>(args.size());
  if (n < 2 ||
      !((args[1] == std::string("comm") && n == 3) || (args[1] == std::string("grid") && n == 5)) ||
      options.reps < 1)
    return usage(argv[0]);
  // The parent asks for the GPU count in a child, so that it never starts CUDA itself: CUDA
  // does not survive fork().
  if (options.ranks == 0) {
    int pipeFd[2];
    if (pipe(pipeFd) != 0) return 1;
    if (fork() == 0) {
      unsetenv("CUDA_INJECTION64_PATH");  // no tracer in this probe: it would truncate the trace
      int count = 0;
      if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
      _exit(write(pipeFd[1], &count, sizeof count) == sizeof count ? 0 : 1);
    }
    int count = 0;
    if (read(pipeFd[0], &count, sizeof count) != sizeof count) count = 0;
    wait(nullptr);
    options.ranks = count;
  }
  if (options.ranks < 2) {
    std::printf("SKIP: needs 2 or more GPUs (found %d)\n", options.ranks);
    return 77;
  }
  std::vector<int> in(options.ranks), out(options.ranks);
  for (int r = 0; r < options.ranks; ++r) {
    int fd[2];
    if (pipe(fd) != 0) return 1;
    in[r] = fd[0];
    out[r] = fd[1];
  }
  std::fflush(stdout);
  std::vector<pid_t> children;
  for (int r = 0; r < options.ranks; ++r) {
    const pid_t pid = fork();
    // exit(), not _exit(): stdio and the tracing library flush at exit.
    if (pid == 0) std::exit(runRank(r, options.ranks, in[r], out.data(), n, args.data(), options));
    children.push_back(pid);
  }
  // A rank that fails leaves the others blocked in NCCL for ever: stop them too.
  int status = 0;
  for (size_t left = children.size(); left > 0; --left) {
    int ws = 0;
    const pid_t done = wait(&ws);
    if (done < 0) break;
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
      if (status == 0) {
        status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
        std::fprintf(stderr, "a rank ended with %s %d; stopping the others\n",
                     WIFEXITED(ws) ? "exit code" : "signal",
                     WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
      }
      for (pid_t pid : children)
        if (pid != done) kill(pid, SIGTERM);
    }
  }
  return status;
}
