// End-to-end test of libargus_inject.so. Run it with the environment
//   CUDA_INJECTION64_PATH=/path/libargus_inject.so ARGUS_TRACE_DIR=DIR ARGUS_TRACE_CAPACITY=16
// (ctest's region_trace_inject_gpu does; tests/gpu_trace/run_standalone.sh builds without CMake).
// It launches the record-writing kernel three times (runtime <<<>>>, cudaLaunchKernelEx with a 2-D
// grid and a partial last warp, and a larger grid that makes the library grow its buffer) and a
// kernel from a module without __argus_trace, then a CUDA graph (captured from a stream: a
// memset, the untraced kernel and the record-writing kernel) launched twice, then reads
// DIR/launches.jsonl and each launch-<seq>.bin and checks: one line per launch (per kernel node of
// a graph launch, api cuGraphLaunch) in order, the untraced kernel left alone, every record value
// the device wrote, per-warp counts truncated at the capacity, and the dropped count.
// Exit codes: 0 pass, 1 fail, 77 skipped (no CUDA device; or not run under the injection library,
// in which case it still checks that the kernel records nothing and runs cleanly).
#include <argus/trace/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "trace_writer.h"

namespace {

// Must match kCompactTraceFile in src/backends/region_trace/trace_file.h.
constexpr std::uint64_t kCompactTraceFile = 0x43475241u;

int gFailures = 0;

#define EXPECT(cond, ...)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                   \
      std::fprintf(stderr, "\n");                                          \
      ++gFailures;                                                         \
    }                                                                      \
  } while (0)

bool cudaOk(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "FAIL %s: %s\n", what, cudaGetErrorString(status));
  ++gFailures;
  return false;
}

struct Launch {
  const char* kernel;
  dim3 grid;
  dim3 block;
  unsigned salt = 0;
  unsigned modulo = 1;
  bool traced = false;
  bool graph = false;  ///< A kernel node of a graph launch.
};

// Minimal field readers for the fixed-format launches.jsonl lines.
std::string field(const std::string& line, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  const auto at = line.find(needle);
  if (at == std::string::npos) return "";
  auto begin = at + needle.size();
  if (line[begin] == '"') {
    const auto end = line.find('"', begin + 1);
    return line.substr(begin + 1, end - begin - 1);
  }
  auto end = begin;
  int depth = 0;
  while (end < line.size() && (depth > 0 || (line[end] != ',' && line[end] != '}'))) {
    if (line[end] == '[') ++depth;
    if (line[end] == ']') --depth;
    ++end;
  }
  return line.substr(begin, end - begin);
}

std::uint64_t number(const std::string& text) {
  return std::strtoull(text.c_str(), nullptr, 10);
}

std::string dims(const dim3& d) {
  return "[" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + "]";
}

void checkTrace(const std::string& dir, const std::string& line, const Launch& launch) {
  using argus::trace::TraceHeader;
  using argus::trace::TraceRecord;
  const std::string file = field(line, "file");
  EXPECT(!file.empty() && file != "null", "traced launch without a file: %s", line.c_str());
  std::ifstream in(dir + "/" + file, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT(bytes.size() >= sizeof(TraceHeader), "%s: %zu bytes", file.c_str(), bytes.size());
  if (bytes.size() < sizeof(TraceHeader)) return;
  TraceHeader header;
  std::memcpy(&header, bytes.data(), sizeof header);
  const unsigned threads = launch.block.x * launch.block.y * launch.block.z;
  const unsigned ctas = launch.grid.x * launch.grid.y * launch.grid.z;
  const unsigned warpsPerCta = (threads + 31) / 32;
  EXPECT(header.magic == argus::trace::kTraceMagic, "magic %x", header.magic);
  EXPECT(header.version == argus::trace::kTraceVersion, "version %u", header.version);
  EXPECT(header.warpsPerCta == warpsPerCta, "warpsPerCta %u, expected %u", header.warpsPerCta,
         warpsPerCta);
  EXPECT(header.warpSlots == ctas * warpsPerCta, "warpSlots %u", header.warpSlots);
  const unsigned capacity = header.capacityPerWarp;
  EXPECT(capacity > 0, "capacity 0");

  // The records in file order, valid ones only (compact files hold only those already).
  std::vector<TraceRecord> got;
  const char* body = bytes.data() + sizeof header;
  const std::size_t bodyRecords = (bytes.size() - sizeof header) / sizeof(TraceRecord);
  const bool compact = header.reserved[0] == kCompactTraceFile;
  if (compact) {
    EXPECT(header.reserved[1] == bodyRecords, "compact count %llu, file holds %zu",
           static_cast<unsigned long long>(header.reserved[1]), bodyRecords);
  } else {
    EXPECT(bodyRecords == std::size_t{header.warpSlots} * capacity, "full file holds %zu",
           bodyRecords);
  }
  for (std::size_t i = 0; i < bodyRecords; ++i) {
    TraceRecord r;
    std::memcpy(&r, body + i * sizeof r, sizeof r);
    if ((r.meta & argus::trace::kValidBit) != 0)
      got.push_back(r);
    else
      EXPECT(!compact, "compact file holds an invalid record at %zu", i);
  }

  std::vector<TraceRecord> want;
  unsigned long long dropped = 0;
  for (unsigned cta = 0; cta < ctas; ++cta) {
    for (unsigned warp = 0; warp < warpsPerCta; ++warp) {
      const unsigned n = expectedRecordCount(cta, warp, launch.salt, launch.modulo);
      if (n > capacity) dropped += n - capacity;
      for (unsigned i = 0; i < n && i < capacity; ++i) {
        TraceRecord r;
        r.begin = expectedBegin(cta, warp, i);
        r.end = expectedEnd(cta, warp, i);
        r.meta =
            argus::trace::kValidBit | (expectedRegion(i) << 16) | (argus::trace::kNoRole << 12);
        r.cta = cta;
        r.iteration = i;
        r.warp = warp;
        want.push_back(r);
      }
    }
  }
  EXPECT(header.dropped == dropped, "dropped %llu, expected %llu",
         static_cast<unsigned long long>(header.dropped), dropped);
  EXPECT(number(field(line, "dropped")) == dropped, "launches.jsonl dropped: %s", line.c_str());
  EXPECT(number(field(line, "records")) == want.size(), "launches.jsonl records: %s", line.c_str());
  EXPECT(got.size() == want.size(), "%zu records, expected %zu", got.size(), want.size());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const TraceRecord& g = got[i];
    const TraceRecord& w = want[i];
    const bool same = g.begin == w.begin && g.end == w.end && (g.meta & ~0xffu) == w.meta &&
                      g.cta == w.cta && g.iteration == w.iteration && g.warp == w.warp;
    if (!same && mismatches++ < 5) {
      std::fprintf(stderr,
                   "FAIL record %zu: got cta %u warp %u iter %u begin %llx meta %x; want cta %u "
                   "warp %u iter %u begin %llx meta %x\n",
                   i, g.cta, g.warp, g.iteration, static_cast<unsigned long long>(g.begin), g.meta,
                   w.cta, w.warp, w.iteration, static_cast<unsigned long long>(w.begin), w.meta);
    }
  }
  gFailures += static_cast<int>(mismatches);
  std::printf("  %s: %zu records in %u slots (capacity %u, %s file), dropped %llu: %s\n",
              launch.kernel, got.size(), header.warpSlots, capacity, compact ? "compact" : "full",
              static_cast<unsigned long long>(header.dropped), mismatches == 0 ? "ok" : "MISMATCH");
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  const char* dirEnv = std::getenv("ARGUS_TRACE_DIR");
  const char* injection = std::getenv("CUDA_INJECTION64_PATH");
  const bool injected = dirEnv != nullptr && injection != nullptr && *injection != '\0';

  int* out = nullptr;
  if (!cudaOk(cudaMalloc(&out, 1 << 20), "cudaMalloc")) return 1;

  std::vector<Launch> launches = {
      {"argus_trace_writer", dim3(5), dim3(64), 1, 29, true},
      {"argus_plain_kernel", dim3(2), dim3(32), 0, 1, false},
      {"argus_trace_writer", dim3(3, 2), dim3(50, 2), 7, 23, true},  // 100 threads: 4 warps
      {"argus_trace_writer", dim3(40), dim3(256), 3, 40, true},      // grows the buffer
  };
  for (const Launch& launch : launches) {
    if (std::strcmp(launch.kernel, "argus_plain_kernel") == 0) {
      argus_plain_kernel<<<launch.grid, launch.block>>>(out);
    } else if (launch.grid.y > 1) {
      cudaLaunchConfig_t config = {};
      config.gridDim = launch.grid;
      config.blockDim = launch.block;
      cudaOk(cudaLaunchKernelEx(&config, argus_trace_writer, launch.salt, launch.modulo),
             "cudaLaunchKernelEx");
    } else {
      argus_trace_writer<<<launch.grid, launch.block>>>(launch.salt, launch.modulo);
    }
    cudaOk(cudaGetLastError(), "launch");
  }
  cudaOk(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  // A graph captured from a stream: its kernel nodes are traced at each cuGraphLaunch (the
  // launches made while capturing are not: they do not run then).
  const Launch graphNodes[] = {
      {"argus_plain_kernel", dim3(3), dim3(32), 0, 1, false, true},
      {"argus_trace_writer", dim3(6), dim3(96), 5, 31, true, true},
  };
  cudaStream_t stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate") &&
      cudaOk(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "BeginCapture")) {
    cudaOk(cudaMemsetAsync(out, 0, 1024, stream), "cudaMemsetAsync (captured)");
    argus_plain_kernel<<<graphNodes[0].grid, graphNodes[0].block, 0, stream>>>(out);
    argus_trace_writer<<<graphNodes[1].grid, graphNodes[1].block, 0, stream>>>(
        graphNodes[1].salt, graphNodes[1].modulo);
    // Their launch lines, while capturing: not traced.
    for (Launch captured : graphNodes) {
      captured.traced = captured.graph = false;
      launches.push_back(captured);
    }
    if (cudaOk(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture") &&
        cudaOk(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate")) {
      // The graph itself may go once instantiated; its executable keeps the nodes.
      cudaGraphDestroy(graph);
      for (int i = 0; i < 2; ++i) {
        cudaOk(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
        launches.insert(launches.end(), std::begin(graphNodes), std::end(graphNodes));
      }
      cudaOk(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      cudaGraphExecDestroy(exec);
    }
    cudaStreamDestroy(stream);
  }
  cudaFree(out);
  if (!injected) {
    std::printf(
        "SKIP: not run under CUDA_INJECTION64_PATH with ARGUS_TRACE_DIR (the kernels ran "
        "cleanly without a trace buffer)\n");
    return gFailures == 0 ? 77 : 1;
  }

  const std::string dir = dirEnv;
  std::ifstream jsonl(dir + "/launches.jsonl");
  std::vector<std::string> lines;
  for (std::string line; std::getline(jsonl, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  EXPECT(lines.size() == launches.size(), "%zu launch lines, expected %zu", lines.size(),
         launches.size());
  for (std::size_t i = 0; i < lines.size() && i < launches.size(); ++i) {
    const std::string& line = lines[i];
    const Launch& launch = launches[i];
    std::printf("%s\n", line.c_str());
    EXPECT(number(field(line, "seq")) == i, "seq: %s", line.c_str());
    EXPECT(field(line, "kernel") == launch.kernel, "kernel: %s", line.c_str());
    EXPECT((field(line, "api") == "cuGraphLaunch") == launch.graph, "api: %s", line.c_str());
    EXPECT(field(line, "grid") == dims(launch.grid), "grid: %s", line.c_str());
    EXPECT(field(line, "block") == dims(launch.block), "block: %s", line.c_str());
    EXPECT(field(line, "traced") == (launch.traced ? "true" : "false"), "traced: %s", line.c_str());
    if (launch.traced)
      checkTrace(dir, line, launch);
    else
      EXPECT(field(line, "file") == "null", "untraced launch with a file: %s", line.c_str());
  }
  std::ifstream errors(dir + "/errors.txt");
  std::stringstream errorText;
  errorText << errors.rdbuf();
  EXPECT(errorText.str().empty(), "errors.txt: %s", errorText.str().c_str());
  std::printf(gFailures == 0 ? "PASS\n" : "FAIL (%d)\n", gFailures);
  return gFailures == 0 ? 0 : 1;
}
