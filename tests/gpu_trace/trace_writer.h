// The end-to-end test of libargus_inject.so: a kernel that writes trace records exactly as the
// trace-lowering pass does (argus/trace/format.h), with values the host can predict, so the host
// checks that every record the device wrote comes back through the injection library unchanged.
#pragma once

// Records warp `warp` of CTA `cta` appends in a launch; some exceed a small capacity on purpose.
__host__ __device__ inline unsigned expectedRecordCount(unsigned cta, unsigned warp, unsigned salt,
                                                        unsigned modulo) {
  return (cta * 3u + warp * 5u + salt) % modulo;
}

// The record values (begin, end, region index) for append index `i`: functions of the coordinates.
__host__ __device__ inline unsigned long long expectedBegin(unsigned cta, unsigned warp,
                                                            unsigned i) {
  return (static_cast<unsigned long long>(cta) << 32) | (warp << 16) | i;
}
__host__ __device__ inline unsigned long long expectedEnd(unsigned cta, unsigned warp, unsigned i) {
  return expectedBegin(cta, warp, i) + 1000u + 7u * i;
}
__host__ __device__ inline unsigned expectedRegion(unsigned i) {
  return (i * 37u) % 4096u;
}

extern "C" __global__ void argus_trace_writer(unsigned salt, unsigned modulo);
extern "C" __global__ void argus_plain_kernel(int* out);
