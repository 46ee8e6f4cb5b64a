#include "argus/inject/vendor_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace argus::inject {

namespace {

// Two-level stringification so that cuda.h's version macros expand: cuMemAlloc -> "cuMemAlloc_v2".
#define ARGUS_STRINGIFY2(x) #x
#define ARGUS_STRINGIFY(x) ARGUS_STRINGIFY2(x)

#ifndef ARGUS_CUPTI_DEFAULT_PATH
#define ARGUS_CUPTI_DEFAULT_PATH ""
#endif

void* openFirst(const std::vector<std::string>& candidates, std::string& opened,
                std::string& tried) {
  for (const auto& path : candidates) {
    if (path.empty()) continue;
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      opened = path;
      return handle;
    }
    const char* why = dlerror();
    tried += "\n  " + path + ": " + (why ? why : "not found");
  }
  return nullptr;
}

template <typename Pointer>
void bind(void* handle, const char* symbol, bool required, Pointer& out, std::string& missing) {
  out = reinterpret_cast<Pointer>(dlsym(handle, symbol));
  if (out == nullptr && required) missing += std::string(missing.empty() ? "" : ", ") + symbol;
}

}  // namespace

std::string VendorApi::load() {
  std::string tried;
  std::string ignored;
  // The driver has loaded libcuda before it loads us; dlopen only takes another reference.
  void* cuda = openFirst({"libcuda.so.1", "libcuda.so"}, ignored, tried);
  if (cuda == nullptr) return "cannot open libcuda:" + tried;

  std::vector<std::string> cuptiCandidates;
  if (const char* env = std::getenv("ARGUS_CUPTI_LIB")) cuptiCandidates.emplace_back(env);
  cuptiCandidates.insert(
      cuptiCandidates.end(),
      {"libcupti.so", "libcupti.so.13", "libcupti.so.12", ARGUS_CUPTI_DEFAULT_PATH,
       "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", "/usr/local/cuda/lib64/libcupti.so",
       "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so"});
  if (const char* home = std::getenv("CUDA_HOME")) {
    cuptiCandidates.push_back(std::string(home) + "/extras/CUPTI/lib64/libcupti.so");
    cuptiCandidates.push_back(std::string(home) + "/lib64/libcupti.so");
  }
  void* cupti = openFirst(cuptiCandidates, cuptiPath, tried);
  if (cupti == nullptr) return "cannot open libcupti (set ARGUS_CUPTI_LIB):" + tried;

  std::string missing;
#define ARGUS_BIND_DRIVER(name, required) \
  bind(cuda, ARGUS_STRINGIFY(name), required, this->name, missing);
#define ARGUS_BIND_CUPTI(name, required) \
  bind(cupti, ARGUS_STRINGIFY(name), required, this->name, missing);
  ARGUS_DRIVER_FUNCTIONS(ARGUS_BIND_DRIVER)
  ARGUS_CUPTI_FUNCTIONS(ARGUS_BIND_CUPTI)
#undef ARGUS_BIND_DRIVER
#undef ARGUS_BIND_CUPTI
  return missing.empty() ? std::string() : "missing entry points: " + missing;
}

std::string VendorApi::describe(CUresult status) const {
  const char* text = nullptr;
  if (cuGetErrorString != nullptr) cuGetErrorString(status, &text);
  return (text ? std::string(text) : std::string("CUresult")) + " (" +
         std::to_string(static_cast<int>(status)) + ")";
}

std::string VendorApi::describe(CUptiResult status) const {
  const char* text = nullptr;
  if (cuptiGetResultString != nullptr) cuptiGetResultString(status, &text);
  return (text ? std::string(text) : std::string("CUptiResult")) + " (" +
         std::to_string(static_cast<int>(status)) + ")";
}

VendorApi& vendor() {
  static VendorApi api;
  return api;
}

}  // namespace argus::inject
