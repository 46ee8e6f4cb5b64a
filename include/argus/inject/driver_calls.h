// What the injection libraries (libargus_inject.so, libargus_cupti_sass.so) read from the driver: a
// kernel launch's arguments in the driver-API callback of each launch entry point, and a launched
// function's name.
#pragma once

#include <cupti.h>  // the driver-API callback ids and their parameter structs

#include <cstdint>
#include <string>

#include "argus/inject/vendor_api.h"

namespace argus::inject {

/// A launch's function, shape and stream, from the entry point's parameters.
struct LaunchArgs {
  const char* api = "";
  CUfunction f = nullptr;
  std::uint32_t grid[3] = {0, 0, 0};
  std::uint32_t block[3] = {0, 0, 0};
  CUstream stream = nullptr;
};

/// Fills `out` from the parameters of the launch entry point `cbid`; false for other calls (or
/// a cuLaunchKernelEx without its config).
inline bool launchArgs(CUpti_CallbackId cbid, const void* params, LaunchArgs& out) {
  auto classic = [&](const auto* p, const char* api) {
    out.api = api;
    out.f = p->f;
    out.grid[0] = p->gridDimX, out.grid[1] = p->gridDimY, out.grid[2] = p->gridDimZ;
    out.block[0] = p->blockDimX, out.block[1] = p->blockDimY, out.block[2] = p->blockDimZ;
    out.stream = p->hStream;
    return true;
  };
  auto extended = [&](const auto* p, const char* api) {
    out.api = api;
    out.f = p->f;
    const CUlaunchConfig* c = p->config;
    if (c == nullptr) return false;
    out.grid[0] = c->gridDimX, out.grid[1] = c->gridDimY, out.grid[2] = c->gridDimZ;
    out.block[0] = c->blockDimX, out.block[1] = c->blockDimY, out.block[2] = c->blockDimZ;
    out.stream = c->hStream;
    return true;
  };
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      return classic(static_cast<const cuLaunchKernel_params*>(params), "cuLaunchKernel");
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      return classic(static_cast<const cuLaunchKernel_ptsz_params*>(params), "cuLaunchKernel_ptsz");
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
      return classic(static_cast<const cuLaunchCooperativeKernel_params*>(params),
                     "cuLaunchCooperativeKernel");
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return classic(static_cast<const cuLaunchCooperativeKernel_ptsz_params*>(params),
                     "cuLaunchCooperativeKernel_ptsz");
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      return extended(static_cast<const cuLaunchKernelEx_params*>(params), "cuLaunchKernelEx");
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      return extended(static_cast<const cuLaunchKernelEx_ptsz_params*>(params),
                      "cuLaunchKernelEx_ptsz");
    default:
      return false;
  }
}

/// The launch entry points launchArgs reads.
inline constexpr CUpti_CallbackId kLaunchCallbacks[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
};

/// The executable graph and stream of a cuGraphLaunch (or its per-thread-stream twin); false for
/// other calls.
inline bool graphLaunchArgs(CUpti_CallbackId cbid, const void* params, CUgraphExec& exec,
                            CUstream& stream) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch: {
      const auto* p = static_cast<const cuGraphLaunch_params*>(params);
      exec = p->hGraph, stream = p->hStream;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
      const auto* p = static_cast<const cuGraphLaunch_ptsz_params*>(params);
      exec = p->hGraphExec, stream = p->hStream;
      return true;
    }
    default:
      return false;
  }
}

/// The graph launch entry points graphLaunchArgs reads.
inline constexpr CUpti_CallbackId kGraphLaunchCallbacks[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

/// The name of a launched function (a CUfunction, or the context-less CUkernel cudart 12+
/// launches); "" when the driver tells none.
inline std::string functionName(CUfunction f) {
  const VendorApi& api = vendor();
  const char* name = nullptr;
  if (api.cuFuncGetName != nullptr && api.cuFuncGetName(&name, f) == CUDA_SUCCESS && name) {
    return name;
  }
  if (api.cuKernelGetName != nullptr &&
      api.cuKernelGetName(&name, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS && name) {
    return name;
  }
  return "";
}

}  // namespace argus::inject
