// Host driver of the nested_regions example: random inputs, one launch, a double-precision CPU
// reference, PASS/FAIL. Usage: argus_example_nested_regions [ROWS COLS] [--graph] (COLS a multiple
// of 128). With --graph the launch is captured from a stream into a CUDA graph, and the graph is
// launched instead (graph.yaml: Argus traces kernels inside graphs too).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../common/example_util.h"
#include "nested_regions.h"

int main(int argc, char** argv) {
  int rows = 1024;
  int cols = 4096;  // 32 iterations of the body region
  const bool graph = argc > 1 && std::strcmp(argv[argc - 1], "--graph") == 0;
  if (graph) --argc;
  if (argc == 3) {
    rows = std::atoi(argv[1]);
    cols = std::atoi(argv[2]);
  }
  if (rows <= 0 || cols <= 0 || cols % kNestedChunk != 0) {
    std::fprintf(stderr, "usage: %s [ROWS COLS] [--graph] with COLS %% %d == 0\n", argv[0],
                 kNestedChunk);
    return 2;
  }
  if (const int skip = example::requireSm90(); skip != 0) return skip;

  const std::size_t count = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  // [-2, 2) puts values on both sides of the combine branch's threshold.
  const std::vector<float> hostX = example::randomValues(count, -2.0f, 2.0f, 42u);

  float* devX = nullptr;
  float* devY = nullptr;
  EXAMPLE_CHECK(cudaMalloc(&devX, count * sizeof(float)));
  EXAMPLE_CHECK(cudaMalloc(&devY, static_cast<std::size_t>(rows) * sizeof(float)));
  EXAMPLE_CHECK(cudaMemcpy(devX, hostX.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  EXAMPLE_CHECK(cudaMemset(devY, 0xff, static_cast<std::size_t>(rows) * sizeof(float)));  // NaN

  if (graph) {
    cudaStream_t stream = nullptr;
    cudaGraph_t captured = nullptr;
    cudaGraphExec_t exec = nullptr;
    EXAMPLE_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    EXAMPLE_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    EXAMPLE_CHECK(launchNestedRegions(devX, devY, rows, cols, stream));
    EXAMPLE_CHECK(cudaStreamEndCapture(stream, &captured));
    EXAMPLE_CHECK(cudaGraphInstantiate(&exec, captured, 0));
    EXAMPLE_CHECK(cudaGraphLaunch(exec, stream));
    EXAMPLE_CHECK(cudaStreamSynchronize(stream));
    EXAMPLE_CHECK(cudaGraphExecDestroy(exec));
    EXAMPLE_CHECK(cudaGraphDestroy(captured));
    EXAMPLE_CHECK(cudaStreamDestroy(stream));
  } else {
    EXAMPLE_CHECK(launchNestedRegions(devX, devY, rows, cols, nullptr));
  }
  EXAMPLE_CHECK(cudaDeviceSynchronize());

  std::vector<float> hostY(static_cast<std::size_t>(rows));
  EXAMPLE_CHECK(
      cudaMemcpy(hostY.data(), devY, hostY.size() * sizeof(float), cudaMemcpyDeviceToHost));
  EXAMPLE_CHECK(cudaFree(devX));
  EXAMPLE_CHECK(cudaFree(devY));

  // The branch decision uses the FP32 transform, as the kernel does; the sums are in double.
  std::vector<double> reference(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (int c = 0; c < cols; ++c) {
      const float t =
          nestedTransform(hostX[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) +
                                static_cast<std::size_t>(c)]);
      sum += t > 0.1f ? 2.0 * t : static_cast<double>(nestedTransform(t)) - t;
    }
    reference[static_cast<std::size_t>(r)] = sum;
  }
  std::printf("nested_regions: rows=%d cols=%d (%d body iterations)%s\n", rows, cols,
              cols / kNestedChunk, graph ? ", launched in a CUDA graph" : "");
  return example::checkRelative("nested_regions", hostY, reference, 1e-4) ? 0 : 1;
}
