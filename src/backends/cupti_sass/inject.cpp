// libargus_cupti_sass.so: the CUDA injection library (CUDA_INJECTION64_PATH) that collects per-PC
// hardware evidence of a program's kernel launches with CUPTI, one family per run:
//   SASS metrics (ARGUS_SASS_METRICS): CUPTI patches the SASS of the launched functions and counts
//     per PC (executed warp / thread instructions, ...), per SM or per SMSP instance if asked.
//     Per context: cuptiSassMetricsSetConfig once per device and cuptiSassMetricsEnable (lazy
//     patching) at the first selected launch. Every launch after that is synchronized at its exit
//     and its records are taken (cuptiSassMetricsGetDataProperties + cuptiSassMetricsFlushData) at
//     the next flush point: the next launch's enter, context destruction or process exit.
//     Launches are serialized, so a flush holds exactly one launch; the records of launches not
//     selected are discarded.
//   PC sampling (ARGUS_PC_SAMPLING=1): cuptiPCSamplingEnable and configuration (kernel-serialized
//     collection, every stall reason, our data buffer) when a context is created. At the exit of a
//     launch: synchronize (selected launches) and drain cuptiPCSamplingGetData; every PC record
//     carries the correlation id of its kernel, so records go to their own launch, also when they
//     arrive later (then the launch's file is rewritten). At context destruction and at exit:
//     drain, cuptiPCSamplingDisable, and take what CUPTI left in the configured buffer.
// The two families perturb each other (patching vs. sampling) and are never enabled together.
//
// Every module's cubin is saved once per CUPTI cubin CRC (module-load callback, cuptiGetCubinCrc)
// so that the PC map of exactly that cubin can be built (`nvdisasm -g`), and CUPTI kernel activity
// gives GPU durations (kernels.jsonl). Files: see argus/evidence/pc_evidence.h.
//
// Environment:
//   ARGUS_OUT_DIR               output folder (created); unset: say so once, collect nothing.
//   ARGUS_SASS_METRICS          comma-separated SASS metric names, or 1 / default for
//                               smsp__sass_inst_executed,smsp__sass_thread_inst_executed.
//   ARGUS_SASS_GRANULARITY      gpu (default) | sm | smsp: one value per GPU, per SM, per SMSP.
//                               On the H200 (CUDA 13.0, driver 580; experiments/
//                               cupti-collectors/sass-granularity.sh) `sm` and `smsp` give every
//                               instance the same value, also the 4 SMs a 128-CTA launch leaves
//                               idle, and their sum is 132/128 of the `gpu` total at every PC;
//                               `gpu` equals ncu. So they are not per-SM counts, and no recipe
//                               keeps the SM coordinate.
//   ARGUS_SASS_ENABLE_AT        launch (default: at the first selected launch) | context (when
//                               a context is created; every kernel of it is then patched).
//   ARGUS_CUPTI_INIT            early (default: CUPTI's profiler initialisation starts on its own
//                               thread at the program's first driver call after cuInit) |
//                               inline (at the first configuration).
//   ARGUS_SASS_FLUSH            deferred (default: a launch's records are flushed when the next
//                               launch starts, the context is destroyed or the process exits) |
//                               launch (in the launch's own exit callback; counts read 0 on
//                               CUDA 13.0 / driver 580).
//   ARGUS_PC_SAMPLING=1         PC sampling with stall reasons instead.
//   ARGUS_PC_SAMPLING_PERIOD    log2 of the sampling period in cycles, 5..31 (default: CUPTI's).
//   ARGUS_PC_SAMPLING_PCS       PC records per CUPTI buffer (default 10000).
//   ARGUS_PC_KERNELS            comma-separated kernel names to collect (default: every kernel);
//                               a name matches the driver's (mangled) name exactly.
//   ARGUS_PC_MAX_LAUNCHES       collect at most N launches (the later ones run unprofiled).
//   ARGUS_PC_KERNEL_TIMES=0     no CUPTI kernel activity (kernels.jsonl; PC sampling only: with
//   SASS
//                               metrics the activity is never enabled, it zeroes their values).
//   ARGUS_PC_VERBOSE=1          one stderr line per launch.
//   ARGUS_CUPTI_LIB             path of libcupti.so when the loader cannot find it.
//
// Never fatal: problems go to errors.txt and stderr ("argus-cupti: ...") and the program runs on.
// Kernels in CUDA graphs are not seen (no launch callback). One profiled process per folder.
#include "argus/evidence/pc_evidence.h"
#include "argus/inject/driver_calls.h"
#include "argus/inject/output.h"
#include "argus/inject/skeleton.h"

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
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace argus::cupti_sass {
namespace {

namespace fs = std::filesystem;
using evidence::PcEvidence;
using evidence::PcFunction;
using evidence::PcRecord;
using inject::appendLine;
using inject::envNumber;
using inject::functionName;
using inject::LaunchArgs;
using inject::launchArgs;
using inject::reportTo;
using inject::succeeded;
using inject::tInCallback;
using inject::vendor;
using inject::VendorApi;
using json = nlohmann::ordered_json;

enum class Mode { SassMetrics, PcSampling };

/// PC sampling buffers of one context: the one CUPTI fills at range ends and at disable
/// (configured) and the one cuptiPCSamplingGetData fills (drain).
struct SamplingBuffer {
  CUpti_PCSamplingData data{};
  std::vector<CUpti_PCSamplingPCData> rows;
  std::vector<CUpti_PCSamplingStallReason> reasons;

  void allocate(size_t pcs, size_t reasonCount) {
    rows.assign(pcs, CUpti_PCSamplingPCData{});
    reasons.assign(pcs * std::max<size_t>(reasonCount, 1), CUpti_PCSamplingStallReason{});
    reset(reasonCount);
  }
  /// Ready for the next fill: sizes set, counts zeroed.
  void reset(size_t reasonCount) {
    data = CUpti_PCSamplingData{};
    data.size = sizeof(CUpti_PCSamplingData);
    data.collectNumPcs = rows.size();
    data.pPcData = rows.data();
    for (size_t i = 0; i < rows.size(); ++i) {
      rows[i] = CUpti_PCSamplingPCData{};
      rows[i].size = sizeof(CUpti_PCSamplingPCData);
      rows[i].stallReason = reasons.data() + i * std::max<size_t>(reasonCount, 1);
    }
  }
};

struct ContextState {
  int device = -1;
  bool sassEnabled = false;
  bool samplingEnabled = false;
  bool failed = false;                              ///< Set-up failed once; not retried.
  std::map<std::uint32_t, std::string> stallNames;  ///< CUPTI stall index -> name.
  std::vector<std::string> stallOrder;
  std::vector<std::uint32_t> stallIndices;
  std::unique_ptr<SamplingBuffer> configured;
  std::unique_ptr<SamplingBuffer> drain;
};

struct DeviceState {
  bool configured = false;
  bool failed = false;
  std::map<std::uint64_t, std::string> metricNames;  ///< CUPTI metric id -> name.
  std::vector<std::string> metricOrder;
};

/// Launch state carried from API enter to API exit on one thread.
struct PendingLaunch {
  bool active = false;
  bool selected = false;
  bool flushOnly = false;  ///< SASS metrics are on in this context: flush, then discard.
  CUcontext context = nullptr;
  PcEvidence evidence;
  std::string note;
  std::unique_lock<std::mutex> hold;
  std::chrono::steady_clock::time_point entered{};  ///< When the launch's enter callback ran.
};

struct State {
  fs::path dir;
  Mode mode = Mode::SassMetrics;
  std::vector<std::string> requestedMetrics;
  std::uint8_t granularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
  std::string granularityName = "gpu";
  std::set<std::string> kernels;
  std::uint32_t samplingPeriod = 0;
  size_t samplingPcs = 10000;
  std::uint64_t maxLaunches = ~0ull;
  std::uint64_t selectedCount = 0;
  bool verbose = false;
  bool sassAtContext = false;    ///< Enable SASS metrics when a context is created, not at launch.
  bool sassFlushInExit = false;  ///< Flush in the launch's own exit callback (not deferred).
  bool profilerInitialized = false;
  /// ARGUS_CUPTI_INIT=early: cuptiProfilerInitialize is to start on its own thread once cuInit
  /// has returned (startEarlyProfilerInit).
  /// Read without the mutex by every after-cuInit callback (only the first one starts it).
  std::atomic<bool> earlyProfilerInitWanted = false;
  /// That thread's result and how long it took. Invalid until it starts, and when it runs
  /// inline at the first configuration instead.
  std::shared_future<std::pair<CUptiResult, double>> earlyProfilerInit;
  bool earlyProfilerInitTimedOut = false;  ///< The wait for it gave up (every device then fails).
  bool metricsListed = false;
  CUpti_SubscriberHandle subscriber = nullptr;

  std::mutex launchMutex;  ///< Held from enter to exit of every profiled launch.
  /// Guards everything below; recursive because CUPTI may call back inside driver calls.
  std::recursive_mutex mutex;
  std::uint64_t nextSeq = 0;
  std::map<std::uint32_t, std::uint64_t> seqOfCorrelation;
  std::map<CUcontext, std::unique_ptr<ContextState>> contexts;
  std::map<int, DeviceState> devices;
  std::set<std::uint64_t> savedCubins;
  /// SASS metrics: the launch whose records a context still holds, flushed at the next launch,
  /// at context destruction or at exit (selected: its evidence; else its records are dropped).
  std::map<CUcontext, std::pair<bool, PcEvidence>> sassPending;
  /// PC sampling: selected launches by correlation id, kept to merge late records.
  std::map<std::uint32_t, PcEvidence> sampled;
  std::uint64_t discardedSamplingRecords = 0;
};

constexpr inject::Library kLibrary{"argus-cupti", "collecting nothing"};

State* gState = nullptr;  // Leaked on purpose: callbacks may run during process teardown.
// A state whose subscriber was abandoned: kept, since a callback already running may still read it.
State* gAbandoned = nullptr;
thread_local PendingLaunch tPending;

void reportError(const std::string& message) {
  reportTo(kLibrary.prefix, gState != nullptr ? gState->dir : std::filesystem::path(), message);
}

template <class Status>
bool check(Status status, const char* what) {
  return succeeded(status, what, reportError);
}

std::vector<std::string> splitList(const char* text) {
  std::vector<std::string> out;
  if (text == nullptr) return out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void writeEvidence(const PcEvidence& e) {
  const fs::path file = gState->dir / evidence::pcEvidenceFileName(e.seq);
  std::ofstream out(file, std::ios::trunc);
  out << evidence::encodePcEvidence(e);
  if (!out) reportError("cannot write " + file.string());
}

/// Fills each function's cubin_file when that cubin was saved.
void linkCubins(PcEvidence& e) {
  for (auto& f : e.functions) {
    f.cubinFile =
        gState->savedCubins.contains(f.cubinCrc) ? evidence::cubinFileName(f.cubinCrc) : "";
  }
}

// ---- cubins ------------------------------------------------------------------------------

void saveCubin(const CUpti_ModuleResourceData* module) {
  const VendorApi& api = vendor();
  if (module == nullptr || module->pCubin == nullptr || module->cubinSize == 0) return;
  if (api.cuptiGetCubinCrc == nullptr) {
    reportError("cuptiGetCubinCrc unavailable: cubins are not saved");
    return;
  }
  CUpti_GetCubinCrcParams params{};
  params.size = CUpti_GetCubinCrcParamsSize;
  params.cubinSize = module->cubinSize;
  params.cubin = module->pCubin;
  if (!check(api.cuptiGetCubinCrc(&params), "cuptiGetCubinCrc")) return;
  std::lock_guard lock(gState->mutex);
  if (!gState->savedCubins.insert(params.cubinCrc).second) return;
  const fs::path file = gState->dir / evidence::cubinFileName(params.cubinCrc);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(module->pCubin, static_cast<std::streamsize>(module->cubinSize));
  if (!out) reportError("cannot write " + file.string());
}

// ---- SASS metrics ------------------------------------------------------------------------

void listMetrics(const char* chip) {
  const VendorApi& api = vendor();
  if (gState->metricsListed || api.cuptiSassMetricsGetNumOfMetrics == nullptr ||
      api.cuptiSassMetricsGetMetrics == nullptr) {
    return;
  }
  gState->metricsListed = true;
  CUpti_SassMetrics_GetNumOfMetrics_Params count{};
  count.structSize = CUpti_SassMetrics_GetNumOfMetrics_Params_STRUCT_SIZE;
  count.pChipName = chip;
  if (!check(api.cuptiSassMetricsGetNumOfMetrics(&count), "cuptiSassMetricsGetNumOfMetrics")) {
    return;
  }
  std::vector<CUpti_SassMetrics_MetricDetails> details(count.numOfMetrics);
  CUpti_SassMetrics_GetMetrics_Params list{};
  list.structSize = CUpti_SassMetrics_GetMetrics_Params_STRUCT_SIZE;
  list.pChipName = chip;
  list.numOfMetrics = details.size();
  list.pMetricsList = details.data();
  if (!check(api.cuptiSassMetricsGetMetrics(&list), "cuptiSassMetricsGetMetrics")) return;
  std::ofstream out(gState->dir / "metrics.txt", std::ios::trunc);
  out << "# SASS metrics of chip " << chip << ": name <TAB> description\n";
  for (const auto& d : details) {
    out << (d.pMetricName ? d.pMetricName : "") << '\t'
        << (d.pMetricDescription ? d.pMetricDescription : "") << '\n';
  }
}

/// Appends the wall time of one set-up or collection phase to setup.jsonl ({"phase", "ms", "seq"}):
/// where a collection's added time goes (CUPTI's profiler set-up, the module's patching at the
/// first profiled launch). Nothing before initialisation.
void appendPhase(const std::string& phase, double ms, std::int64_t seq = -1) {
  if (gState == nullptr) return;
  json line = {{"phase", phase}, {"ms", ms}};
  if (seq >= 0) line["seq"] = seq;
  std::lock_guard lock(gState->mutex);
  appendLine(gState->dir / "setup.jsonl", line.dump());
}

/// appendPhase of the wall time from `start` to now.
void recordPhase(const std::string& phase, std::chrono::steady_clock::time_point start,
                 std::int64_t seq = -1) {
  appendPhase(
      phase,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
      seq);
}

/// recordPhase for the scope it lives in.
class PhaseTimer {
 public:
  explicit PhaseTimer(std::string phase, std::int64_t seq = -1)
      : phase_(std::move(phase)), seq_(seq), start_(std::chrono::steady_clock::now()) {}
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;
  ~PhaseTimer() { recordPhase(phase_, start_, seq_); }

 private:
  std::string phase_;
  std::int64_t seq_;
  std::chrono::steady_clock::time_point start_;
};

/// cuptiProfilerInitialize, whichever thread runs it (CUPTI_ERROR_NOT_SUPPORTED without it).
CUptiResult initializeProfiler() {
  if (vendor().cuptiProfilerInitialize == nullptr) return CUPTI_ERROR_NOT_SUPPORTED;
  CUpti_Profiler_Initialize_Params params{};
  params.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
  return vendor().cuptiProfilerInitialize(&params);
}

/// ARGUS_CUPTI_INIT=early: starts cuptiProfilerInitialize on its own thread, once. Called from
/// the first driver call that follows cuInit (kAfterInitCallbacks) or a context's creation,
/// never from InitializeInjection: started there, inside cuInit, it crashed the process with
/// SIGSEGV in 5 of 80 runs on the H200 (CUDA 13.0, driver 580; scripts/gpu/
/// cupti-init-stress.sh), against 0 of 80 inline.
void startEarlyProfilerInit() {
  // Later driver calls (the callbacks stay enabled) return here without taking the mutex, which
  // configureSassDevice may hold while it waits for the thread.
  if (!gState->earlyProfilerInitWanted.load()) return;
  std::lock_guard lock(gState->mutex);
  if (!gState->earlyProfilerInitWanted.exchange(false) || gState->earlyProfilerInit.valid()) return;
  try {
    gState->earlyProfilerInit =
        std::async(std::launch::async, [] {
          tInCallback = true;  // driver calls CUPTI makes on this thread are not the program's
          const auto start = std::chrono::steady_clock::now();
          const CUptiResult result = initializeProfiler();
          return std::pair{result, std::chrono::duration<double, std::milli>(
                                       std::chrono::steady_clock::now() - start)
                                       .count()};
        }).share();
  } catch (const std::system_error& e) {
    reportError(std::string("no thread for the early profiler initialisation (") + e.what() +
                "); it runs at the first configuration");
  }
}

/// cuptiSassMetricsSetConfig for `device`, once. False when it failed (reported once).
bool configureSassDevice(int device) {
  const VendorApi& api = vendor();
  DeviceState& d = gState->devices[device];
  if (d.configured || d.failed) return d.configured;
  d.failed = true;
  if (api.cuptiProfilerInitialize == nullptr || api.cuptiDeviceGetChipName == nullptr ||
      api.cuptiSassMetricsGetProperties == nullptr || api.cuptiSassMetricsSetConfig == nullptr ||
      api.cuptiSassMetricsEnable == nullptr || api.cuptiSassMetricsGetDataProperties == nullptr ||
      api.cuptiSassMetricsFlushData == nullptr) {
    reportError("this CUPTI (" + api.cuptiPath + ") has no SASS metrics API; collecting nothing");
    return false;
  }
  if (!gState->profilerInitialized) {
    gState->earlyProfilerInitWanted = false;  // no thread from now on
    if (gState->earlyProfilerInit.valid()) {
      const auto start = std::chrono::steady_clock::now();
      // The thread takes no lock of ours (its driver calls skip our callbacks: tInCallback), so
      // waiting here while holding gState->mutex is safe.
      // A driver lock held by this thread could still stall it: give up after a minute rather
      // than hang the program.
      if (gState->earlyProfilerInitTimedOut) return false;  // reported once
      if (gState->earlyProfilerInit.wait_for(std::chrono::minutes(1)) !=
          std::future_status::ready) {
        gState->earlyProfilerInitTimedOut = true;
        reportError(
            "cuptiProfilerInitialize, started at injection, did not finish within a "
            "minute; collecting nothing (ARGUS_CUPTI_INIT=inline runs it at the first "
            "configuration instead)");
        return false;
      }
      recordPhase("wait for the early cuptiProfilerInitialize", start);
      const auto [result, ms] = gState->earlyProfilerInit.get();
      appendPhase("cuptiProfilerInitialize (early, own thread)", ms);
      if (!check(result, "cuptiProfilerInitialize (early)")) return false;
    } else {
      const PhaseTimer timer("cuptiProfilerInitialize");
      if (!check(initializeProfiler(), "cuptiProfilerInitialize")) return false;
    }
    gState->profilerInitialized = true;
  }
  CUpti_Device_GetChipName_Params chip{};
  chip.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
  chip.deviceIndex = static_cast<size_t>(device);
  if (!check(api.cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName")) return false;
  {
    const PhaseTimer timer("list SASS metrics (metrics.txt)");
    listMetrics(chip.pChipName);
  }
  std::vector<CUpti_SassMetrics_Config> configs;
  for (const auto& name : gState->requestedMetrics) {
    CUpti_SassMetrics_GetProperties_Params props{};
    props.structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE;
    props.pChipName = chip.pChipName;
    props.pMetricName = name.c_str();
    if (!check(api.cuptiSassMetricsGetProperties(&props),
               ("cuptiSassMetricsGetProperties (" + name + "; metrics.txt lists the known ones)")
                   .c_str())) {
      continue;
    }
    configs.push_back({props.metric.metricId, gState->granularity});
    d.metricNames[props.metric.metricId] = name;
    d.metricOrder.push_back(name);
  }
  if (configs.empty()) {
    reportError("no usable SASS metric on device " + std::to_string(device) +
                "; collecting nothing");
    return false;
  }
  CUpti_SassMetricsSetConfig_Params set{};
  set.structSize = CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE;
  set.numOfMetricConfig = configs.size();
  set.pConfigs = configs.data();
  set.deviceIndex = static_cast<std::uint32_t>(device);
  const PhaseTimer timer("cuptiSassMetricsSetConfig");
  if (!check(api.cuptiSassMetricsSetConfig(&set), "cuptiSassMetricsSetConfig")) return false;
  d.failed = false;
  d.configured = true;
  return true;
}

/// CUDA device ordinal of `context` (current or not); 0 when it cannot be told.
int contextDevice(CUcontext context) {
  const VendorApi& api = vendor();
  std::uint32_t id = 0;
  if (api.cuptiGetDeviceId != nullptr && api.cuptiGetDeviceId(context, &id) == CUPTI_SUCCESS) {
    return static_cast<int>(id);
  }
  CUdevice device = 0;
  if (api.cuCtxGetDevice == nullptr || api.cuCtxGetDevice(&device) != CUDA_SUCCESS) return 0;
  return static_cast<int>(device);
}

ContextState& contextState(CUcontext context) {
  auto& slot = gState->contexts[context];
  if (!slot) slot = std::make_unique<ContextState>();
  return *slot;
}

/// SASS metrics on for `context` (the launch's, current): config of its device, then enable.
bool enableSass(CUcontext context, ContextState& c) {
  if (c.sassEnabled || c.failed) return c.sassEnabled;
  c.failed = true;
  c.device = contextDevice(context);
  if (!configureSassDevice(c.device)) return false;
  CUpti_SassMetricsEnable_Params enable{};
  enable.structSize = CUpti_SassMetricsEnable_Params_STRUCT_SIZE;
  enable.ctx = context;
  enable.enableLazyPatching = 1;
  const PhaseTimer timer("cuptiSassMetricsEnable");
  if (!check(vendor().cuptiSassMetricsEnable(&enable), "cuptiSassMetricsEnable")) return false;
  c.failed = false;
  c.sassEnabled = true;
  return true;
}

/// Takes every SASS metric record collected in `context` since the last flush into `e`.
bool flushSass(CUcontext context, const ContextState& c, PcEvidence* e, size_t& records) {
  const VendorApi& api = vendor();
  records = 0;
  CUpti_SassMetricsGetDataProperties_Params props{};
  props.structSize = CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE;
  props.ctx = context;
  if (!check(api.cuptiSassMetricsGetDataProperties(&props), "cuptiSassMetricsGetDataProperties")) {
    return false;
  }
  const size_t count = props.numOfPatchedInstructionRecords;
  const size_t instances = props.numOfInstances;
  if (count == 0 || instances == 0) return true;
  std::vector<CUpti_SassMetrics_Data> data(count);
  std::vector<CUpti_SassMetrics_InstanceValue> values(count * instances);
  for (size_t i = 0; i < count; ++i) {
    data[i].structSize = sizeof(CUpti_SassMetrics_Data);
    data[i].pInstanceValues = values.data() + i * instances;
  }
  CUpti_SassMetricsFlushData_Params flush{};
  flush.structSize = CUpti_SassMetricsFlushData_Params_STRUCT_SIZE;
  flush.ctx = context;
  flush.numOfPatchedInstructionRecords = count;
  flush.numOfInstances = instances;
  flush.pMetricsData = data.data();
  if (!check(api.cuptiSassMetricsFlushData(&flush), "cuptiSassMetricsFlushData")) return false;
  records = count;

  // (function, crc) -> pc -> metric -> per-instance values
  using PerPc = std::map<std::uint64_t, std::map<std::string, std::vector<std::uint64_t>>>;
  std::map<std::pair<std::string, std::uint64_t>, std::pair<std::uint32_t, PerPc>> functions;
  const DeviceState& device = gState->devices[c.device];
  for (auto& record : data) {
    const std::string name = record.functionName ? record.functionName : "";
    // CUPTI allocates the name for the caller (its sample frees it).
    std::free(const_cast<char*>(record.functionName));
    if (e == nullptr) continue;
    auto& [index, perPc] = functions[{name, record.cubinCrc}];
    index = record.functionIndex;
    for (size_t j = 0; j < instances; ++j) {
      const auto& v = record.pInstanceValues[j];
      auto it = device.metricNames.find(v.metricId);
      const std::string metric =
          it != device.metricNames.end() ? it->second : "metric_id_" + std::to_string(v.metricId);
      auto& slots = perPc[record.pcOffset][metric];
      slots.resize(instances, 0);
      slots[j] += v.value;
    }
  }
  if (e == nullptr) return true;
  e->granularity = gState->granularityName;
  e->instances = static_cast<std::uint32_t>(instances);
  e->metrics = device.metricOrder;
  for (auto& [key, entry] : functions) {
    PcFunction f;
    f.name = key.first;
    f.cubinCrc = key.second;
    f.functionIndex = entry.first;
    for (auto& [pc, metrics] : entry.second) {
      PcRecord r;
      r.pc = pc;
      for (auto& [metric, slots] : metrics) {
        evidence::PcMetric m;
        for (auto v : slots) m.total += v;
        if (instances > 1) m.perInstance = std::move(slots);
        r.metrics.emplace(metric, std::move(m));
      }
      f.pcs.push_back(std::move(r));
    }
    e->functions.push_back(std::move(f));
  }
  return true;
}

void disableSass(CUcontext context, ContextState& c) {
  if (!c.sassEnabled || vendor().cuptiSassMetricsDisable == nullptr) return;
  c.sassEnabled = false;
  CUpti_SassMetricsDisable_Params disable{};
  disable.structSize = CUpti_SassMetricsDisable_Params_STRUCT_SIZE;
  disable.ctx = context;
  if (check(vendor().cuptiSassMetricsDisable(&disable), "cuptiSassMetricsDisable") &&
      disable.numOfDroppedRecords > 0) {
    reportError(std::to_string(disable.numOfDroppedRecords) +
                " SASS metric records dropped at disable (launches not flushed)");
  }
}

/// Flushes the records of the launch `context` still holds (see State::sassPending) and writes
/// its file when it was selected.
void flushPendingSass(CUcontext context, ContextState& c) {
  auto it = gState->sassPending.find(context);
  if (it == gState->sassPending.end()) return;
  auto [selected, e] = std::move(it->second);
  gState->sassPending.erase(it);
  size_t records = 0;
  bool ok = false;
  {
    const PhaseTimer timer("flush SASS metric records", static_cast<std::int64_t>(e.seq));
    ok = flushSass(context, c, selected ? &e : nullptr, records);
  }
  if (!selected) return;
  if (!ok) e.note = "SASS metrics flush failed (errors.txt)";
  if (records == 0) e.note = "CUPTI returned no SASS records for this launch";
  bool anyValue = false;
  for (const auto& f : e.functions) {
    for (const auto& r : f.pcs) {
      for (const auto& [name, m] : r.metrics) anyValue = anyValue || m.total != 0;
    }
  }
  if (records > 0 && !anyValue) e.note = "every SASS metric value is 0";
  linkCubins(e);
  writeEvidence(e);
}

// ---- PC sampling -------------------------------------------------------------------------

bool enableSampling(CUcontext context, ContextState& c) {
  const VendorApi& api = vendor();
  if (c.samplingEnabled || c.failed) return c.samplingEnabled;
  c.failed = true;
  if (api.cuptiPCSamplingEnable == nullptr || api.cuptiPCSamplingDisable == nullptr ||
      api.cuptiPCSamplingSetConfigurationAttribute == nullptr ||
      api.cuptiPCSamplingGetNumStallReasons == nullptr ||
      api.cuptiPCSamplingGetStallReasons == nullptr || api.cuptiPCSamplingGetData == nullptr) {
    reportError("this CUPTI (" + api.cuptiPath + ") has no PC sampling API; collecting nothing");
    return false;
  }
  CUpti_PCSamplingEnableParams enable{};
  enable.size = CUpti_PCSamplingEnableParamsSize;
  enable.ctx = context;
  if (!check(api.cuptiPCSamplingEnable(&enable), "cuptiPCSamplingEnable")) return false;
  c.samplingEnabled = true;  // From here on, disable at the end whatever else fails.

  size_t reasonCount = 0;
  CUpti_PCSamplingGetNumStallReasonsParams num{};
  num.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
  num.ctx = context;
  num.numStallReasons = &reasonCount;
  if (!check(api.cuptiPCSamplingGetNumStallReasons(&num), "cuptiPCSamplingGetNumStallReasons")) {
    return false;
  }
  std::vector<std::vector<char>> names(reasonCount,
                                       std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE, '\0'));
  std::vector<char*> namePointers;
  for (auto& n : names) namePointers.push_back(n.data());
  c.stallIndices.assign(reasonCount, 0);
  CUpti_PCSamplingGetStallReasonsParams reasons{};
  reasons.size = CUpti_PCSamplingGetStallReasonsParamsSize;
  reasons.ctx = context;
  reasons.numStallReasons = reasonCount;
  reasons.stallReasonIndex = c.stallIndices.data();
  reasons.stallReasons = namePointers.data();
  if (!check(api.cuptiPCSamplingGetStallReasons(&reasons), "cuptiPCSamplingGetStallReasons")) {
    return false;
  }
  for (size_t i = 0; i < reasonCount; ++i) {
    const std::string name(names[i].data());
    c.stallNames[c.stallIndices[i]] = name;
    c.stallOrder.push_back(name);
  }
  c.configured = std::make_unique<SamplingBuffer>();
  c.configured->allocate(gState->samplingPcs, reasonCount);
  c.drain = std::make_unique<SamplingBuffer>();
  c.drain->allocate(gState->samplingPcs, reasonCount);

  std::vector<CUpti_PCSamplingConfigurationInfo> attributes;
  CUpti_PCSamplingConfigurationInfo a{};
  a.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
  a.attributeData.collectionModeData.collectionMode =
      CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
  attributes.push_back(a);
  a = {};
  a.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
  a.attributeData.stallReasonData.stallReasonCount = reasonCount;
  a.attributeData.stallReasonData.pStallReasonIndex = c.stallIndices.data();
  attributes.push_back(a);
  a = {};
  a.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
  a.attributeData.samplingDataBufferData.samplingDataBuffer = &c.configured->data;
  attributes.push_back(a);
  if (gState->samplingPeriod != 0) {
    a = {};
    a.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
    a.attributeData.samplingPeriodData.samplingPeriod = gState->samplingPeriod;
    attributes.push_back(a);
  }
  CUpti_PCSamplingConfigurationInfoParams config{};
  config.size = CUpti_PCSamplingConfigurationInfoParamsSize;
  config.ctx = context;
  config.numAttributes = attributes.size();
  config.pPCSamplingConfigurationInfo = attributes.data();
  if (!check(api.cuptiPCSamplingSetConfigurationAttribute(&config),
             "cuptiPCSamplingSetConfigurationAttribute")) {
    for (const auto& attribute : attributes) {
      if (attribute.attributeStatus != CUPTI_SUCCESS) {
        reportError("PC sampling attribute " + std::to_string(attribute.attributeType) +
                    " rejected: " + vendor().describe(attribute.attributeStatus));
      }
    }
    return false;
  }
  c.failed = false;
  return true;
}

/// Moves the PC records of `data` into the evidence of their launches; returns the launches
/// touched. Records of launches not selected are counted and dropped.
std::set<std::uint32_t> consumeSamples(const ContextState& c, const CUpti_PCSamplingData& data,
                                       std::uint32_t attributeTotalsTo) {
  std::set<std::uint32_t> touched;
  for (size_t i = 0; i < data.totalNumPcs && i < data.collectNumPcs; ++i) {
    const CUpti_PCSamplingPCData& row = data.pPcData[i];
    auto it = gState->sampled.find(row.correlationId);
    if (it == gState->sampled.end()) {
      ++gState->discardedSamplingRecords;
      continue;
    }
    PcEvidence& e = it->second;
    touched.insert(row.correlationId);
    // The name string is shared between records (CUPTI: free it after all processing); it is
    // left allocated, a few bytes per function.
    const std::string name = row.functionName ? row.functionName : "";
    auto f = std::find_if(e.functions.begin(), e.functions.end(), [&](const PcFunction& x) {
      return x.name == name && x.cubinCrc == row.cubinCrc;
    });
    if (f == e.functions.end()) {
      e.functions.push_back(PcFunction{name, row.cubinCrc, "", row.functionIndex, {}});
      f = std::prev(e.functions.end());
    }
    auto p = std::lower_bound(f->pcs.begin(), f->pcs.end(), row.pcOffset,
                              [](const PcRecord& r, std::uint64_t pc) { return r.pc < pc; });
    if (p == f->pcs.end() || p->pc != row.pcOffset) {
      PcRecord record;
      record.pc = row.pcOffset;
      p = f->pcs.insert(p, std::move(record));
    }
    for (size_t s = 0; s < row.stallReasonCount; ++s) {
      const auto& reason = row.stallReason[s];
      auto n = c.stallNames.find(reason.pcSamplingStallReasonIndex);
      const std::string stall =
          n != c.stallNames.end()
              ? n->second
              : "stall_index_" + std::to_string(reason.pcSamplingStallReasonIndex);
      if (reason.samples != 0) p->stalls[stall] += reason.samples;
    }
  }
  if (auto it = gState->sampled.find(attributeTotalsTo); it != gState->sampled.end()) {
    auto& s = it->second.sampling;
    s.totalSamples += data.totalSamples;
    s.droppedSamples += data.droppedSamples;
    s.nonUserSamples += data.nonUsrKernelsTotalSamples;
    s.hardwareBufferFull = s.hardwareBufferFull || data.hardwareBufferFull != 0;
    touched.insert(attributeTotalsTo);
  }
  return touched;
}

/// Writes the files of the sampled launches in `touched`.
void writeSampled(const ContextState& c, const std::set<std::uint32_t>& touched) {
  for (auto correlation : touched) {
    auto it = gState->sampled.find(correlation);
    if (it == gState->sampled.end()) continue;
    it->second.stallReasons = c.stallOrder;
    if (!it->second.functions.empty()) it->second.note.clear();
    linkCubins(it->second);
    writeEvidence(it->second);
  }
}

/// Takes what CUPTI put in the configured buffer (at range ends and at disable).
std::set<std::uint32_t> takeConfigured(ContextState& c, std::uint32_t attributeTotalsTo) {
  std::set<std::uint32_t> touched;
  if (c.configured && c.configured->data.totalNumPcs > 0) {
    touched = consumeSamples(c, c.configured->data, attributeTotalsTo);
    c.configured->reset(c.stallOrder.size());
  }
  return touched;
}

/// cuptiPCSamplingGetData until CUPTI has nothing left, plus whatever CUPTI put in the configured
/// buffer; writes the files of the launches that got records.
void drainSamples(CUcontext context, ContextState& c, std::uint32_t attributeTotalsTo) {
  if (!c.samplingEnabled || !c.drain) return;
  std::set<std::uint32_t> touched;
  for (int round = 0; round < 100000; ++round) {
    c.drain->reset(c.stallOrder.size());
    CUpti_PCSamplingGetDataParams get{};
    get.size = CUpti_PCSamplingGetDataParamsSize;
    get.ctx = context;
    get.pcSamplingData = &c.drain->data;
    const CUptiResult status = vendor().cuptiPCSamplingGetData(&get);
    if (status != CUPTI_SUCCESS) {
      reportError(std::string("cuptiPCSamplingGetData failed: ") + vendor().describe(status) +
                  (c.drain->data.hardwareBufferFull
                       ? " (hardware buffer full: raise ARGUS_PC_SAMPLING_PERIOD)"
                       : ""));
      break;
    }
    touched.merge(consumeSamples(c, c.drain->data, attributeTotalsTo));
    if (c.drain->data.remainingNumPcs == 0) break;
  }
  touched.merge(takeConfigured(c, attributeTotalsTo));
  writeSampled(c, touched);
}

void disableSampling(CUcontext context, ContextState& c) {
  if (!c.samplingEnabled) return;
  drainSamples(context, c, 0);
  c.samplingEnabled = false;
  CUpti_PCSamplingDisableParams disable{};
  disable.size = CUpti_PCSamplingDisableParamsSize;
  disable.ctx = context;
  check(vendor().cuptiPCSamplingDisable(&disable), "cuptiPCSamplingDisable");
  // Disable copies the records CUPTI still held into the configured buffer.
  writeSampled(c, takeConfigured(c, 0));
}

// ---- launches ----------------------------------------------------------------------------

/// Driver calls a program makes after cuInit has returned and before (or while) it gets its
/// first context: the first of them starts the early profiler initialisation.
constexpr CUpti_CallbackId kAfterInitCallbacks[] = {
    CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount,         CUPTI_DRIVER_TRACE_CBID_cuDeviceGet,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRetain, CUPTI_DRIVER_TRACE_CBID_cuCtxCreate,
    CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v2,           CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v3,
    CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v4,
};

void onLaunchEnter(const CUpti_CallbackData* cb, const LaunchArgs& args) {
  PendingLaunch& p = tPending;
  p = PendingLaunch{};
  p.active = true;
  p.entered = std::chrono::steady_clock::now();
  PcEvidence& e = p.evidence;
  e.collector = gState->mode == Mode::SassMetrics ? "cupti_sass_metrics" : "cupti_pc_sampling";
  e.correlation = cb->correlationId;
  e.kernel = functionName(args.f);
  e.api = args.api;
  std::memcpy(e.grid, args.grid, sizeof args.grid);
  std::memcpy(e.block, args.block, sizeof args.block);
  CUcontext context = cb->context;
  if (context == nullptr) vendor().cuCtxGetCurrent(&context);
  p.context = context;

  {
    std::lock_guard lock(gState->mutex);
    e.seq = gState->nextSeq++;
    gState->seqOfCorrelation[cb->correlationId] = e.seq;
    p.selected = (gState->kernels.empty() || gState->kernels.contains(e.kernel)) &&
                 gState->selectedCount < gState->maxLaunches;
    const ContextState& c = contextState(context);
    p.flushOnly = !p.selected && (c.sassEnabled || c.samplingEnabled);
  }
  // Profiled launches run one at a time, enter..exit; taken before the state lock (the exit of
  // the launch in flight needs that lock).
  if (!p.selected && !p.flushOnly) return;
  p.hold = std::unique_lock(gState->launchMutex);
  std::lock_guard lock(gState->mutex);
  ContextState& c = contextState(context);
  if (gState->mode == Mode::SassMetrics) {
    flushPendingSass(context, c);  // The previous launch's records, before this one adds any.
    if (p.selected && !enableSass(context, c)) {
      p.selected = false;
      p.note = "SASS metrics could not be enabled (errors.txt)";
    }
    p.flushOnly = !p.selected && c.sassEnabled;
  } else {
    if (p.selected && !enableSampling(context, c)) {
      p.selected = false;
      p.note = "PC sampling could not be enabled (errors.txt)";
    }
    p.flushOnly = !p.selected && c.samplingEnabled;
  }
  e.device = c.device;
  if (p.selected) {
    ++gState->selectedCount;
    if (gState->mode == Mode::PcSampling) {
      e.sampling.periodLog2 = gState->samplingPeriod;
      gState->sampled[e.correlation] = e;
    }
  }
  if (!p.selected && !p.flushOnly) p.hold.unlock();
}

void onLaunchExit(const CUpti_CallbackData* cb) {
  const VendorApi& api = vendor();
  PendingLaunch& p = tPending;
  if (!p.active) return;
  p.active = false;
  PcEvidence& e = p.evidence;
  const CUresult launched = cb->functionReturnValue != nullptr
                                ? *static_cast<const CUresult*>(cb->functionReturnValue)
                                : CUDA_SUCCESS;
  if (launched != CUDA_SUCCESS) p.note = "launch failed: " + api.describe(launched);
  std::string file;
  // Enter callback (flush, enable) + the launch call itself (lazy patching happens here).
  if (p.selected)
    recordPhase("profiled launch: enter to exit callback", p.entered,
                static_cast<std::int64_t>(e.seq));
  if (p.selected || p.flushOnly) {
    // The context is the launch's; make sure the data of this launch is complete.
    {
      const PhaseTimer timer("cuCtxSynchronize after a profiled launch",
                             static_cast<std::int64_t>(e.seq));
      check(api.cuCtxSynchronize(), "cuCtxSynchronize (after profiled launch)");
    }
    std::lock_guard lock(gState->mutex);
    ContextState& c = contextState(p.context);
    if (gState->mode == Mode::SassMetrics) {
      // CUPTI's counts of a launch were seen to be 0 when flushed inside that launch's own exit
      // callback, so by default they are flushed at the next flush point (flushPendingSass).
      gState->sassPending[p.context] = {p.selected, e};
      if (gState->sassFlushInExit) flushPendingSass(p.context, c);
      if (p.selected) file = evidence::pcEvidenceFileName(e.seq);
    } else {
      drainSamples(p.context, c, p.selected ? e.correlation : 0);
      if (p.selected) {
        auto it = gState->sampled.find(e.correlation);
        if (it != gState->sampled.end() && it->second.functions.empty()) {
          // Written now so that every selected launch has a file; records may still come.
          it->second.stallReasons = c.stallOrder;
          it->second.note = "no PC samples yet at launch exit (short kernel or late records)";
          writeEvidence(it->second);
        }
        file = evidence::pcEvidenceFileName(e.seq);
      }
    }
  }
  if (p.hold.owns_lock()) p.hold.unlock();
  json line = {
      {"seq", e.seq},       {"correlation", e.correlation}, {"kernel", e.kernel}, {"api", e.api},
      {"device", e.device}, {"selected", p.selected},       {"file", file},       {"note", p.note}};
  const std::string text = line.dump();
  {
    std::lock_guard lock(gState->mutex);
    appendLine(gState->dir / "launches.jsonl", text);
  }
  if (gState->verbose) std::fprintf(stderr, "argus-cupti: %s\n", text.c_str());
}

void onResource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) {
  if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
    saveCubin(static_cast<const CUpti_ModuleResourceData*>(data->resourceDescriptor));
    return;
  }
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) startEarlyProfilerInit();
  std::lock_guard lock(gState->mutex);
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    ContextState& c = contextState(data->context);
    c.device = contextDevice(data->context);
    if (gState->mode == Mode::PcSampling) {
      enableSampling(data->context, c);
    } else if (gState->sassAtContext) {
      enableSass(data->context, c);
    }
  } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    auto it = gState->contexts.find(data->context);
    if (it == gState->contexts.end()) return;
    const PhaseTimer timer("context destruction: flush and disable");
    disableSampling(data->context, *it->second);
    flushPendingSass(data->context, *it->second);
    disableSass(data->context, *it->second);
    gState->contexts.erase(it);
  }
}

/// A driver call's callback (the skeleton's dispatcher calls it while the library collects).
void onDriverCall(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (std::ranges::find(kAfterInitCallbacks, cbid) != std::end(kAfterInitCallbacks)) {
    if (cb->callbackSite == CUPTI_API_ENTER) startEarlyProfilerInit();
  } else if (cb->callbackSite == CUPTI_API_ENTER) {
    LaunchArgs args;
    if (launchArgs(cbid, cb->functionParams, args)) onLaunchEnter(cb, args);
  } else {
    onLaunchExit(cb);
  }
}

const inject::Callbacks kCallbacks{.active = [] { return gState != nullptr; },
                                   .driver = onDriverCall,
                                   .resource = onResource,
                                   .report = reportError};

void atExit() {
  if (gState == nullptr) return;
  tInCallback = true;  // Calls below must not re-enter our callbacks.
  const PhaseTimer timer("exit handler: flush");
  // A program that exits before its first configuration must not tear CUPTI down under the
  // early profiler initialisation; none starts from here on.
  std::shared_future<std::pair<CUptiResult, double>> early;
  {
    std::lock_guard lock(gState->mutex);
    gState->earlyProfilerInitWanted = false;
    if (!gState->earlyProfilerInitTimedOut) early = gState->earlyProfilerInit;
  }
  if (early.valid()) (void)early.wait_for(std::chrono::seconds(10));
  {
    std::lock_guard lock(gState->mutex);
    for (auto& [context, c] : gState->contexts) {
      disableSampling(context, *c);
      flushPendingSass(context, *c);
    }
    if (gState->discardedSamplingRecords > 0) {
      appendLine(gState->dir / "errors.txt",
                 "argus-cupti: note: " + std::to_string(gState->discardedSamplingRecords) +
                     " PC sampling records of launches not selected were dropped");
    }
  }
  inject::flushActivity();
}

int initialize() {
  const auto dir = inject::openOutputDir(kLibrary, "ARGUS_OUT_DIR",
                                         {"launches.jsonl", "kernels.jsonl", "errors.txt"});
  if (!dir) return 1;
  // Owned here until CUPTI may call back into it: a failure before that frees it.
  auto owned = std::make_unique<State>();
  State* state = owned.get();
  state->dir = *dir;
  gState = state;
  const char* metrics = std::getenv("ARGUS_SASS_METRICS");
  const bool sampling = envNumber("ARGUS_PC_SAMPLING", 0) != 0;
  const bool sass = metrics != nullptr && *metrics != '\0';
  if (sass == sampling) {
    reportError(sass ? "ARGUS_SASS_METRICS and ARGUS_PC_SAMPLING are both set; they perturb each "
                       "other and need separate runs; collecting nothing"
                     : "set ARGUS_SASS_METRICS=<metrics> or ARGUS_PC_SAMPLING=1; collecting "
                       "nothing");
    gState = nullptr;
    return 1;
  }
  state->mode = sass ? Mode::SassMetrics : Mode::PcSampling;
  if (sass) {
    const std::string list = metrics;
    state->requestedMetrics = list == "1" || list == "default"
                                  ? std::vector<std::string>{"smsp__sass_inst_executed",
                                                             "smsp__sass_thread_inst_executed"}
                                  : splitList(metrics);
  }
  if (const char* g = std::getenv("ARGUS_SASS_GRANULARITY"); g != nullptr && *g != '\0') {
    const std::string text = g;
    if (text == "gpu") {
      state->granularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
    } else if (text == "smsp") {
      state->granularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_SMSP;
    } else if (text == "sm") {
      state->granularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_SM;
    } else if (text != "gpu") {
      reportError("ARGUS_SASS_GRANULARITY=" + text + " is not gpu, sm or smsp; using gpu");
    }
    state->granularityName = state->granularity == CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU ? "gpu"
                             : state->granularity == CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_SMSP
                                 ? "smsp"
                                 : "sm";
  }
  for (auto& k : splitList(std::getenv("ARGUS_PC_KERNELS"))) state->kernels.insert(k);
  state->samplingPeriod = static_cast<std::uint32_t>(envNumber("ARGUS_PC_SAMPLING_PERIOD", 0));
  if (state->samplingPeriod != 0 && (state->samplingPeriod < 5 || state->samplingPeriod > 31)) {
    reportError("ARGUS_PC_SAMPLING_PERIOD must be 5..31; using CUPTI's default");
    state->samplingPeriod = 0;
  }
  state->samplingPcs = std::max<size_t>(envNumber("ARGUS_PC_SAMPLING_PCS", 10000), 16);
  state->maxLaunches = envNumber("ARGUS_PC_MAX_LAUNCHES", ~0ull);
  state->verbose = envNumber("ARGUS_PC_VERBOSE", 0) != 0;
  if (const char* at = std::getenv("ARGUS_SASS_ENABLE_AT"); at != nullptr) {
    state->sassAtContext = std::string(at) == "context";
  }
  if (const char* flush = std::getenv("ARGUS_SASS_FLUSH"); flush != nullptr) {
    state->sassFlushInExit = std::string(flush) == "launch";
  }

  VendorApi& api = vendor();
  if (!inject::loadVendor(kLibrary, reportError)) {
    gState = nullptr;
    return 1;
  }
  // CUPTI's profiler initialisation takes 80-100 ms on the H200 (CUDA 13.0, driver 580), most
  // of a SASS-metrics collection's added time (bench/pc_overhead). It needs no context, so it
  // starts at the program's first driver call after cuInit, before any callback can configure a
  // device, on its own thread, and overlaps the program's context creation and host set-up; the
  // first configuration waits for it. ARGUS_CUPTI_INIT=inline runs it there instead.
  const char* initMode = std::getenv("ARGUS_CUPTI_INIT");
  const std::string init = initMode == nullptr ? "early" : initMode;
  if (init != "early" && init != "inline")
    reportError("ARGUS_CUPTI_INIT=" + init + " is not early or inline; using early");
  state->earlyProfilerInitWanted = sass && init != "inline";
  bool ok = true;
  const auto subscriber = inject::subscribe(kLibrary, &kCallbacks, ok);
  if (!subscriber) {
    gState = nullptr;
    return 1;
  }
  state->subscriber = *subscriber;
  gState = owned.release();  // from here on the process keeps it
  ok = inject::enableLaunchCallbacks(state->subscriber, reportError) && ok;
  // Best effort: without these callbacks the initialisation runs inline at the first
  // configuration (or at context creation, whose callback is enabled anyway).
  if (state->earlyProfilerInitWanted) {
    for (const CUpti_CallbackId cbid : kAfterInitCallbacks)
      if (api.cuptiEnableCallback(1, state->subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid) !=
          CUPTI_SUCCESS)
        reportError("cuptiEnableCallback (after cuInit, cbid " + std::to_string(cbid) +
                    ") failed; the profiler initialisation starts at context creation");
  }
  if (!ok) {
    gAbandoned = state;
    gState = nullptr;
    inject::abandon(kLibrary, state->subscriber, reportError);
    return 1;
  }
  // Kernel durations from CUPTI activity records, for PC sampling only. Measured on the H200
  // (CUDA 13.0, driver 580): with CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL enabled every SASS metric
  // value came back 0 (records for every PC, kernel patched); without it the per-PC counts sum
  // to ncu's smsp__inst_executed.sum exactly. A patched kernel's duration means nothing anyway.
  // A launch's kernels are kept in the map (not forgotten once written): its evidence file is
  // written later.
  if (!sass && envNumber("ARGUS_PC_KERNEL_TIMES", 1) != 0 &&
      !inject::recordKernels(
          {&state->mutex, &state->seqOfCorrelation, nullptr, state->dir, /*forget=*/false},
          reportError) &&
      inject::activityApiPresent())
    reportError("no kernels.jsonl");
  std::atexit(atExit);
  if (state->verbose) {
    std::fprintf(stderr, "argus-cupti: %s into %s (CUPTI %s)\n",
                 sass ? "SASS metrics" : "PC sampling", state->dir.c_str(), api.cuptiPath.c_str());
  }
  return 1;
}

/// initialize, its wall time recorded as the phase InitializeInjection.
int initializeTimed() {
  const auto start = std::chrono::steady_clock::now();
  const int result = initialize();
  recordPhase("InitializeInjection", start);
  return result;
}

}  // namespace
}  // namespace argus::cupti_sass

/// Called by the CUDA driver (CUDA_INJECTION64_PATH) during cuInit. Always returns 1: a problem
/// disables collection and is reported, it never fails the program's CUDA initialisation.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  return argus::inject::initializeOnce(argus::cupti_sass::kLibrary,
                                       argus::cupti_sass::initializeTimed);
}
