#include "argus/inject/skeleton.h"

#include <cupti_activity.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <system_error>
#include <utility>

#include "argus/inject/driver_calls.h"
#include "argus/inject/kernel_activity.h"

namespace argus::inject {
namespace {

/// registerActivityBuffers' size and receiver (one registration per library).
std::size_t gActivityBufferBytes = 0;
CompletedBuffer gCompleted = nullptr;
/// recordKernels' sink.
KernelsJsonl gKernels;

void CUPTIAPI dispatch(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                       const void* data) {
  const auto* callbacks = static_cast<const Callbacks*>(userdata);
  if (callbacks == nullptr || tInCallback || !callbacks->active()) return;
  tInCallback = true;
  try {
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      if (callbacks->driver != nullptr)
        callbacks->driver(cbid, static_cast<const CUpti_CallbackData*>(data));
    } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      if (callbacks->resource != nullptr)
        callbacks->resource(cbid, static_cast<const CUpti_ResourceData*>(data));
    }
  } catch (const std::exception& e) {
    callbacks->report(std::string("callback: ") + e.what());
  } catch (...) {
    callbacks->report("callback: unknown exception");
  }
  tInCallback = false;
}

/// CUPTI's activity-buffer request, answered with gActivityBufferBytes of aligned memory (no
/// record limit); the buffer is freed after its completion.
void CUPTIAPI onBufferRequested(std::uint8_t** buffer, std::size_t* size,
                                std::size_t* maxNumRecords) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, gActivityBufferBytes));
  *size = *buffer != nullptr ? gActivityBufferBytes : 0;
  *maxNumRecords = 0;
}

void CUPTIAPI onBufferCompleted(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                                std::size_t validSize) {
  if (gCompleted != nullptr && buffer != nullptr && validSize > 0) gCompleted(buffer, validSize);
  std::free(buffer);
}

void appendKernels(std::uint8_t* buffer, std::size_t validSize) {
  appendKernelsJsonl(buffer, validSize, *gKernels.mutex, *gKernels.seqOfCorrelation,
                     gKernels.seqOfGraphNode, gKernels.dir, gKernels.forget);
}

}  // namespace

int initializeOnce(const Library& library, int (*initialize)()) {
  static std::once_flag once;
  static int result = 1;
  std::call_once(once, [&] {
    try {
      result = initialize();
    } catch (...) {
      std::fprintf(stderr, "%s: initialisation failed; %s\n", library.prefix, library.idle);
    }
  });
  return result;
}

std::optional<std::filesystem::path> openOutputDir(const Library& library, const char* variable,
                                                   std::initializer_list<const char*> truncated) {
  const char* dirText = std::getenv(variable);
  if (dirText == nullptr || *dirText == '\0') {
    std::fprintf(stderr, "%s: %s is not set; %s\n", library.prefix, variable, library.idle);
    return std::nullopt;
  }
  std::filesystem::path dir = dirText;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "%s: cannot create %s: %s; %s\n", library.prefix, dirText,
                 ec.message().c_str(), library.idle);
    return std::nullopt;
  }
  for (const char* name : truncated) std::ofstream(dir / name, std::ios::trunc);
  return dir;
}

bool loadVendor(const Library& library, Report report) {
  if (const std::string problem = vendor().load(); !problem.empty()) {
    report(problem + "; " + library.idle);
    return false;
  }
  return true;
}

std::optional<CUpti_SubscriberHandle> subscribe(const Library& library, const Callbacks* callbacks,
                                                bool& ok) {
  const VendorApi& api = vendor();
  CUpti_SubscriberHandle subscriber = nullptr;
  if (!succeeded(api.cuptiSubscribe(&subscriber, dispatch, const_cast<Callbacks*>(callbacks)),
                 "cuptiSubscribe", callbacks->report)) {
    callbacks->report(std::string(library.idle) +
                      " (another CUPTI subscriber, e.g. a profiler, may be attached)");
    return std::nullopt;
  }
  ok = succeeded(api.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE),
                 "cuptiEnableDomain (resource)", callbacks->report);
  return subscriber;
}

bool enableDriverCallback(CUpti_SubscriberHandle subscriber, CUpti_CallbackId cbid,
                          const char* what, Report report) {
  return succeeded(vendor().cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid),
                   (std::string("cuptiEnableCallback (") + what + ")").c_str(), report);
}

bool enableLaunchCallbacks(CUpti_SubscriberHandle subscriber, Report report) {
  bool ok = true;
  for (const CUpti_CallbackId cbid : kLaunchCallbacks)
    ok = enableDriverCallback(subscriber, cbid, "launch", report) && ok;
  return ok;
}

void abandon(const Library& library, CUpti_SubscriberHandle subscriber, Report report) {
  vendor().cuptiUnsubscribe(subscriber);
  report(library.idle);
}

bool activityApiPresent() {
  const VendorApi& api = vendor();
  return api.cuptiActivityRegisterCallbacks != nullptr && api.cuptiActivityEnable != nullptr &&
         api.cuptiActivityGetNextRecord != nullptr;
}

CUptiResult registerActivityBuffers(std::size_t bytes, CompletedBuffer completed) {
  gActivityBufferBytes = bytes;
  gCompleted = completed;
  return vendor().cuptiActivityRegisterCallbacks(onBufferRequested, onBufferCompleted);
}

void flushActivity() {
  if (vendor().cuptiActivityFlushAll != nullptr)
    vendor().cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

bool recordKernels(KernelsJsonl sink, Report report) {
  if (!activityApiPresent()) {
    report("CUPTI activity API unavailable: no kernels.jsonl");
    return false;
  }
  gKernels = std::move(sink);
  return succeeded(registerActivityBuffers(4u << 20, appendKernels),
                   "cuptiActivityRegisterCallbacks", report) &&
         succeeded(vendor().cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                   "cuptiActivityEnable (kernels)", report);
}

}  // namespace argus::inject
