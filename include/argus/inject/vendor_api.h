// The one place where Argus's injection libraries (libargus_inject.so, libargus_cupti_sass.so,
// libargus_system_trace.so; the skeleton is argus/inject/skeleton.h) reach the CUDA driver and
// CUPTI. Both are loaded
// lazily with dlopen/dlsym (docs/architecture.md, "How the code reads": vendor libraries load
// through one layer), so the library has no link-time dependency on either: the driver is already
// in the process when it calls InitializeInjection, and CUPTI is found at run time
// (ARGUS_CUPTI_LIB, the loader's search path, then the toolkit's usual folders).
//
// Driver entry points are looked up by their versioned names (cuMemAlloc -> cuMemAlloc_v2, ...)
// exactly as cuda.h maps them, so each pointer has the prototype the header declares.
#pragma once

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <string>

namespace argus::inject {

#define ARGUS_DRIVER_FUNCTIONS(X) \
  X(cuGetErrorString, true)       \
  X(cuCtxGetCurrent, true)        \
  X(cuCtxSynchronize, true)       \
  X(cuCtxGetDevice, false)        \
  X(cuCtxSetCurrent, false)       \
  X(cuDeviceGetAttribute, false)  \
  X(cuMemAlloc, true)             \
  X(cuMemFree, true)              \
  X(cuMemsetD8, true)             \
  X(cuMemcpyHtoD, true)           \
  X(cuMemcpyDtoH, true)           \
  X(cuModuleGetGlobal, true)      \
  X(cuModuleLoadData, false)      \
  X(cuModuleGetFunction, false)   \
  X(cuModuleUnload, false)        \
  X(cuLaunchKernel, false)        \
  X(cuFuncGetModule, false)       \
  X(cuFuncGetName, false)         \
  X(cuKernelGetFunction, false)   \
  X(cuKernelGetLibrary, false)    \
  X(cuKernelGetName, false)       \
  X(cuLibraryGetGlobal, false)    \
  X(cuStreamIsCapturing, false)   \
  X(cuGraphGetNodes, false)       \
  X(cuGraphNodeGetType, false)    \
  X(cuGraphKernelNodeGetParams, false)

#define ARGUS_CUPTI_FUNCTIONS(X)                     \
  X(cuptiGetResultString, true)                      \
  X(cuptiSubscribe, true)                            \
  X(cuptiUnsubscribe, true)                          \
  X(cuptiEnableCallback, true)                       \
  X(cuptiEnableDomain, true)                         \
  X(cuptiActivityRegisterCallbacks, false)           \
  X(cuptiActivityEnable, false)                      \
  X(cuptiActivityGetNextRecord, false)               \
  X(cuptiActivityFlushAll, false)                    \
  X(cuptiGetTimestamp, false)                        \
  X(cuptiGetCallbackName, false)                     \
  X(cuptiGetDeviceId, false)                         \
  X(cuptiGetCubinCrc, false)                         \
  X(cuptiProfilerInitialize, false)                  \
  X(cuptiDeviceGetChipName, false)                   \
  X(cuptiSassMetricsGetNumOfMetrics, false)          \
  X(cuptiSassMetricsGetMetrics, false)               \
  X(cuptiSassMetricsGetProperties, false)            \
  X(cuptiSassMetricsSetConfig, false)                \
  X(cuptiSassMetricsUnsetConfig, false)              \
  X(cuptiSassMetricsEnable, false)                   \
  X(cuptiSassMetricsDisable, false)                  \
  X(cuptiSassMetricsGetDataProperties, false)        \
  X(cuptiSassMetricsFlushData, false)                \
  X(cuptiPCSamplingEnable, false)                    \
  X(cuptiPCSamplingDisable, false)                   \
  X(cuptiPCSamplingSetConfigurationAttribute, false) \
  X(cuptiPCSamplingGetNumStallReasons, false)        \
  X(cuptiPCSamplingGetStallReasons, false)           \
  X(cuptiPCSamplingGetData, false)

/// Function pointers into libcuda and libcupti. A pointer whose entry is marked optional
/// (`false` above) may be null when the installed driver or CUPTI predates it. The CUPTI
/// profiling entries (cubin CRC, SASS metrics, PC sampling) are optional here because only
/// libargus_cupti_sass.so needs them; it checks them itself.
struct VendorApi {
#define ARGUS_DECLARE_POINTER(name, required) decltype(&::name) name = nullptr;
  ARGUS_DRIVER_FUNCTIONS(ARGUS_DECLARE_POINTER)
  ARGUS_CUPTI_FUNCTIONS(ARGUS_DECLARE_POINTER)
#undef ARGUS_DECLARE_POINTER

  /// The CUPTI library that was opened (for messages).
  std::string cuptiPath;

  /// "" when every required entry point was found, else what is missing.
  [[nodiscard]] std::string load();

  /// Readable text for a driver or CUPTI status.
  [[nodiscard]] std::string describe(CUresult status) const;
  [[nodiscard]] std::string describe(CUptiResult status) const;
};

/// The process-wide table, loaded by InitializeInjection.
VendorApi& vendor();

/// Whether a driver or CUPTI call succeeded; if not, `report`s "<what> failed: <description>"
/// (each injection library's check()).
template <class Status, class Report>
bool succeeded(Status status, const char* what, Report&& report) {
  if (status == static_cast<Status>(0)) return true;  // CUDA_SUCCESS, CUPTI_SUCCESS
  report(std::string(what) + " failed: " + vendor().describe(status));
  return false;
}

}  // namespace argus::inject
