// libargus_system_trace.so: a CUDA injection library (CUDA_INJECTION64_PATH) that records CUPTI
// activity — kernels, memcpy, memset, the runtime/driver calls that launched them, and NVTX
// ranges — into one JSON-lines file (format: argus/evidence/system_trace.h).
//
// Environment:
//   ARGUS_SYSTEM_TRACE_OUT     the output file (required; replaced at start). When several
//                              processes of one run trace (one per GPU), the first takes it and
//                              the others write <file>.<pid> (claim_output.h)
//   ARGUS_SYSTEM_TRACE_LABELS  k=v,k=v words copied into the header (run parameters)
//   NVTX_INJECTION64_PATH      set to the CUPTI library if unset, so NVTX calls made after CUDA
//                              initialisation reach CUPTI (ranges pushed before that are lost)
//
// GPU records and markers are appended as CUPTI hands buffers back. API records are many and
// mostly uninteresting (event records, synchronisations), so they are held and only those whose
// correlation id a GPU operation carries are written, at exit after the final flush.
#include <cupti_activity.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <unistd.h>

#include <argus/inject/output.h>
#include <argus/inject/skeleton.h>

#include "claim_output.h"

namespace argus::inject {
namespace {

struct State {
  std::string file;
  std::mutex mutex;
  std::unordered_set<uint32_t> gpuCorrelations;
  std::unordered_map<uint32_t, std::string> apiLines;  ///< correlation -> earliest API record
  std::unordered_map<uint32_t, uint64_t> apiStart;
  uint64_t dropped = 0;
};

constexpr Library kLibrary{"argus-system-trace", "tracing nothing"};

State* gState = nullptr;  // Leaked on purpose: CUPTI may call back during process teardown.

std::string jsonEscape(const char* text) {
  std::string out = "\"";
  for (const char* p = text ? text : ""; *p != '\0'; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

const char* copyKindName(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "htod";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "dtoh";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "htoa";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "atoh";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "atoa";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "atod";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "dtoa";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "dtod";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "htoh";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "peer";
    default:
      return "unknown";
  }
}

std::string u(uint64_t v) {
  return std::to_string(v);
}

void append(const std::string& lines) {
  if (lines.empty()) return;
  std::ofstream(gState->file, std::ios::app) << lines;
}

constexpr size_t kBufferBytes = 8u << 20;

/// One GPU-side or marker line for `record`, or "" (API records are held in the state).
std::string lineOf(const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      gState->gpuCorrelations.insert(k->correlationId);
      return "{\"type\":\"kernel\",\"name\":" + jsonEscape(k->name) +
             ",\"device\":" + u(k->deviceId) + ",\"context\":" + u(k->contextId) +
             ",\"stream\":" + u(k->streamId) + ",\"correlation\":" + u(k->correlationId) +
             ",\"start_ns\":" + u(k->start) + ",\"end_ns\":" + u(k->end) + ",\"grid\":[" +
             std::to_string(k->gridX) + "," + std::to_string(k->gridY) + "," +
             std::to_string(k->gridZ) + "],\"block\":[" + std::to_string(k->blockX) + "," +
             std::to_string(k->blockY) + "," + std::to_string(k->blockZ) +
             "],\"registers\":" + u(k->registersPerThread) +
             ",\"static_shared\":" + u(k->staticSharedMemory) +
             ",\"dynamic_shared\":" + u(k->dynamicSharedMemory) + "}\n";
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      gState->gpuCorrelations.insert(m->correlationId);
      return std::string("{\"type\":\"memcpy\",\"kind\":\"") + copyKindName(m->copyKind) +
             "\",\"bytes\":" + u(m->bytes) + ",\"device\":" + u(m->deviceId) +
             ",\"stream\":" + u(m->streamId) + ",\"correlation\":" + u(m->correlationId) +
             ",\"start_ns\":" + u(m->start) + ",\"end_ns\":" + u(m->end) + "}\n";
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      gState->gpuCorrelations.insert(m->correlationId);
      return "{\"type\":\"memset\",\"bytes\":" + u(m->bytes) + ",\"value\":" + u(m->value) +
             ",\"device\":" + u(m->deviceId) + ",\"stream\":" + u(m->streamId) +
             ",\"correlation\":" + u(m->correlationId) + ",\"start_ns\":" + u(m->start) +
             ",\"end_ns\":" + u(m->end) + "}\n";
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      auto it = gState->apiStart.find(a->correlationId);
      if (it != gState->apiStart.end() && it->second <= a->start) return "";
      gState->apiStart[a->correlationId] = a->start;
      gState->apiLines[a->correlationId] =
          std::string("{\"type\":\"api\",\"domain\":\"") +
          (record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? "runtime" : "driver") +
          "\",\"cbid\":" + u(a->cbid) + ",\"correlation\":" + u(a->correlationId) +
          ",\"thread\":" + u(a->threadId) + ",\"start_ns\":" + u(a->start) +
          ",\"end_ns\":" + u(a->end) + "}\n";
      return "";
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(record);
      const char* flag = (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0 ? "start"
                         : (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) != 0 ? "end"
                                                                            : "instant";
      std::string line = std::string("{\"type\":\"marker\",\"flag\":\"") + flag +
                         "\",\"id\":" + u(m->id) + ",\"thread\":" + u(m->objectId.pt.threadId) +
                         ",\"timestamp_ns\":" + u(m->timestamp);
      if (m->name != nullptr) line += ",\"name\":" + jsonEscape(m->name);
      if (m->domain != nullptr) line += ",\"domain\":" + jsonEscape(m->domain);
      return line + "}\n";
    }
    default:
      return "";
  }
}

/// A completed activity buffer's lines, appended to the file.
void onRecords(uint8_t* buffer, size_t validSize) {
  if (gState == nullptr) return;
  std::lock_guard lock(gState->mutex);
  std::string lines;
  forEachRecord(buffer, validSize, [&](const CUpti_Activity* record) { lines += lineOf(record); });
  append(lines);
}

void finish() {
  if (gState == nullptr) return;
  flushActivity();
  std::lock_guard lock(gState->mutex);
  std::string lines;
  for (const auto& [correlation, line] : gState->apiLines)
    if (gState->gpuCorrelations.contains(correlation)) lines += line;
  gState->apiLines.clear();
  append(lines);
}

/// A problem, on stderr only (the library has no folder of its own).
void reportError(const std::string& message) {
  reportTo(kLibrary.prefix, {}, message);
}

std::string labelsJson(const char* text) {
  std::string out = "{";
  std::string s = text != nullptr ? text : "";
  size_t at = 0;
  bool first = true;
  while (at < s.size()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    const std::string word = s.substr(at, end - at);
    if (size_t eq = word.find('='); eq != std::string::npos && eq > 0) {
      out += (first ? "" : ",") + jsonEscape(word.substr(0, eq).c_str()) + ":" +
             jsonEscape(word.substr(eq + 1).c_str());
      first = false;
    }
    at = end + 1;
  }
  return out + "}";
}

int initialize() {
  const char* out = std::getenv("ARGUS_SYSTEM_TRACE_OUT");
  if (out == nullptr || *out == '\0') {
    reportError("ARGUS_SYSTEM_TRACE_OUT is not set; tracing nothing");
    return 1;
  }
  VendorApi& api = vendor();
  if (!loadVendor(kLibrary, reportError)) return 1;
  if (!activityApiPresent()) {
    reportError("this CUPTI (" + api.cuptiPath + ") lacks the activity API; tracing nothing");
    return 1;
  }
  auto* state = new State;
  state->file = claimTraceOutput(out);
  {
    std::ofstream header(state->file, std::ios::trunc);
    if (!header) {
      reportError("cannot write " + state->file + "; tracing nothing");
      delete state;
      return 1;
    }
    header << "{\"type\":\"header\",\"format\":\"argus.system_trace\",\"version\":1,\"pid\":"
           << ::getpid() << ",\"cupti\":" << jsonEscape(api.cuptiPath.c_str())
           << ",\"labels\":" << labelsJson(std::getenv("ARGUS_SYSTEM_TRACE_LABELS")) << "}\n";
  }
  gState = state;
  // NVTX looks for its injection library at its first call; CUPTI implements that interface.
  if (std::getenv("NVTX_INJECTION64_PATH") == nullptr && !api.cuptiPath.empty())
    ::setenv("NVTX_INJECTION64_PATH", api.cuptiPath.c_str(), 0);

  if (CUptiResult r = registerActivityBuffers(kBufferBytes, onRecords); r != CUPTI_SUCCESS) {
    reportError("cuptiActivityRegisterCallbacks failed: " + api.describe(r) + "; tracing nothing");
    gState = nullptr;
    return 1;
  }
  const std::pair<CUpti_ActivityKind, const char*> kinds[] = {
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels"},
      {CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy"},
      {CUPTI_ACTIVITY_KIND_MEMSET, "memset"},
      {CUPTI_ACTIVITY_KIND_RUNTIME, "runtime API"},
      {CUPTI_ACTIVITY_KIND_DRIVER, "driver API"},
      {CUPTI_ACTIVITY_KIND_MARKER, "NVTX markers"}};
  for (const auto& [kind, what] : kinds)
    if (CUptiResult r = api.cuptiActivityEnable(kind); r != CUPTI_SUCCESS)
      reportError(std::string("cuptiActivityEnable (") + what + ") failed: " + api.describe(r) +
                  "; those records are missing");
  std::atexit(finish);
  return 1;
}

}  // namespace
}  // namespace argus::inject

/// Called by the CUDA driver during cuInit. Always returns 1: a problem disables tracing and is
/// reported on stderr; it never fails the program's CUDA initialisation.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  return argus::inject::initializeOnce(argus::inject::kLibrary, argus::inject::initialize);
}
