// Writes trace records the way the trace-lowering pass does: the module holds the `.global .u64
// __argus_trace` variable (a namespace-scope variable gets no mangling, so the PTX name is exactly
// __argus_trace); lane 0 of each warp appends to its own slot with a counter in a register and
// two 16-byte stores per record, and counts overflow in header.dropped with one atomic per lost
// record. With no injection library the variable is 0 and nothing is recorded.
#include <argus/trace/format.h>

#include "trace_writer.h"

__device__ unsigned long long __argus_trace;

extern "C" __global__ void argus_trace_writer(unsigned salt, unsigned modulo) {
  using argus::trace::TraceHeader;
  using argus::trace::TraceRecord;
  auto* header = reinterpret_cast<TraceHeader*>(__argus_trace);
  if (header == nullptr) return;
  const unsigned tid =
      threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
  const unsigned cta = blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y;
  const unsigned warp = tid / 32;
  if (tid % 32 != 0) return;
  unsigned sm = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  const unsigned capacity = header->capacityPerWarp;
  const unsigned slot = cta * header->warpsPerCta + warp;
  auto* records =
      reinterpret_cast<TraceRecord*>(header + 1) + static_cast<unsigned long long>(slot) * capacity;
  const unsigned n = expectedRecordCount(cta, warp, salt, modulo);
  for (unsigned count = 0; count < n; ++count) {
    if (count >= capacity) {
      atomicAdd(reinterpret_cast<unsigned long long*>(&header->dropped), 1ull);
      continue;
    }
    const unsigned meta = argus::trace::kValidBit | (expectedRegion(count) << 16) |
                          (argus::trace::kNoRole << 12) | (sm & 0xffu);
    auto* out = reinterpret_cast<ulonglong2*>(records + count);
    out[0] = make_ulonglong2(expectedBegin(cta, warp, count), expectedEnd(cta, warp, count));
    out[1] = make_ulonglong2((static_cast<unsigned long long>(cta) << 32) | meta,
                             (static_cast<unsigned long long>(warp) << 32) | count);
  }
}
