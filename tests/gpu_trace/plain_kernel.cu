// A kernel in a module of its own (this translation unit) that has no __argus_trace variable:
// the injection library must leave its launch alone and only log it.
#include "trace_writer.h"

extern "C" __global__ void argus_plain_kernel(int* out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = static_cast<int>(threadIdx.x);
}
