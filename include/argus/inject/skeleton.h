// The skeleton every Argus CUPTI injection library is built on (libargus_inject.so of
// backends/region_trace, libargus_cupti_sass.so of backends/cupti_sass, libargus_system_trace.so of
// backends/system_trace): what the CUDA driver's InitializeInjection does once, the output folder,
// the dlopen vendor layer (vendor_api.h), the CUPTI callback subscription and its dispatch, and
// CUPTI's activity buffers (requested, handed to the library, freed), with kernels.jsonl from
// kernel activity (kernel_activity.h). A library keeps only what it collects.
//
// The skeleton is a static, position-independent library with hidden symbols, linked into each
// injection library: every library has its own copy of the state below, and exports only its
// InitializeInjection.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "argus/inject/kernel_activity.h"
#include "argus/inject/vendor_api.h"

namespace argus::inject {

/// Who an injection library is, in its messages.
struct Library {
  const char* prefix;  ///< Its messages start "<prefix>: " (stderr, errors.txt).
  const char* idle;    ///< What it does when it cannot start: "tracing nothing", ...
};

/// Where a library's problems go ("<prefix>: <message>" on stderr, and errors.txt where it has a
/// folder).
using Report = void (*)(const std::string& message);

/// The body of a library's InitializeInjection, which the CUDA driver calls during cuInit:
/// `initialize` runs once (later calls return its result), and 1 comes back whatever happens: a
/// problem disables the library and is reported, it never fails the program's CUDA
/// initialisation. An exception says "<prefix>: initialisation failed; <idle>" on stderr.
int initializeOnce(const Library& library, int (*initialize)());

/// The library's output folder, named by the environment variable `variable`: created, and the
/// files `truncated` emptied (one collecting process per folder). nullopt, said on stderr, when
/// the variable is unset or empty or the folder cannot be created.
std::optional<std::filesystem::path> openOutputDir(const Library& library, const char* variable,
                                                   std::initializer_list<const char*> truncated);

/// vendor().load(); false, reported as "<problem>; <idle>", when an entry point or library is
/// missing.
bool loadVendor(const Library& library, Report report);

/// Set on a thread while a callback runs and while the library makes driver or CUPTI calls of its
/// own: the callbacks CUPTI makes inside them then do nothing.
inline thread_local bool tInCallback = false;

/// A library's CUPTI callbacks. The dispatcher calls them only while `active()` says the library
/// is collecting and not from inside another callback (tInCallback); an exception one throws is
/// reported as "callback: <what>".
struct Callbacks {
  bool (*active)() = nullptr;
  void (*driver)(CUpti_CallbackId cbid, const CUpti_CallbackData* data) = nullptr;
  void (*resource)(CUpti_CallbackId cbid, const CUpti_ResourceData* data) = nullptr;
  Report report = nullptr;
};

/// Subscribes the dispatcher of `callbacks` (which must live as long as the process) to CUPTI,
/// then enables the resource domain. nullopt when CUPTI refused the subscription (reported, with
/// "<idle> (another CUPTI subscriber, e.g. a profiler, may be attached)"); `ok` is false when the
/// resource domain could not be enabled (reported).
std::optional<CUpti_SubscriberHandle> subscribe(const Library& library, const Callbacks* callbacks,
                                                bool& ok);

/// cuptiEnableCallback of the driver API's `cbid`; false, reported as "cuptiEnableCallback
/// (<what>) failed: ...", when CUPTI refused.
bool enableDriverCallback(CUpti_SubscriberHandle subscriber, CUpti_CallbackId cbid,
                          const char* what, Report report);

/// Every kernel-launch entry point of the driver API (driver_calls.h's kLaunchCallbacks); false
/// when one could not be enabled (reported).
bool enableLaunchCallbacks(CUpti_SubscriberHandle subscriber, Report report);

/// Undoes a subscription whose set-up failed: unsubscribes and reports "<idle>".
void abandon(const Library& library, CUpti_SubscriberHandle subscriber, Report report);

/// Whether this CUPTI has the activity API: register, enable and read records.
bool activityApiPresent();

/// A completed activity buffer with records, handed to the library (then freed by the skeleton).
using CompletedBuffer = void (*)(std::uint8_t* buffer, std::size_t validSize);

/// Registers the skeleton's activity-buffer callbacks: CUPTI's requests get `bytes` of aligned
/// memory (no record limit), and every completed buffer that holds records goes to `completed`.
CUptiResult registerActivityBuffers(std::size_t bytes, CompletedBuffer completed);

/// Calls `record` for every record of a completed activity buffer.
template <class Record>
void forEachRecord(std::uint8_t* buffer, std::size_t validSize, Record&& record) {
  CUpti_Activity* next = nullptr;
  while (vendor().cuptiActivityGetNextRecord(buffer, validSize, &next) == CUPTI_SUCCESS)
    record(next);
}

/// cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) where this CUPTI has it.
void flushActivity();

/// Where kernels.jsonl goes: the folder, the map of correlation ids to launch numbers and the
/// mutex that guards it and the file (and, where graph launches are numbered per kernel node,
/// the map of their nodes); with `forget`, an entry is erased once its kernel is written (one
/// kernel per launch).
struct KernelsJsonl {
  std::recursive_mutex* mutex = nullptr;
  std::map<std::uint32_t, std::uint64_t>* seqOfCorrelation = nullptr;
  GraphNodeSeqs* seqOfGraphNode = nullptr;
  std::filesystem::path dir;
  bool forget = false;
};

/// CUPTI's kernel activity into `sink`'s kernels.jsonl (4 MiB buffers): the buffers registered
/// and CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL enabled. False when it could not be: reported as
/// "CUPTI activity API unavailable: no kernels.jsonl" when the API is missing, else as the call
/// that failed.
bool recordKernels(KernelsJsonl sink, Report report);

}  // namespace argus::inject
