// CUPTI's kernel activity records read for kernels.jsonl, by the injection libraries that write
// it (libargus_inject.so and libargus_cupti_sass.so, through recordKernels in skeleton.h).
#pragma once

#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "argus/inject/output.h"
#include "argus/inject/vendor_api.h"

namespace argus::inject {

/// The one kernel an Argus injection library launches itself: libargus_inject.so's L2 reader
/// (src/backends/region_trace/l2_read_kernel.h), whose records kernels.jsonl leaves out.
inline constexpr std::string_view kL2ReadKernel = "argus_l2_read";

// The fields read below sit at the same offsets in every CUpti_ActivityKernelN since 3, so the
// current layout reads whichever version CUPTI delivers.
static_assert(offsetof(CUpti_ActivityKernel10, start) == offsetof(CUpti_ActivityKernel4, start) &&
              offsetof(CUpti_ActivityKernel10, end) == offsetof(CUpti_ActivityKernel4, end) &&
              offsetof(CUpti_ActivityKernel10, contextId) ==
                  offsetof(CUpti_ActivityKernel4, contextId) &&
              offsetof(CUpti_ActivityKernel10, streamId) ==
                  offsetof(CUpti_ActivityKernel4, streamId) &&
              offsetof(CUpti_ActivityKernel10, correlationId) ==
                  offsetof(CUpti_ActivityKernel4, correlationId) &&
              offsetof(CUpti_ActivityKernel10, name) == offsetof(CUpti_ActivityKernel4, name));

/// `record`'s kernel, or nullopt when it is not a kernel record or is Argus's own kernel
/// (kL2ReadKernel); `seq` stays -1 (the caller knows the launch's number by the correlation id).
inline std::optional<KernelActivity> kernelActivity(const CUpti_Activity* record) {
  if (record == nullptr || (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
                            record->kind != CUPTI_ACTIVITY_KIND_KERNEL))
    return std::nullopt;
  const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
  if (k->name != nullptr && k->name == kL2ReadKernel) return std::nullopt;
  return KernelActivity{.correlation = k->correlationId,
                        .kernel = k->name != nullptr ? k->name : "",
                        .startNs = k->start,
                        .endNs = k->end,
                        .context = k->contextId,
                        .stream = k->streamId};
}

/// kernels.jsonl's lines for the kernel records of a completed activity buffer, Argus's own
/// kernel left out (kernelActivity); `seqOf(correlation, kernel)` maps a record's correlation id
/// and kernel name to its launch's number (-1 when unknown).
template <class SeqOf>
std::string kernelsLines(std::uint8_t* buffer, std::size_t validSize, SeqOf&& seqOf) {
  std::string lines;
  CUpti_Activity* record = nullptr;
  while (vendor().cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
    auto kernel = kernelActivity(record);
    if (!kernel) continue;
    kernel->seq = seqOf(kernel->correlation, kernel->kernel);
    lines += kernelsLine(*kernel);
  }
  return lines;
}

/// The launch numbers of a graph launch's kernel nodes: its kernels share the launch's
/// correlation id, so they are told apart by name (a graph's nodes of one kernel are not traced,
/// region_trace/inject.cpp).
using GraphNodeSeqs = std::map<std::pair<std::uint32_t, std::string>, std::uint64_t>;

/// Appends a completed activity buffer's kernels to `dir`/kernels.jsonl, each with the launch
/// number `seqOfGraphNode` (when given) or `seqOfCorrelation` gives it (-1 when unknown); with
/// `forget`, an entry is erased when it is looked up (libargus_inject.so: one kernel per launch
/// or graph node), else kept (libargus_cupti_sass.so). `mutex` guards the maps and the file.
inline void appendKernelsJsonl(std::uint8_t* buffer, std::size_t validSize,
                               std::recursive_mutex& mutex,
                               std::map<std::uint32_t, std::uint64_t>& seqOfCorrelation,
                               GraphNodeSeqs* seqOfGraphNode, const std::filesystem::path& dir,
                               bool forget) {
  const auto seqOf = [&](std::uint32_t correlation, const std::string& kernel) {
    std::lock_guard lock(mutex);
    if (seqOfGraphNode != nullptr)
      if (auto node = seqOfGraphNode->find({correlation, kernel}); node != seqOfGraphNode->end()) {
        const auto seq = static_cast<std::int64_t>(node->second);
        if (forget) seqOfGraphNode->erase(node);
        return seq;
      }
    auto it = seqOfCorrelation.find(correlation);
    if (it == seqOfCorrelation.end()) return std::int64_t{-1};
    const auto seq = static_cast<std::int64_t>(it->second);
    if (forget) seqOfCorrelation.erase(it);
    return seq;
  };
  const std::string lines = kernelsLines(buffer, validSize, seqOf);
  std::lock_guard lock(mutex);
  std::ofstream(dir / "kernels.jsonl", std::ios::app) << lines;
}

}  // namespace argus::inject
