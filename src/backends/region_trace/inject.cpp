// libargus_inject.so: the CUDA injection library that runs Argus's traced variants.
//
// The CUDA driver loads it when CUDA_INJECTION64_PATH names it and calls InitializeInjection()
// during cuInit. It subscribes to CUPTI callbacks for every kernel-launch entry point of the
// driver API (the runtime launches through these too). For each launch:
//   API enter: find the module-scope `__argus_trace` variable of the launched function's module
//     (cached per context and function). When there is one, size a device buffer from the grid
//     and block (argus/trace/format.h), reuse or grow the context's buffer, zero it, write the
//     header, store the buffer's address into the variable and synchronize the context, so the
//     set-up is complete whichever stream the kernel runs on.
//   API exit: synchronize the context, read the header and records back, reset the variable to
//     0 (a later launch that bypasses us records nothing instead of writing a stale buffer), and
//     write launch-<seq>.bin plus a line in launches.jsonl (trace_file.h).
// Launches of functions without the variable only get their launches.jsonl line. Kernel GPU
// start/end times come from CUPTI's kernel activity records into kernels.jsonl: they are the
// kernel durations to compare across variants, because the set-up above sits between a host
// program's own timing events and the kernel.
//
// Environment:
//   ARGUS_TRACE_DIR           output folder (created); unset: say so once, trace nothing.
//   ARGUS_TRACE_CAPACITY      records per warp slot (default 256).
//   ARGUS_TRACE_MAX_BYTES     largest buffer per launch (default 4 GiB, and at most 4 GiB for
//                             compact-layout kernels, which address records within one 4 GiB
//                             window); larger launches are not traced (noted in launches.jsonl).
//   ARGUS_TRACE_FULL=1        write the whole buffer instead of the compact form (not for a
//                             module whose __argus_trace_layout says 16: its 16-byte device records
//                             are expanded to full ones on read-back, expandCompactRecords, and
//                             written in the compact form).
//   ARGUS_TRACE_MAX_FILES     write launch files for the first N traced launches only; later
//                             ones are still traced and counted in launches.jsonl (benchmarks).
//   ARGUS_TRACE_KERNEL_TIMES=0  no CUPTI kernel activity (kernels.jsonl).
//   ARGUS_TRACE_VERBOSE=1     one stderr line per launch.
//   ARGUS_TRACE_L2_FLUSH=1    before each traced launch, write a buffer twice the L2's size, so
//                             the launch starts from the same cache state in every run (flushL2).
//   ARGUS_CUPTI_LIB           path of libcupti.so when the loader cannot find it.
//   ARGUS_GPU_TURN            a lock file for the device (gpu_turn.h): set-up and teardown hold
//                             it shared, the process's GPU work (from the first launch, copy or
//                             memset to the exit handler) exclusively, so processes sharing the
//                             device never run beside another's measured work. The wait for the
//                             exclusive hold is written to turn.json, and every hold's taking
//                             and giving up to turn_timeline.jsonl ({event, cupti_ns, epoch_ns}:
//                             set_up_asked, set_up_held, turn_asked, turn_taken,
//                             traced_launch_returned, trace_written, turn_idle_released,
//                             exit_handler, turn_released), on CUPTI's clock and the system
//                             clock both, so that a process's phases can be set beside other
//                             processes' kernels.
//   ARGUS_GPU_TURN_TEARDOWN=none  the context's teardown holds nothing (default: shared). For
//                             measuring whether a teardown beside another's work changes it
//                             (experiments/probe-isolation/turn-experiment.sh).
//   ARGUS_GPU_TURN_IDLE_MS=N  once a traced launch is written, give the turn up while the program
//                             makes no driver call for N ms (event turn_idle_released) and take
//                             it again at its next driver call (default 0: held to the exit
//                             handler). Every driver call then gets a callback. Not with managed
//                             memory.
//   ARGUS_GPU_TURN_IDLE_FLUSH=0  no CUPTI activity flush before an idle release (default:
//                             flushed, so CUPTI fetches its kernel records under the turn).
//   ARGUS_GPU_TURN_QUIET_MS=N  after taking the turn, wait until N ms (at most 10000) have passed
//                             since another process sharing the turn file last ended its set-up
//                             or gave the turn up (at its exit, or while idle) (event turn_quiet;
//                             default 0; gpu_turn.h says why it was once needed).
//   ARGUS_GPU_TURN_QUIET_SETUP_MS=N, ARGUS_GPU_TURN_QUIET_EXIT_MS=N  the same for set-up ends
//                             only and for exits only (default: ARGUS_GPU_TURN_QUIET_MS).
//   ARGUS_GPU_TURN_SETTLE_MS=N  wait N ms after taking the turn before the first GPU work
//                             (event turn_settled; default 0).
//   ARGUS_GPU_TURN_L2=MODE     then, before the program's first GPU work (not at a re-take after
//                             an idle release; event turn_l2_ready, or turn_l2_failed with the
//                             reason in errors.txt): `empty` (default) read a buffer of twice the
//                             L2's size with a kernel of Argus's own (argus_l2_read, left out of
//                             kernels.jsonl) and free it, which leaves the L2 empty whoever ran
//                             or set up before (prepareL2; gpu_turn.h says why); `read` read it
//                             and keep it, `write` write it and keep it (experiments); `none`
//                             nothing. Not while a graph is being captured: the turn is then
//                             taken at a later call.
//
// Never fatal: every failure is written to errors.txt and stderr ("argus-inject: ...") and the
// program's own launch goes ahead untouched. Launches made while a stream is capturing a graph
// are not traced; the graph's launches are: its kernel nodes are read when it is instantiated
// (CUPTI's GRAPHEXEC_CREATED, with the shapes they have then), and at each cuGraphLaunch every
// node gets its launches.jsonl line (api "cuGraphLaunch", in the order cuGraphGetNodes lists them)
// and each instrumented kernel node (listed in its module's __argus_trace_kernels, format.h) its
// own buffer, set up before the launch and read back after it. One module's variable serves one
// launch at a time, so a graph with two instrumented nodes of one module traces neither (noted).
// Output files assume one traced process per folder (InitializeInjection truncates launches.jsonl,
// kernels.jsonl and errors.txt).
#include <argus/inject/driver_calls.h>
#include <argus/inject/skeleton.h>
#include <argus/trace/format.h>

#include "gpu_turn.h"
#include "l2_read_kernel.h"
#include "trace_file.h"

#include <cupti_activity.h>
#include <cupti_callbacks.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace argus::inject {
namespace {

struct SymbolInfo {
  CUdeviceptr address = 0;  ///< 0: the function's module has no trace variable.
  std::size_t bytes = 0;    ///< Its size: 16 (TraceSymbol) or 8 (address only).
  std::string module;       ///< Handle, hex.
  std::string lookup;
  /// Bytes per device record: 32 (TraceRecord), or 16 (CompactRecord) where the module defines
  /// kTraceLayoutSymbol so.
  std::uint32_t recordBytes = sizeof(trace::TraceRecord);
  bool partedRecorded = false;  ///< The layout word's kLayoutPartedRecorded (compact only).
  bool windowed = false;        ///< The layout word's kLayoutWindowed (compact only).
  /// The module's __argus_trace_kernels, when it has one: the kernels that write the buffer.
  std::optional<std::vector<std::string>> instrumented;
};

/// A kernel node of an executable graph, as it was instantiated.
struct GraphKernel {
  CUfunction f = nullptr;  ///< The node's CUfunction, or its context-less CUkernel.
  std::uint32_t grid[3] = {0, 0, 0};
  std::uint32_t block[3] = {0, 0, 0};
};

struct DeviceBuffer {
  CUdeviceptr address = 0;           ///< Where the buffer starts.
  std::uint64_t bytes = 0;           ///< Usable from `address` on.
  CUdeviceptr allocation = 0;        ///< What cuMemAlloc returned (and cuMemFree takes).
  std::uint64_t allocatedBytes = 0;  ///< Its size.
};

/// Launch state carried from API enter to API exit on one thread.
struct PendingLaunch {
  bool active = false;
  LaunchLine line;
  CUdeviceptr symbol = 0;
  std::size_t symbolBytes = 0;
  std::uint32_t recordBytes = sizeof(trace::TraceRecord);  ///< The module's device layout.
  bool partedRecorded = false;  ///< Its kernels record passes begun without lane 0 (format.h).
  CUdeviceptr buffer = 0;
  TraceGeometry geometry;
  std::unique_lock<std::mutex> hold;  ///< Traced launches are serialized enter..exit.
  /// After the set-up's synchronization: until the read-back's, longer than the kernel ran.
  std::chrono::steady_clock::time_point readyAt;
};

struct State {
  std::filesystem::path dir;
  std::uint32_t capacity = trace::kDefaultTraceCapacity;
  std::uint64_t maxBytes = 4ull << 30;
  bool compact = true;
  bool verbose = false;
  std::uint64_t maxFiles = ~0ull;
  std::uint64_t filesWritten = 0;
  CUpti_SubscriberHandle subscriber = nullptr;

  std::mutex launchMutex;  ///< Held from enter to exit of a traced launch.
  /// Guards everything below; recursive because CUPTI may call back inside driver calls.
  std::recursive_mutex mutex;
  std::uint64_t nextSeq = 0;
  std::map<std::pair<CUcontext, CUfunction>, SymbolInfo> symbols;
  /// Trace buffers by context and slot (a graph launch's traced nodes use slots 0, 1, ...).
  std::map<std::pair<CUcontext, unsigned>, DeviceBuffer> buffers;
  std::map<CUgraphExec, std::vector<GraphKernel>> graphKernels;  ///< As instantiated.
  GraphNodeSeqs seqOfGraphNode;  ///< Launch numbers of graph launches' nodes (kernel_activity.h).
  bool flushL2 = false;          ///< ARGUS_TRACE_L2_FLUSH=1.
  std::map<CUcontext, DeviceBuffer> l2Scratch;  ///< Its buffer, per context.
  std::map<std::uint32_t, std::uint64_t> seqOfCorrelation;

  std::string turnPath;             ///< ARGUS_GPU_TURN (set before any callback).
  std::atomic<bool> turnOn{false};  ///< Turns are taken (cleared when taking one fails).
  bool teardownShared = true;       ///< ARGUS_GPU_TURN_TEARDOWN is not `none`.
  std::mutex turnMutex;
  GpuTurn turn;
  /// Driver entry points that put work on the GPU (gpu_turn.h), by callback id: only these get
  /// callbacks for the turn (every driver call does while ARGUS_GPU_TURN_IDLE_MS is set).
  std::vector<bool> submitsWork;
  std::vector<std::string> workNames;  ///< Their names, copied when the library starts.

  /// ARGUS_GPU_TURN_IDLE_MS in ns (0: off): once a traced launch is written, the turn is given
  /// up while the process makes no driver call for this long (its host-side check, say), and
  /// taken again by its next driver call (idleWatch).
  std::uint64_t idleNs = 0;
  /// ARGUS_GPU_TURN_SETTLE_MS in ns: wait this long after taking the turn, before the first work,
  /// for the driver's asynchronous copy-engine work of other processes (freed memory being
  /// scrubbed, say) to finish.
  std::uint64_t settleNs = 0;
  /// ARGUS_GPU_TURN_QUIET_SETUP_MS and _EXIT_MS in ns: after taking the turn, wait until this
  /// long has passed since another process last ended its set-up, and gave the turn up
  /// (gpu_turn.h).
  std::uint64_t quietSetUpNs = 0;
  std::uint64_t quietExitNs = 0;
  /// ARGUS_GPU_TURN_IDLE_FLUSH (default 1): flush CUPTI's activity before an idle release.
  bool flushBeforeIdle = true;
  /// ARGUS_GPU_TURN_L2: what a new holder does to the L2 before the program's work.
  TurnL2 turnL2 = TurnL2::Empty;
  std::map<CUcontext, CUfunction> l2Readers;      ///< prepareL2's kernel, loaded once per context.
  std::atomic<int> callsInFlight{0};              ///< Driver calls of the program under way.
  std::atomic<std::uint64_t> lastCallNs{0};       ///< When the last one returned (steady clock).
  std::atomic<bool> traceWritten{false};          ///< A traced launch's file is written.
  std::atomic<bool> managedMemory{false};         ///< The program allocated managed memory.
  std::atomic<CUcontext> tracedContext{nullptr};  ///< The traced launch's, to synchronize.
  std::atomic<bool> idleReleased{false};          ///< The turn was given up while idle.
  bool exiting = false;  ///< The exit handler ran: no turn is taken again (turnMutex).
};

/// ARGUS_GPU_TURN_QUIET_MS's default: no quiet time, since the new holder empties the L2
/// (gpu_turn.h).
constexpr std::uint64_t kDefaultQuietMs = 0;

constexpr Library kLibrary{"argus-inject", "tracing nothing"};

State* gState = nullptr;  // Leaked on purpose: callbacks may run during process teardown.
// A state whose subscriber was abandoned: kept, since a callback already running may still read it.
State* gAbandoned = nullptr;
thread_local PendingLaunch tPending;
thread_local std::vector<PendingLaunch> tGraphPending;  ///< A graph launch's nodes.
thread_local std::unique_lock<std::mutex> tGraphHold;   ///< Its traced nodes' hold.

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

void reportError(const std::string& message) {
  reportTo(kLibrary.prefix, gState != nullptr ? gState->dir : std::filesystem::path(), message);
}

template <class Status>
bool check(Status status, const char* what) {
  return succeeded(status, what, reportError);
}

/// Finds `__argus_trace` for `f`: through its module, through the context's function when `f` is
/// a context-less CUkernel (what cudart 12+ launches), or through the CUkernel's library.
SymbolInfo findSymbol(CUfunction f) {
  const VendorApi& api = vendor();
  const char* symbol = trace::kTraceSymbol;
  SymbolInfo info;
  CUdeviceptr address = 0;
  size_t bytes = 0;
  // The module or library `f` belongs to, once known, and a global of it by name.
  CUmodule foundModule = nullptr;
  CUlibrary foundLibrary = nullptr;
  auto global = [&](const char* name, CUdeviceptr* at, size_t* size) {
    if (foundModule != nullptr)
      return api.cuModuleGetGlobal(at, size, foundModule, name) == CUDA_SUCCESS;
    return foundLibrary != nullptr &&
           api.cuLibraryGetGlobal(at, size, foundLibrary, name) == CUDA_SUCCESS;
  };
  auto fromModule = [&](CUfunction fn, const char* how) {
    CUmodule module = nullptr;
    if (api.cuFuncGetModule == nullptr || api.cuFuncGetModule(&module, fn) != CUDA_SUCCESS ||
        module == nullptr) {
      return false;
    }
    info.module = hex(module);
    info.lookup = how;
    foundModule = module;
    return global(symbol, &address, &bytes);
  };
  bool found = fromModule(f, "module");
  if (!found && info.module.empty() && api.cuKernelGetFunction != nullptr) {
    CUfunction contextFunction = nullptr;
    if (api.cuKernelGetFunction(&contextFunction, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS &&
        contextFunction != nullptr) {
      found = fromModule(contextFunction, "kernel_function");
    }
  }
  if (!found && info.module.empty() && api.cuKernelGetLibrary != nullptr &&
      api.cuLibraryGetGlobal != nullptr) {
    CUlibrary library = nullptr;
    if (api.cuKernelGetLibrary(&library, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS &&
        library != nullptr) {
      info.module = hex(library);
      info.lookup = "library";
      foundLibrary = library;
      found = global(symbol, &address, &bytes);
    }
  }
  if (found && bytes < sizeof(std::uint64_t)) {
    reportError(std::string(symbol) + " in module " + info.module + " has " +
                std::to_string(bytes) + " bytes, expected 8; not traced");
    found = false;
  }
  info.address = found ? address : 0;
  info.bytes = found ? std::min<std::size_t>(bytes, sizeof(trace::TraceSymbol)) : 0;
  // The kernels that write the buffer, where the module lists them (NUL-terminated names).
  CUdeviceptr list = 0;
  size_t listBytes = 0;
  if (found && global(trace::kTraceKernelsSymbol, &list, &listBytes) && listBytes > 0) {
    std::string names(listBytes, '\0');
    if (check(api.cuMemcpyDtoH(names.data(), list, listBytes),
              "cuMemcpyDtoH (__argus_trace_kernels)")) {
      info.instrumented.emplace();
      for (size_t at = 0; at < names.size();) {
        const size_t end = std::min(names.find('\0', at), names.size());
        if (end > at) info.instrumented->push_back(names.substr(at, end - at));
        at = end + 1;
      }
    }
  }
  // The record layout, where the module says (record_layout=compact); a module without the
  // symbol writes full records.
  CUdeviceptr layout = 0;
  size_t layoutBytes = 0;
  const bool hasLayout = found && global(trace::kTraceLayoutSymbol, &layout, &layoutBytes);
  if (hasLayout) {
    std::uint32_t word = 0;
    if (layoutBytes != sizeof word || !check(api.cuMemcpyDtoH(&word, layout, sizeof word),
                                             "cuMemcpyDtoH (__argus_trace_layout)")) {
      reportError(std::string(trace::kTraceLayoutSymbol) + " in module " + info.module +
                  " is not a readable 4-byte word; not traced");
      info.address = 0;
      info.bytes = 0;
    } else if (const auto read = readLayoutWord(word); !read) {
      reportError(std::string(trace::kTraceLayoutSymbol) + " in module " + info.module + " " +
                  read.error() + "; not traced");
      info.address = 0;
      info.bytes = 0;
    } else {
      info.recordBytes = read->recordBytes;
      info.partedRecorded = read->partedRecorded;
      info.windowed = read->windowed;
    }
  }
  return info;
}

/// Returns the context's buffer `slot` with at least `bytes`, growing it when needed; 0 on
/// failure.
/// A buffer of at most trace::kTraceWindowBytes lies in one 4 GiB-aligned window, as compact
/// kernels need (format.h, kLayoutWindowed): the allocation is used from its first such start
/// (windowedStart), and where it has none (it crosses a window's edge) one of twice the size is
/// made, which holds the buffer on one side of the edge.
CUdeviceptr bufferFor(CUcontext context, unsigned slot, std::uint64_t bytes) {
  DeviceBuffer& buffer = gState->buffers[{context, slot}];
  const auto place = [&](CUdeviceptr allocation, std::uint64_t allocated) {
    if (bytes <= trace::kTraceWindowBytes) return windowedStart(allocation, allocated, bytes);
    return allocated >= bytes ? std::optional<std::uint64_t>(allocation) : std::nullopt;
  };
  if (buffer.allocation != 0)
    if (const auto start = place(buffer.allocation, buffer.allocatedBytes)) {
      buffer.address = *start;
      buffer.bytes = buffer.allocation + buffer.allocatedBytes - *start;
      return buffer.address;
    }
  const VendorApi& api = vendor();
  if (buffer.allocation != 0) api.cuMemFree(buffer.allocation);
  buffer = {};
  for (const std::uint64_t allocated : {bytes, 2 * bytes}) {
    CUdeviceptr allocation = 0;
    if (!check(api.cuMemAlloc(&allocation, allocated), "cuMemAlloc (trace buffer)")) return 0;
    if (const auto start = place(allocation, allocated)) {
      buffer = {*start, allocation + allocated - *start, allocation, allocated};
      return buffer.address;
    }
    api.cuMemFree(allocation);  // it crosses a window's edge: twice the size has room
  }
  return 0;  // not reached: an allocation of twice `bytes` holds it inside one window
}

/// Writes the symbol's contents (only the address into a legacy 8-byte symbol).
bool setSymbol(CUdeviceptr symbol, std::size_t bytes, const trace::TraceSymbol& value) {
  return check(vendor().cuMemcpyHtoD(symbol, &value, bytes), "cuMemcpyHtoD (__argus_trace)");
}

std::uint64_t cuptiNow() {
  std::uint64_t now = 0;
  if (vendor().cuptiGetTimestamp != nullptr) vendor().cuptiGetTimestamp(&now);
  return now;
}

/// One line of turn_timeline.jsonl: `event` now, on CUPTI's clock (kernels.jsonl's) and the
/// system clock (the parent's process times). Returns the CUPTI time it wrote.
std::uint64_t turnEvent(const char* event) {
  // Callbacks of several threads write here (the launch's under launchMutex, the turn's under
  // turnMutex): one lock of its own keeps the lines whole and in the order of their times.
  static std::mutex timelineMutex;
  const std::lock_guard lock(timelineMutex);
  const std::uint64_t cupti = cuptiNow();
  const auto epoch = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  appendLine(gState->dir / "turn_timeline.jsonl",
             std::string("{\"event\":\"") + event + "\",\"cupti_ns\":" + std::to_string(cupti) +
                 ",\"epoch_ns\":" + std::to_string(epoch) + "}");
  return cupti;
}

/// The L2 scratch buffer of `context` (twice the device's L2), allocated at its first use (outside
/// the lock: the driver calls back into onResource, which takes it); nullopt (reported) when it
/// cannot be. A copy: prepareL2 frees and forgets the buffer.
std::optional<DeviceBuffer> l2Scratch(CUcontext context) {
  const VendorApi& api = vendor();
  {
    std::lock_guard lock(gState->mutex);
    if (auto it = gState->l2Scratch.find(context); it != gState->l2Scratch.end()) return it->second;
  }
  CUdevice device = 0;
  int l2Bytes = 0;
  if (api.cuCtxGetDevice == nullptr || api.cuDeviceGetAttribute == nullptr) {
    reportError("this driver lacks cuCtxGetDevice/cuDeviceGetAttribute: no L2 scratch buffer");
    return std::nullopt;
  }
  DeviceBuffer scratch;
  if (!check(api.cuCtxGetDevice(&device), "cuCtxGetDevice (L2 scratch)") ||
      !check(api.cuDeviceGetAttribute(&l2Bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device),
             "cuDeviceGetAttribute (L2 size)") ||
      l2Bytes <= 0 ||
      !check(api.cuMemAlloc(&scratch.address, 2 * static_cast<std::size_t>(l2Bytes)),
             "cuMemAlloc (L2 scratch)"))
    return std::nullopt;
  scratch.bytes = 2 * static_cast<std::uint64_t>(l2Bytes);
  scratch.allocation = scratch.address;
  scratch.allocatedBytes = scratch.bytes;
  std::lock_guard lock(gState->mutex);
  gState->l2Scratch[context] = scratch;
  return scratch;
}

/// Writes `scratch` (cuMemsetD8); false, reported, when it cannot.
bool writeL2(const DeviceBuffer& scratch) {
  return check(vendor().cuMemsetD8(scratch.address, 0, scratch.bytes), "cuMemsetD8 (L2 flush)");
}

/// ARGUS_TRACE_L2_FLUSH=1: writes a buffer twice the size of the device's L2 before the traced
/// launch, so that nothing the program did before it (its input copies, say) is left in L2 and
/// every run of a variant, alone or beside other processes, starts from the same cache state
/// (Nsight Compute's cache control flushes before its replays for the same reason). The buffer
/// (l2Scratch) is kept for the context's later launches. A failure is reported and the launch
/// goes ahead unflushed; false then.
bool flushL2(CUcontext context) {
  const auto scratch = l2Scratch(context);
  return scratch && writeL2(*scratch);
}

/// Reads `scratch` with argus_l2_read (loaded into `context` at its first use). False, reported,
/// when it cannot.
bool readL2(CUcontext context, const DeviceBuffer& scratch) {
  const VendorApi& api = vendor();
  if (api.cuModuleLoadData == nullptr || api.cuModuleGetFunction == nullptr ||
      api.cuLaunchKernel == nullptr) {
    reportError(
        "this driver lacks cuModuleLoadData/cuModuleGetFunction/cuLaunchKernel: the L2 "
        "is not read");
    return false;
  }
  CUfunction function = nullptr;
  {
    std::lock_guard lock(gState->mutex);
    function = gState->l2Readers[context];
  }
  if (function == nullptr) {
    CUmodule module = nullptr;
    if (!check(api.cuModuleLoadData(&module, kL2ReadPtx), "cuModuleLoadData (L2 read)"))
      return false;
    if (!check(api.cuModuleGetFunction(&function, module, kL2ReadKernel.data()),
               "cuModuleGetFunction (L2 read)")) {
      if (api.cuModuleUnload != nullptr) api.cuModuleUnload(module);
      return false;
    }
    std::lock_guard lock(gState->mutex);
    gState->l2Readers[context] = function;
  }
  CUdeviceptr base = scratch.address;
  std::uint64_t pieces = scratch.bytes / 16;
  void* params[] = {&base, &pieces};
  return check(api.cuLaunchKernel(function, 1024, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
               "cuLaunchKernel (L2 read)");
}

/// ARGUS_GPU_TURN_L2: prepares the L2 for a new holder of the turn, in `context` (TurnL2 says
/// what each mode does; gpu_turn.h why). Empty frees the buffer once it is read, and also when
/// the read failed (100+ MB are not left behind). The read replaces whatever the L2 held; after
/// the free, the program's own copies stayed in L2 for its kernels as they do after another
/// process's exit, where with the buffer kept they did not (measured on the H200,
/// BENCHMARKS.md), so the driver evidently drops a freed buffer's lines. Then synchronizes, so
/// that all of it is done before the program's work. False (reported) when the L2 could not be
/// prepared as asked.
bool prepareL2(CUcontext context, TurnL2 mode) {
  const VendorApi& api = vendor();
  const auto scratch = l2Scratch(context);
  if (!scratch) return false;
  bool done = false;
  if (mode == TurnL2::Write) {
    done = writeL2(*scratch);
  } else {
    done = readL2(context, *scratch);
    if (mode == TurnL2::Empty) {
      if (done) done = check(api.cuCtxSynchronize(), "cuCtxSynchronize (L2 read)");
      {
        std::lock_guard lock(gState->mutex);
        gState->l2Scratch.erase(context);
      }
      done = check(api.cuMemFree(scratch->allocation), "cuMemFree (L2 buffer)") && done;
    }
  }
  return check(api.cuCtxSynchronize(), "cuCtxSynchronize (L2 prepared)") && done;
}

/// A graph capture is under way on `stream`, or (CU_STREAM_LEGACY) on any blocking stream: then
/// no synchronization, allocation or launch of Argus's may happen, or the capture is invalidated.
bool capturing(CUstream stream) {
  if (vendor().cuStreamIsCapturing == nullptr) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult result = vendor().cuStreamIsCapturing(stream, &status);
  return result == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT ||
         (result == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE);
}

/// Numbers a launch (a graph launch: each of its kernel nodes) and starts its launches.jsonl line;
/// returns the function's trace variable (looked up once per context and function).
SymbolInfo startLine(PendingLaunch& p, const CUpti_CallbackData* cb, const LaunchArgs& args,
                     CUcontext context, bool graphNode) {
  p = PendingLaunch{};
  p.active = true;
  p.line.api = args.api;
  p.line.kernel = functionName(args.f);
  std::memcpy(p.line.grid, args.grid, sizeof args.grid);
  std::memcpy(p.line.block, args.block, sizeof args.block);
  p.line.correlation = cb->correlationId;
  SymbolInfo info;
  {
    std::lock_guard lock(gState->mutex);
    p.line.seq = gState->nextSeq++;
    if (graphNode)
      gState->seqOfGraphNode[{cb->correlationId, p.line.kernel}] = p.line.seq;
    else
      gState->seqOfCorrelation[cb->correlationId] = p.line.seq;
    auto it = gState->symbols.find({context, args.f});
    if (it == gState->symbols.end()) {
      it = gState->symbols.emplace(std::pair{context, args.f}, findSymbol(args.f)).first;
    }
    info = it->second;
  }
  p.line.module = info.module;
  p.line.lookup = info.lookup;
  return info;
}

/// Sets up the trace buffer of `p`'s launch (the context's buffer `slot`): sized, zeroed, its
/// header written and the variable pointed at it, short of the synchronization that completes
/// it. False, with the launch's note, when it cannot be traced.
bool prepareTrace(PendingLaunch& p, const SymbolInfo& info, CUcontext context, unsigned slot) {
  const VendorApi& api = vendor();
  // A compact slot keeps two places for the highest count and the closing record: at least one
  // 32-byte record's worth more (format.h).
  const std::uint32_t capacity = info.recordBytes == sizeof(trace::CompactRecord)
                                     ? std::max(gState->capacity, 2u)
                                     : gState->capacity;
  // Compact kernels address their records within one 4 GiB window (format.h, kLayoutWindowed).
  const std::uint64_t maxBytes =
      info.windowed ? std::min(gState->maxBytes, trace::kTraceWindowBytes) : gState->maxBytes;
  const auto geometry = traceGeometry(p.line.grid, p.line.block, capacity, maxBytes);
  if (!geometry) {
    // Which limit: a compact kernel's window (ARGUS_TRACE_MAX_BYTES cannot raise it), else the
    // variable's.
    const auto uncapped = traceGeometry(p.line.grid, p.line.block, capacity, ~std::uint64_t{0});
    p.line.note = info.windowed && uncapped && uncapped->bytes > trace::kTraceWindowBytes
                      ? "trace buffer larger than 4 GiB, the most a compact-layout kernel "
                        "addresses: not traced (lower ARGUS_TRACE_CAPACITY)"
                      : "trace buffer too large for ARGUS_TRACE_MAX_BYTES: not traced";
    setSymbol(info.address, info.bytes, {});
    return false;
  }
  // Inside one 4 GiB window, as a compact kernel's (at most a window's) buffer must be; 0 when it
  // cannot be had, and the set-up below then fails: not traced.
  CUdeviceptr buffer = 0;
  {
    std::lock_guard lock(gState->mutex);
    buffer = bufferFor(context, slot, geometry->bytes);
  }
  const trace::TraceHeader header = initialHeader(*geometry);
  const trace::TraceSymbol symbolValue{buffer, geometry->capacityPerWarp, geometry->warpsPerCta};
  if (gState->flushL2) flushL2(context);
  const bool ready =
      buffer != 0 && check(api.cuMemsetD8(buffer, 0, geometry->bytes), "cuMemsetD8 (trace)") &&
      check(api.cuMemcpyHtoD(buffer, &header, sizeof header), "cuMemcpyHtoD (trace header)") &&
      setSymbol(info.address, info.bytes, symbolValue);
  if (!ready) {
    p.line.note = "trace set-up failed (errors.txt): not traced";
    setSymbol(info.address, info.bytes, {});
    return false;
  }
  p.symbol = info.address;
  p.symbolBytes = info.bytes;
  p.recordBytes = info.recordBytes;
  p.partedRecorded = info.partedRecorded;
  p.buffer = buffer;
  p.geometry = *geometry;
  return true;
}

/// After the synchronization that completes the set-up of the launches `prepared` (whether it
/// succeeded: `synchronized`), marks them traced, or notes why not.
void completeTrace(const std::vector<PendingLaunch*>& prepared, bool synchronized) {
  const auto now = std::chrono::steady_clock::now();
  for (PendingLaunch* p : prepared) {
    if (!synchronized) {
      p->line.note = "trace set-up failed (errors.txt): not traced";
      setSymbol(p->symbol, p->symbolBytes, {});
      continue;
    }
    p->readyAt = now;
    p->line.traced = true;
    p->line.capacityPerWarp = p->geometry.capacityPerWarp;
    p->line.warpSlots = p->geometry.warpSlots;
  }
}

void onLaunchEnter(const CUpti_CallbackData* cb, const LaunchArgs& args) {
  CUcontext context = cb->context;
  if (context == nullptr) vendor().cuCtxGetCurrent(&context);
  PendingLaunch& p = tPending;
  const SymbolInfo info = startLine(p, cb, args, context, /*graphNode=*/false);
  if (info.address == 0) return;
  if (capturing(args.stream)) {
    p.line.note = "stream is capturing a graph: not traced";
    return;
  }
  p.hold = std::unique_lock(gState->launchMutex);
  if (prepareTrace(p, info, context, 0))
    completeTrace({&p}, check(vendor().cuCtxSynchronize(), "cuCtxSynchronize (before launch)"));
}

/// The kernel nodes of `graph`, in the order cuGraphGetNodes lists them (none when this driver
/// lacks the graph entry points: graph launches then get no lines).
std::vector<GraphKernel> graphKernels(CUgraph graph) {
  const VendorApi& api = vendor();
  std::vector<GraphKernel> kernels;
  if (graph == nullptr || api.cuGraphGetNodes == nullptr || api.cuGraphNodeGetType == nullptr ||
      api.cuGraphKernelNodeGetParams == nullptr)
    return kernels;
  size_t count = 0;
  if (!check(api.cuGraphGetNodes(graph, nullptr, &count), "cuGraphGetNodes")) return kernels;
  std::vector<CUgraphNode> nodes(count);
  if (count == 0 || !check(api.cuGraphGetNodes(graph, nodes.data(), &count), "cuGraphGetNodes"))
    return kernels;
  nodes.resize(count);
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type{};
    if (api.cuGraphNodeGetType(node, &type) != CUDA_SUCCESS || type != CU_GRAPH_NODE_TYPE_KERNEL)
      continue;
    CUDA_KERNEL_NODE_PARAMS params{};
    if (!check(api.cuGraphKernelNodeGetParams(node, &params), "cuGraphKernelNodeGetParams"))
      continue;
    GraphKernel k;
    k.f = params.func != nullptr ? params.func : reinterpret_cast<CUfunction>(params.kern);
    k.grid[0] = params.gridDimX, k.grid[1] = params.gridDimY, k.grid[2] = params.gridDimZ;
    k.block[0] = params.blockDimX, k.block[1] = params.blockDimY, k.block[2] = params.blockDimZ;
    kernels.push_back(k);
  }
  return kernels;
}

/// Whether `kernel` writes its module's buffer: listed in __argus_trace_kernels (a module
/// without the list, written by hand, is taken to trace every kernel).
bool instrumented(const SymbolInfo& info, const std::string& kernel) {
  return info.address != 0 &&
         (!info.instrumented || std::find(info.instrumented->begin(), info.instrumented->end(),
                                          kernel) != info.instrumented->end());
}

/// A graph launch: a line per kernel node, and the set-up of the instrumented nodes' buffers
/// (those whose module's variable no other instrumented node of the graph shares), completed by
/// one synchronization.
void onGraphLaunchEnter(const CUpti_CallbackData* cb, CUgraphExec exec, CUstream stream) {
  std::vector<PendingLaunch>& nodes = tGraphPending;
  nodes.clear();
  std::vector<GraphKernel> kernels;
  {
    std::lock_guard lock(gState->mutex);
    if (auto it = gState->graphKernels.find(exec); it != gState->graphKernels.end())
      kernels = it->second;
  }
  if (kernels.empty()) return;
  CUcontext context = cb->context;
  if (context == nullptr) vendor().cuCtxGetCurrent(&context);
  nodes.resize(kernels.size());
  std::vector<SymbolInfo> infos;
  std::map<CUdeviceptr, unsigned> writers;  // instrumented nodes per variable
  for (size_t i = 0; i < kernels.size(); ++i) {
    LaunchArgs args;
    args.api = "cuGraphLaunch";
    args.f = kernels[i].f;
    std::memcpy(args.grid, kernels[i].grid, sizeof args.grid);
    std::memcpy(args.block, kernels[i].block, sizeof args.block);
    args.stream = stream;
    infos.push_back(startLine(nodes[i], cb, args, context, /*graphNode=*/true));
    if (instrumented(infos[i], nodes[i].line.kernel)) ++writers[infos[i].address];
  }
  const bool captured = capturing(stream);
  std::vector<PendingLaunch*> prepared;
  unsigned slot = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    PendingLaunch& p = nodes[i];
    if (!instrumented(infos[i], p.line.kernel)) continue;
    if (captured) {
      p.line.note = "stream is capturing a graph: not traced";
    } else if (const unsigned n = writers[infos[i].address]; n > 1) {
      p.line.note = std::to_string(n) +
                    " instrumented kernel nodes of this graph share their module's trace "
                    "variable, which serves one launch at a time: not traced";
    } else {
      if (!tGraphHold.owns_lock()) tGraphHold = std::unique_lock(gState->launchMutex);
      if (prepareTrace(p, infos[i], context, slot)) {
        prepared.push_back(&p);
        ++slot;
      }
    }
  }
  if (!prepared.empty())
    completeTrace(prepared, check(vendor().cuCtxSynchronize(), "cuCtxSynchronize (before graph)"));
}

/// `ns` as seconds with two decimals ("4.29 s").
std::string secondsText(std::uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", static_cast<double>(ns) / 1e9);
  return text;
}

/// The clock rate in kHz of the current context's device (CU_DEVICE_ATTRIBUTE_CLOCK_RATE; the
/// launch's, in its exit callback), 0 when unknown.
int smClockKHz() {
  const VendorApi& api = vendor();
  CUdevice device = 0;
  int kHz = 0;
  if (api.cuCtxGetDevice == nullptr || api.cuDeviceGetAttribute == nullptr) return 0;
  if (api.cuCtxGetDevice(&device) != CUDA_SUCCESS ||
      api.cuDeviceGetAttribute(&kHz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, device) != CUDA_SUCCESS)
    return 0;
  return kHz;
}

/// A traced launch's records read back (after the launch's synchronization), the variable reset
/// and the launch file written; the launch's line says how it went.
void readBack(PendingLaunch& p, CUresult launched, CUcontext context) {
  const VendorApi& api = vendor();
  {
    if (gState->turnOn) turnEvent("traced_launch_returned");
    bool ok = launched == CUDA_SUCCESS;
    if (!ok) p.line.note = "launch failed: " + api.describe(launched);
    ok = ok && check(api.cuCtxSynchronize(), "cuCtxSynchronize (after traced launch)");
    const auto ranNs =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now() - p.readyAt)
                                       .count());
    trace::TraceHeader header;
    std::vector<trace::TraceRecord> records;
    const bool compactLayout = p.recordBytes == sizeof(trace::CompactRecord);
    std::vector<trace::CompactRecord> compactArea;
    if (ok) {
      const std::uint64_t count = std::uint64_t{p.geometry.warpSlots} * p.geometry.capacityPerWarp;
      // The same bytes either way: 2 x count compact records fill the full layout's area.
      void* area = nullptr;
      if (compactLayout) {
        compactArea.resize(2 * count);
        area = compactArea.data();
      } else {
        records.resize(count);
        area = records.data();
      }
      ok = check(api.cuMemcpyDtoH(&header, p.buffer, sizeof header), "cuMemcpyDtoH (header)") &&
           check(
               api.cuMemcpyDtoH(area, p.buffer + sizeof header, count * sizeof(trace::TraceRecord)),
               "cuMemcpyDtoH (records)");
    }
    setSymbol(p.symbol, p.symbolBytes, {});
    if (ok && (header.magic != trace::kTraceMagic || header.warpSlots != p.geometry.warpSlots ||
               header.capacityPerWarp != p.geometry.capacityPerWarp)) {
      reportError("launch " + std::to_string(p.line.seq) + " (" + p.line.kernel +
                  "): the device overwrote the trace header; records kept as read");
      p.line.note = "trace header overwritten by the device";
    }
    if (ok && compactLayout) {
      // One format on disk: the compact device records become full ones (launch files are
      // then always in the compact file form, whose slots hold 2 cap - 2 records).
      ExpandedRecords expanded =
          expandCompactRecords(compactArea, p.geometry.warpSlots, p.geometry.capacityPerWarp,
                               p.geometry.warpsPerCta, p.partedRecorded);
      std::string lost;
      if (expanded.unclosedSlots != 0)
        lost = std::to_string(expanded.unclosedRecords) + " records of " +
               std::to_string(expanded.unclosedSlots) +
               " warps without a closing record left out (their timestamps' high bits are "
               "unknown)";
      if (expanded.partedSlots != 0)
        lost += (lost.empty() ? "" : "; ") + std::to_string(expanded.partedRecords) +
                " records of " + std::to_string(expanded.partedSlots) +
                " warps lost: lanes ran markers without lane 0, which stores the compact "
                "records";
      // The library does not know the module's time base (the trace map does), so the shorter
      // span of the two is the bound. The device's clock is asked only when the launch ran
      // longer than the span at 10 GHz.
      if (ranNs >= compactTimeSpanNs(10'000'000)) {
        if (const std::uint64_t span = compactTimeSpanNs(smClockKHz()); ranNs >= span)
          lost += (lost.empty() ? "" : "; ") + std::string("the launch ran up to ") +
                  secondsText(ranNs) + "; the compact records' 32-bit timestamps span " +
                  secondsText(kGlobalTimerSpanNs) + " with time_base=globaltimer (the " +
                  "default) and " + secondsText(span) +
                  " with clock64 on this device: with clock64, or past the globaltimer span, "
                  "a warp's records further apart than the span decode with wrong high bits "
                  "(the full layout, argus build --pass-option record_layout=full, stores "
                  "64-bit timestamps)";
      }
      if (!lost.empty()) {
        p.line.note += (p.line.note.empty() ? "" : "; ") + lost;
        reportError("launch " + std::to_string(p.line.seq) + " (" + p.line.kernel + "): " + lost);
      }
      // Counted: what the slots could not keep, what the expansion could not place, and what
      // lanes ran without lane 0: more markers than lane 0, or passes that the lost-counting
      // end markers counted in the slot's lost word (format.h).
      header.dropped += expanded.dropped;
      p.line.capacityPerWarp = expanded.capacityPerWarp;
      records = std::move(expanded.records);
      header.capacityPerWarp = expanded.capacityPerWarp;
      header.reserved[2] = sizeof(trace::CompactRecord);  // expanded (format.h)
    }
    if (ok) {
      std::uint64_t valid = 0;
      const std::string bytes =
          launchFileBytes(header, records, gState->compact || compactLayout, &valid);
      if (gState->filesWritten < gState->maxFiles) {
        ++gState->filesWritten;
        p.line.file = "launch-" + std::to_string(p.line.seq) + ".bin";
        std::ofstream out(gState->dir / p.line.file, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        if (!out) reportError("cannot write " + (gState->dir / p.line.file).string());
      } else {
        p.line.note = "ARGUS_TRACE_MAX_FILES reached: no launch file";
      }
      p.line.records = valid;
      p.line.dropped = header.dropped;
      if (gState->turnOn) {
        turnEvent("trace_written");
        gState->tracedContext = context;
        gState->traceWritten = true;
      }
    } else {
      p.line.traced = false;
      if (p.line.note.empty()) p.line.note = "trace read-back failed (errors.txt)";
    }
  }
}

/// The launch's launches.jsonl line (and its hold released).
void writeLine(PendingLaunch& p) {
  if (p.hold.owns_lock()) p.hold.unlock();
  const std::string text = launchLine(p.line);
  {
    std::lock_guard lock(gState->mutex);
    appendLine(gState->dir / "launches.jsonl", text);
  }
  if (gState->verbose) std::fprintf(stderr, "argus-inject: %s\n", text.c_str());
}

CUresult launchResult(const CUpti_CallbackData* cb) {
  return cb->functionReturnValue != nullptr ? *static_cast<const CUresult*>(cb->functionReturnValue)
                                            : CUDA_SUCCESS;
}

CUcontext contextOf(const CUpti_CallbackData* cb) {
  CUcontext context = cb->context;
  if (context == nullptr) vendor().cuCtxGetCurrent(&context);
  return context;
}

void onLaunchExit(const CUpti_CallbackData* cb) {
  PendingLaunch& p = tPending;
  if (!p.active) return;
  p.active = false;
  if (p.line.traced) readBack(p, launchResult(cb), contextOf(cb));
  writeLine(p);
}

void onGraphLaunchExit(const CUpti_CallbackData* cb) {
  for (PendingLaunch& p : tGraphPending) {
    if (!p.active) continue;
    p.active = false;
    if (p.line.traced) readBack(p, launchResult(cb), contextOf(cb));
    writeLine(p);
  }
  tGraphPending.clear();
  if (tGraphHold.owns_lock()) tGraphHold.unlock();
}

void onResource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) {
  std::lock_guard lock(gState->mutex);
  if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) {
    // The callback names no CUmodule handle: forget every lookup, they are redone on demand.
    gState->symbols.clear();
  } else if (cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) {
    const auto* graph = static_cast<const CUpti_GraphData*>(data->resourceDescriptor);
    if (graph != nullptr) gState->graphKernels[graph->graphExec] = graphKernels(graph->graph);
  } else if (cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING) {
    const auto* graph = static_cast<const CUpti_GraphData*>(data->resourceDescriptor);
    if (graph != nullptr) gState->graphKernels.erase(graph->graphExec);
  } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    const CUcontext context = data->context;
    std::erase_if(gState->symbols, [&](const auto& entry) { return entry.first.first == context; });
    gState->l2Readers.erase(context);  // its module goes with the context
    const auto freeBuffer = [](const DeviceBuffer& buffer) {
      if (buffer.allocation != 0) vendor().cuMemFree(buffer.allocation);
    };
    std::erase_if(gState->buffers, [&](const auto& entry) {
      if (entry.first.first != context) return false;
      freeBuffer(entry.second);
      return true;
    });
    if (auto it = gState->l2Scratch.find(context); it != gState->l2Scratch.end()) {
      freeBuffer(it->second);
      gState->l2Scratch.erase(it);
    }
  }
}

std::uint64_t steadyNs() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

/// Before a driver call: when it is this process's first GPU work, or any driver call after the
/// turn was given up while idle, wait for the device's turn.
void takeTurnBefore(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  const bool work = cbid < gState->submitsWork.size() && gState->submitsWork[cbid];
  // With ARGUS_GPU_TURN_IDLE_MS every call takes the mutex: the idle watcher decides and gives
  // the turn up under it, so a call it did not count (callsInFlight) waits here and then sees
  // the turn gone.
  if (!work && gState->idleNs == 0) return;
  std::lock_guard lock(gState->turnMutex);
  if (gState->turn.held() || gState->exiting) return;
  if (!work && !gState->idleReleased) return;  // still setting up: GPU work takes the turn first
  const std::string& name = cbid < gState->workNames.size() ? gState->workNames[cbid] : "";
  // What this process's set-up left on the GPU (module uploads, memory set-up) finishes under the
  // shared hold, before the wait for the turn lets it go. Not while a graph is being captured
  // (into the launch's stream, or into any blocking stream, which the legacy stream's status
  // shows): synchronizing, or the L2's preparation below, would invalidate the capture, and work
  // being captured is not yet on the GPU. The turn is then taken at a later call.
  LaunchArgs args;
  if ((launchArgs(cbid, cb->functionParams, args) && capturing(args.stream)) ||
      capturing(CU_STREAM_LEGACY))
    return;
  vendor().cuCtxSynchronize();
  // The set-up's end, for the quiet time of the next holders (not a re-take after an idle
  // release: there was no set-up since).
  if (!gState->idleReleased) gState->turn.noteEvent(GpuTurn::Event::SetUpEnded);
  const std::uint64_t asked = turnEvent("turn_asked");
  if (const std::string problem = gState->turn.acquire(gState->turnPath); !problem.empty()) {
    reportError(problem + "; this process's GPU work may overlap other processes'");
    gState->turnOn = false;
    return;
  }
  std::uint64_t taken = turnEvent("turn_taken");
  const std::uint64_t quietNs = gState->turn.quietWait(gState->quietSetUpNs, gState->quietExitNs);
  if (quietNs != 0) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(quietNs));
    taken = turnEvent("turn_quiet");
  }
  if (gState->settleNs != 0) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(gState->settleNs));
    taken = turnEvent("turn_settled");
  }
  // The L2 before the program's first GPU work only: a re-take after an idle release follows the
  // measured launch.
  if (gState->turnL2 != TurnL2::Keep && !gState->idleReleased) {
    CUcontext context = cb->context;
    if (context == nullptr && vendor().cuCtxGetCurrent(&context) != CUDA_SUCCESS) context = nullptr;
    if (context == nullptr) {
      reportError("no current context at the first GPU work: the L2 is not prepared");
    } else {
      taken = turnEvent(prepareL2(context, gState->turnL2) ? "turn_l2_ready" : "turn_l2_failed");
    }
  }
  gState->idleReleased = false;
  const std::string line =
      "{\"lock\":" + jsonString(gState->turnPath) + ",\"pid\":" + std::to_string(::getpid()) +
      ",\"first_work\":" + jsonString(name) + ",\"asked_ns\":" + std::to_string(asked) +
      ",\"taken_ns\":" + std::to_string(taken) + ",\"waited_ns\":" + std::to_string(taken - asked) +
      ",\"quiet_ns\":" + std::to_string(quietNs) + "}";
  appendLine(gState->dir / "turn.json", line);
}

/// ARGUS_GPU_TURN_IDLE_MS's thread. Once a traced launch is written, and the program has made no
/// driver call for idleNs with none under way, it synchronizes the traced launch's context and
/// gives the turn up: nothing of this process is left on the GPU, and its next driver call (any,
/// not only GPU work: a free changes the GPU's page tables) waits for the turn again. The
/// program's host-side work after its measured launches, a result check say, then runs while
/// another process has the GPU. Not with managed memory, whose pages move when the host touches
/// them, without a driver call. A failed synchronization keeps the turn to the exit.
void idleWatch() {
  tInCallback = true;  // this thread's driver calls are Argus's own, not the program's
  const auto step = std::chrono::nanoseconds(std::max<std::uint64_t>(gState->idleNs / 4, 100000));
  bool contextSet = false;
  for (;;) {
    std::this_thread::sleep_for(step);
    if (!gState->traceWritten || gState->managedMemory) continue;
    std::lock_guard lock(gState->turnMutex);
    if (gState->exiting) return;
    const CUcontext context = gState->tracedContext;
    if (!gState->turn.held() || context == nullptr || gState->callsInFlight != 0 ||
        steadyNs() - gState->lastCallNs < gState->idleNs)
      continue;
    if (!contextSet) {
      if (!check(vendor().cuCtxSetCurrent(context), "cuCtxSetCurrent (idle turn)")) return;
      contextSet = true;
    }
    if (!check(vendor().cuCtxSynchronize(), "cuCtxSynchronize (idle turn)")) return;
    // CUPTI's kernel records are fetched from the GPU now, while this process has the turn,
    // not by CUPTI's own thread beside the next holder's work.
    if (gState->flushBeforeIdle && vendor().cuptiActivityFlushAll != nullptr)
      vendor().cuptiActivityFlushAll(0);
    gState->turn.noteEvent(GpuTurn::Event::TurnGivenUp);
    gState->turn.release();
    gState->idleReleased = true;
    turnEvent("turn_idle_released");
  }
}

/// Exit handler: once everything this process queued has finished on the GPU, the turn goes to
/// the next process and the context's teardown runs under a shared hold. When the
/// synchronization fails the turn stays held until the process is gone.
void releaseTurnAtExit() {
  if (gState == nullptr || tInCallback) return;
  // The mutex first: no other thread takes or uses the turn between the synchronization and the
  // hand-over.
  std::lock_guard lock(gState->turnMutex);
  gState->exiting = true;
  if (gState->idleReleased) {
    // Given up while idle (nothing of ours on the GPU since): the teardown waits for its shared
    // hold like a set-up.
    turnEvent("exit_handler");
    if (gState->teardownShared) (void)gState->turn.share(gState->turnPath);
    // Its teardown: the next holder's quiet time (with ARGUS_GPU_TURN_TEARDOWN=none the process
    // holds no descriptor of the file now, and nothing is noted).
    gState->turn.noteEvent(GpuTurn::Event::TurnGivenUp);
    turnEvent("turn_released");
    return;
  }
  if (!gState->turn.held()) return;
  turnEvent("exit_handler");
  tInCallback = true;  // our own driver call: not a callback to act on
  const bool idle = vendor().cuCtxSynchronize() == CUDA_SUCCESS;
  tInCallback = false;
  // When the synchronization failed the turn stays held until the process is gone; its end is
  // near, so the next holder's quiet time counts from here too.
  gState->turn.noteEvent(GpuTurn::Event::TurnGivenUp);
  if (!idle) return;
  if (gState->teardownShared) {
    (void)gState->turn.share(gState->turnPath);
  } else {
    gState->turn.release();
  }
  turnEvent("turn_released");
}

/// A driver call's callback (the skeleton's dispatcher calls it while the library traces).
void onDriverCall(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (gState->idleNs != 0) {
      ++gState->callsInFlight;
      if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged) gState->managedMemory = true;
    }
    if (gState->turnOn) takeTurnBefore(cbid, cb);
    LaunchArgs args;
    CUgraphExec exec = nullptr;
    CUstream stream = nullptr;
    if (launchArgs(cbid, cb->functionParams, args))
      onLaunchEnter(cb, args);
    else if (graphLaunchArgs(cbid, cb->functionParams, exec, stream))
      onGraphLaunchEnter(cb, exec, stream);
  } else {
    // (with ARGUS_GPU_TURN other driver calls come here too)
    if (std::find(std::begin(kLaunchCallbacks), std::end(kLaunchCallbacks), cbid) !=
        std::end(kLaunchCallbacks))
      onLaunchExit(cb);
    if (std::find(std::begin(kGraphLaunchCallbacks), std::end(kGraphLaunchCallbacks), cbid) !=
        std::end(kGraphLaunchCallbacks))
      onGraphLaunchExit(cb);
    if (gState->idleNs != 0) {
      gState->lastCallNs = steadyNs();
      --gState->callsInFlight;
    }
  }
}

const Callbacks kCallbacks{.active = [] { return gState != nullptr; },
                           .driver = onDriverCall,
                           .resource = onResource,
                           .report = reportError};

int initialize() {
  const auto dir =
      openOutputDir(kLibrary, "ARGUS_TRACE_DIR", {"launches.jsonl", "kernels.jsonl", "errors.txt"});
  if (!dir) return 1;
  // Owned here until CUPTI may call back into it: a failure before that frees it.
  auto owned = std::make_unique<State>();
  State* state = owned.get();
  state->dir = *dir;
  std::error_code ec;
  state->capacity =
      static_cast<std::uint32_t>(envNumber("ARGUS_TRACE_CAPACITY", trace::kDefaultTraceCapacity));
  if (state->capacity == 0) state->capacity = trace::kDefaultTraceCapacity;
  state->maxBytes = envNumber("ARGUS_TRACE_MAX_BYTES", 4ull << 30);
  state->compact = envNumber("ARGUS_TRACE_FULL", 0) == 0;
  state->verbose = envNumber("ARGUS_TRACE_VERBOSE", 0) != 0;
  state->maxFiles = envNumber("ARGUS_TRACE_MAX_FILES", ~0ull);
  state->flushL2 = envNumber("ARGUS_TRACE_L2_FLUSH", 0) != 0;
  if (const char* teardown = std::getenv("ARGUS_GPU_TURN_TEARDOWN"))
    state->teardownShared = std::string_view(teardown) != "none";
  if (const char* turn = std::getenv("ARGUS_GPU_TURN"); turn != nullptr && *turn != '\0') {
    state->turnPath = turn;
    std::filesystem::remove(state->dir / "turn.json", ec);
    std::filesystem::remove(state->dir / "turn_timeline.jsonl", ec);
  }
  gState = state;

  VendorApi& api = vendor();
  if (!loadVendor(kLibrary, reportError)) {
    gState = nullptr;
    return 1;
  }
  bool ok = true;
  const auto subscriber = subscribe(kLibrary, &kCallbacks, ok);
  if (!subscriber) {
    gState = nullptr;
    return 1;
  }
  state->subscriber = *subscriber;
  gState = owned.release();  // from here on the process keeps it
  if (!state->turnPath.empty() &&
      (api.cuptiGetCallbackName == nullptr || api.cuptiGetTimestamp == nullptr)) {
    reportError("this CUPTI lacks cuptiGetCallbackName/cuptiGetTimestamp: ARGUS_GPU_TURN ignored");
    state->turnPath.clear();
  }
  if (!state->turnPath.empty()) {
    state->settleNs = envNumber("ARGUS_GPU_TURN_SETTLE_MS", 0) * 1000000;
    // At most 10 s: a slot whose events are older than GpuTurn::kStaleNs may be taken over.
    const auto quietMs = [](const char* name, std::uint64_t fallback) {
      return std::min<std::uint64_t>(envNumber(name, fallback), 10000);
    };
    const std::uint64_t quiet = quietMs("ARGUS_GPU_TURN_QUIET_MS", kDefaultQuietMs);
    state->quietSetUpNs = quietMs("ARGUS_GPU_TURN_QUIET_SETUP_MS", quiet) * 1000000;
    state->quietExitNs = quietMs("ARGUS_GPU_TURN_QUIET_EXIT_MS", quiet) * 1000000;
    state->flushBeforeIdle = envNumber("ARGUS_GPU_TURN_IDLE_FLUSH", 1) != 0;
    const char* l2Mode = std::getenv("ARGUS_GPU_TURN_L2");
    if (const auto mode = turnL2(l2Mode)) {
      state->turnL2 = *mode;
    } else {
      std::string shown(l2Mode);
      std::replace_if(
          shown.begin(), shown.end(), [](char c) { return c < ' '; }, '?');
      reportError("ARGUS_GPU_TURN_L2=" + shown +
                  " is not one of empty, read, write, none: the L2 is emptied (the default)");
    }
    const std::uint64_t idleMs = envNumber("ARGUS_GPU_TURN_IDLE_MS", 0);
    if (idleMs != 0 && api.cuCtxSetCurrent == nullptr) {
      reportError("this driver lacks cuCtxSetCurrent: ARGUS_GPU_TURN_IDLE_MS ignored");
    } else {
      state->idleNs = idleMs * 1000000;
    }
    // The driver calls that put work on the GPU, to take the turn before the first of them (only
    // those get callbacks, unless every call does for ARGUS_GPU_TURN_IDLE_MS). Their names are
    // copied now: reading cuptiGetCallbackName's string inside the callback crashed PyTorch
    // processes (SIGSEGV at their first launch, H200).
    state->submitsWork.assign(CUPTI_DRIVER_TRACE_CBID_SIZE, false);
    state->workNames.assign(CUPTI_DRIVER_TRACE_CBID_SIZE, "");
    for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
      const char* name = nullptr;
      if (api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_SUCCESS ||
          name == nullptr)
        continue;
      if (state->idleNs != 0) state->workNames[cbid] = name;
      if (!submitsGpuWork(name)) continue;
      state->submitsWork[cbid] = true;
      state->workNames[cbid] = name;
      if (state->idleNs == 0)
        ok = enableDriverCallback(state->subscriber, cbid, "GPU work", reportError) && ok;
    }
    if (state->idleNs != 0)
      ok = check(api.cuptiEnableDomain(1, state->subscriber, CUPTI_CB_DOMAIN_DRIVER_API),
                 "cuptiEnableDomain (driver calls, ARGUS_GPU_TURN_IDLE_MS)") &&
           ok;
  }
  ok = enableLaunchCallbacks(state->subscriber, reportError) && ok;
  for (const CUpti_CallbackId cbid : kGraphLaunchCallbacks)
    ok = enableDriverCallback(state->subscriber, cbid, "graph launch", reportError) && ok;
  if (!ok) {
    gAbandoned = state;
    gState = nullptr;
    abandon(kLibrary, state->subscriber, reportError);
    return 1;
  }
  // Kernel GPU start/end of every kernel -> kernels.jsonl (one kernel per launch: forgotten once
  // written).
  if (envNumber("ARGUS_TRACE_KERNEL_TIMES", 1) != 0 &&
      recordKernels({&state->mutex, &state->seqOfCorrelation, &state->seqOfGraphNode, state->dir,
                     /*forget=*/true},
                    reportError))
    std::atexit(flushActivity);
  if (!state->turnPath.empty() && ancestorHoldsLock(state->turnPath)) {
    // A child of a traced process (inherited ARGUS_GPU_TURN): its GPU work runs under the
    // ancestor's hold; waiting for the turn here would wait for a parent that waits for it.
    if (state->verbose)
      std::fprintf(stderr, "argus-inject: an ancestor holds %s; no turn of our own\n",
                   state->turnPath.c_str());
    state->turnPath.clear();
  }
  if (!state->turnPath.empty()) {
    // The context is created after this returns: its set-up runs under a shared hold.
    turnEvent("set_up_asked");
    if (const std::string problem = state->turn.share(state->turnPath); !problem.empty()) {
      reportError(problem + "; ARGUS_GPU_TURN ignored");
    } else {
      turnEvent("set_up_held");
      state->turnOn = true;
      // Registered after the activity flush, so it runs first (exit handlers run in reverse).
      std::atexit(releaseTurnAtExit);
      if (state->idleNs != 0) {
        try {
          std::thread(idleWatch).detach();
        } catch (const std::system_error& e) {
          reportError(std::string("no thread for ARGUS_GPU_TURN_IDLE_MS (") + e.what() +
                      "): the turn is kept to the exit");
        }
      }
    }
  }
  if (state->verbose) {
    std::fprintf(stderr, "argus-inject: tracing into %s (capacity %u records/warp, CUPTI %s)\n",
                 state->dir.c_str(), state->capacity, api.cuptiPath.c_str());
  }
  return 1;
}

}  // namespace
}  // namespace argus::inject

/// Called by the CUDA driver (CUDA_INJECTION64_PATH) during cuInit. Always returns 1: a problem
/// disables tracing and is reported, it never fails the program's CUDA initialisation.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  return argus::inject::initializeOnce(argus::inject::kLibrary, argus::inject::initialize);
}
