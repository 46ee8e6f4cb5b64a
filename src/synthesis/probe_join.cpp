#include "argus/synthesis/probe_join.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

namespace argus::synthesis {
namespace {

using json = nlohmann::json;

/// (launch, CTA, warp): the coordinates an occurrence is joined on within one iteration.
using Key = std::tuple<size_t, uint32_t, uint32_t>;

json statsJson(const trace::DurationStats& s) {
  return {{"count", s.count}, {"median", s.median}, {"p95", s.p95},
          {"min", s.min},     {"max", s.max},       {"mean", s.mean}};
}

std::optional<uint32_t> regionIndex(const trace::TraceMap& map, const std::string& id) {
  for (const auto& r : map.regions)
    if (r.id == id) return r.index;
  return std::nullopt;
}

/// Durations per key of region `id` in iteration `iteration` (several occurrences of one key are
/// summed: a region entered twice by one warp in one iteration).
Result<std::map<Key, uint64_t>> collect(const std::vector<TracedRun>& runs, const std::string& id,
                                        uint32_t iteration, std::string_view what) {
  std::map<Key, uint64_t> out;
  for (size_t launch = 0; launch < runs.size(); ++launch) {
    const TracedRun& run = runs[launch];
    if (run.trace == nullptr || run.map == nullptr)
      return fail("synthesis",
                  fmt::format("probe_join: {} launch {} has no trace or map", what, launch));
    auto index = regionIndex(*run.map, id);
    if (!index) {
      return fail("synthesis", fmt::format("probe_join: {} launch {}: region id {} is not in the "
                                           "trace map of `{}`; was the right variant traced?",
                                           what, launch, id, run.map->kernel));
    }
    for (const trace::Occurrence& o : run.trace->occurrences) {
      if (o.region != *index || o.iteration != iteration) continue;
      out[Key{launch, o.cta, o.warp}] += o.duration();
    }
  }
  return out;
}

double median(std::vector<int64_t> v) {
  std::ranges::sort(v);
  const size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? static_cast<double>(v[n / 2])
                    : (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2.0;
}

}  // namespace

Result<json> probeJoin(const ProbeJoinRequest& request) {
  const json& p = request.probe;
  auto field = [&](const json& j, const char* key) -> const json* {
    auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
  };
  const json* region = p.is_object() ? field(p, "region") : nullptr;
  const json* iterRegion = p.is_object() ? field(p, "iteration_region") : nullptr;
  const json* iterationJson = p.is_object() ? field(p, "iteration") : nullptr;
  if (region == nullptr || !region->contains("id") || iterRegion == nullptr ||
      !iterRegion->contains("id") || iterationJson == nullptr ||
      !iterationJson->is_number_integer()) {
    return fail("synthesis",
                "probe_join: the probe description needs region.id, iteration_region.id and "
                "iteration (insert_forced_wait's statistics[\"probe\"])");
  }
  const std::string probeId = (*region)["id"].get<std::string>();
  const std::string iterId = (*iterRegion)["id"].get<std::string>();
  const auto iteration = static_cast<uint32_t>(iterationJson->get<int64_t>());
  if (request.probeRuns.empty() || request.referenceRuns.empty())
    return fail("synthesis", "probe_join: needs at least one probe and one reference launch");

  // One time base across both runs: durations of different units never mix.
  const trace::TimeBase base = request.probeRuns.front().map != nullptr
                                   ? request.probeRuns.front().map->timeBase
                                   : trace::TimeBase::GlobalTimer;
  for (const auto* runs : {&request.probeRuns, &request.referenceRuns})
    for (const TracedRun& r : *runs)
      if (r.map != nullptr && r.map->timeBase != base)
        return fail("synthesis",
                    "probe_join: probe and reference traces use different time "
                    "bases; trace both with the same time_base");

  auto latency = collect(request.probeRuns, probeId, iteration, "probe");
  if (!latency) return std::unexpected(latency.error());
  if (latency->empty()) {
    return fail("synthesis",
                fmt::format("probe_join: the probe run recorded no occurrence of the probe region "
                            "{} in iteration {}; was the probe traced with scope iter={}?",
                            probeId, iteration, iteration));
  }
  auto probeIter = collect(request.probeRuns, iterId, iteration, "probe");
  if (!probeIter) return std::unexpected(probeIter.error());
  auto refIter = collect(request.referenceRuns, iterId, iteration, "reference");
  if (!refIter) return std::unexpected(refIter.error());

  std::vector<uint64_t> latencies;
  std::vector<uint64_t> probeDurations;
  std::vector<uint64_t> refDurations;
  std::vector<int64_t> exposed;
  size_t unmatched = 0;
  for (const auto& [key, d] : *latency) {
    latencies.push_back(d);
    auto pi = probeIter->find(key);
    auto ri = refIter->find(key);
    if (pi == probeIter->end() || ri == refIter->end()) {
      ++unmatched;
      continue;
    }
    probeDurations.push_back(pi->second);
    refDurations.push_back(ri->second);
    exposed.push_back(static_cast<int64_t>(pi->second) - static_cast<int64_t>(ri->second));
  }
  if (exposed.empty()) {
    return fail("synthesis",
                fmt::format("probe_join: no (launch, CTA, warp) that recorded the probe in "
                            "iteration {} recorded the iteration region {} in both runs",
                            iteration, iterId));
  }
  const trace::DurationStats lat = trace::durationStats(latencies);
  const double exposedMedian = median(exposed);
  const double rawSlack = lat.median - exposedMedian;
  const auto [minExposed, maxExposed] = std::ranges::minmax(exposed);

  json out;
  out["op"] = p.value("op", "");
  out["kernel"] = p.value("kernel", "");
  out["iteration"] = iteration;
  out["unit"] = base == trace::TimeBase::SmClock ? "cycles" : "ns";
  out["probe_region"] = *region;
  out["iteration_region"] = *iterRegion;
  out["latency"] = statsJson(lat);
  out["iteration_probe"] = statsJson(trace::durationStats(probeDurations));
  out["iteration_reference"] = statsJson(trace::durationStats(refDurations));
  out["joined"] = exposed.size();
  out["unmatched"] = unmatched;
  if (p.value("iteration_source", "region") == "loop_trip") {
    // The op is issued after the iteration region ends, in the same loop trip (Triton's
    // pipeliner): the probe's wait is outside the region, so the region's durations cannot show
    // what the wait exposed. Only the latency is derived.
    out["exposed"] = nullptr;
    out["slack"] = nullptr;
    out["slack_note"] = fmt::format(
        "the op is issued after `{}` ends, in the same loop trip, so its wait is outside the "
        "region and no exposed time or slack against it is derived",
        iterRegion->value("path", iterId));
  } else {
    out["exposed"] = {{"median", exposedMedian}, {"min", minExposed}, {"max", maxExposed}};
    out["slack"] = std::max(0.0, rawSlack);
    out["slack_clamped"] = rawSlack < 0;
  }
  out["qualification"] = "derived";
  out["provenance"] = nullptr;
  out["method"] = p.value("completion_method", "");
  return out;
}

namespace {

/// The CUPTI-clock time of `process`'s first `event`, if it has one.
std::optional<std::uint64_t> eventTime(const ProbeProcess& process, std::string_view event) {
  for (const auto& [name, ns] : process.turnEvents)
    if (name == event) return ns;
  return std::nullopt;
}

/// `epochNs` of `process`'s system clock on its CUPTI clock; nullopt when that falls before
/// CUPTI's clock starts (a clock that is not the host's: nothing can be placed then).
std::optional<std::uint64_t> onCuptiClock(const ProbeProcess& process, std::uint64_t epochNs) {
  const std::int64_t ns = static_cast<std::int64_t>(epochNs) - *process.epochMinusCupti;
  if (ns < 0) return std::nullopt;
  return static_cast<std::uint64_t>(ns);
}

/// probeIsolation's `neighbours` (see probe_join.h).
nlohmann::json probeNeighbours(const std::vector<ProbeProcess>& processes) {
  nlohmann::json out = nlohmann::json::array();
  const auto known = [](const ProbeProcess& p) {
    return p.epochMinusCupti.has_value() && p.lifetime.second != 0;
  };
  for (const auto& p : processes) {
    if (p.kernels.empty() || !known(p)) continue;
    std::uint64_t first = p.kernels.front().first, last = p.kernels.front().second;
    for (const auto& [start, end] : p.kernels) {
      first = std::min(first, start);
      last = std::max(last, end);
    }
    nlohmann::json beside = nlohmann::json::array(), lastExit = nullptr;
    std::uint64_t lastEnd = 0;
    for (const auto& q : processes) {
      if (&q == &p || q.device != p.device || !known(q)) continue;
      const auto qStart = onCuptiClock(q, q.lifetime.first);
      const auto qEnd = onCuptiClock(q, q.lifetime.second);
      if (!qStart || !qEnd) continue;
      const std::uint64_t start = *qStart, end = *qEnd;
      // From its start to its set-up hold (outside every hold); from each time it gave the turn
      // up while idle to its next event (holding nothing: ARGUS_GPU_TURN_IDLE_MS); from giving
      // up its turn at the exit to its end (under the shared teardown hold unless
      // ARGUS_GPU_TURN_TEARDOWN=none).
      std::vector<std::pair<const char*, std::pair<std::uint64_t, std::uint64_t>>> phases = {
          {"starting", {start, eventTime(q, "set_up_held").value_or(end)}}};
      std::optional<std::uint64_t> released;
      for (std::size_t e = 0; e < q.turnEvents.size(); ++e) {
        const auto& [name, ns] = q.turnEvents[e];
        if (name == "turn_idle_released")
          phases.push_back(
              {"idle", {ns, e + 1 < q.turnEvents.size() ? q.turnEvents[e + 1].second : end}});
        if (name == "turn_released") released = ns;
      }
      phases.push_back({"ending", {released.value_or(end), end}});
      for (const auto& [phase, window] : phases) {
        const std::uint64_t from = std::max(window.first, first);
        const std::uint64_t to = std::min(window.second, last);
        if (from < to)
          beside.push_back({{"collect", q.collect}, {"phase", phase}, {"overlap_ns", to - from}});
      }
      if (end <= first && end > lastEnd) {
        lastEnd = end;
        lastExit = {{"collect", q.collect}, {"before_ns", first - end}};
      }
    }
    nlohmann::json timeline = nlohmann::json::array();
    for (const auto& [event, ns] : p.turnEvents)
      timeline.push_back({event, static_cast<std::int64_t>(ns - p.turnEvents.front().second)});
    out.push_back({{"collect", p.collect},
                   {"kernels", {first, last}},
                   {"beside", std::move(beside)},
                   {"last_exit", std::move(lastExit)},
                   {"timeline", std::move(timeline)}});
  }
  return out;
}

}  // namespace

nlohmann::json probeIsolation(const std::vector<ProbeProcess>& processes) {
  nlohmann::json unchecked = nlohmann::json::array(), unverified = nlohmann::json::array(),
                 overlaps = nlohmann::json::array();
  std::map<std::string, std::size_t> perDevice;
  std::size_t kernels = 0;
  for (const auto& p : processes) {
    ++perDevice[p.device];
    kernels += p.kernels.size();
    if (p.kernels.empty()) unchecked.push_back(p.collect);
  }
  // A process that shared its device's time with another must show it ran alone: a turn and
  // kernel times. Processes one after another need not.
  const auto concurrent = [](const ProbeProcess& a, const ProbeProcess& b) {
    const bool unknown = a.lifetime.second == 0 || b.lifetime.second == 0;
    return unknown ||
           (a.lifetime.first < b.lifetime.second && b.lifetime.first < a.lifetime.second);
  };
  for (const auto& p : processes) {
    if (!p.kernels.empty() && p.tookTurn) continue;
    for (const auto& other : processes)
      if (&other != &p && other.device == p.device && concurrent(p, other)) {
        unverified.push_back(p.collect);
        break;
      }
  }
  // Per device, every kernel in start order; the kernels still running when one starts are the
  // only ones it can overlap. One overlap is reported per pair of processes.
  struct Interval {
    std::uint64_t start, end;
    std::size_t process;
  };
  std::map<std::string, std::vector<Interval>> byDevice;
  for (std::size_t p = 0; p < processes.size(); ++p)
    for (const auto& [start, end] : processes[p].kernels)
      byDevice[processes[p].device].push_back({start, end, p});
  std::set<std::pair<std::size_t, std::size_t>> reported;
  for (auto& [device, intervals] : byDevice) {
    std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
      return std::tie(a.start, a.end, a.process) < std::tie(b.start, b.end, b.process);
    });
    std::vector<const Interval*> running;
    for (const Interval& k : intervals) {
      std::erase_if(running, [&](const Interval* r) { return r->end <= k.start; });
      for (const Interval* r : running) {
        if (r->process == k.process || k.end <= k.start) continue;
        const auto pair = std::minmax(r->process, k.process);
        if (!reported.insert(pair).second) continue;
        const Interval& first = r->process == pair.first ? *r : k;
        const Interval& second = r->process == pair.first ? k : *r;
        overlaps.push_back({{"first", processes[pair.first].collect},
                            {"second", processes[pair.second].collect},
                            {"device", device},
                            {"first_kernel", {first.start, first.end}},
                            {"second_kernel", {second.start, second.end}}});
      }
      running.push_back(&k);
    }
  }
  nlohmann::json shared = nlohmann::json::array();
  for (const auto& [device, n] : perDevice)
    if (n > 1) shared.push_back(device);
  return {{"neighbours", probeNeighbours(processes)},
          {"processes", processes.size()},
          {"turns_taken", std::count_if(processes.begin(), processes.end(),
                                        [](const ProbeProcess& p) { return p.tookTurn; })},
          {"shared_device", shared},
          {"kernels_checked", kernels},
          {"unchecked", unchecked},
          {"unverified", unverified},
          {"overlaps", overlaps}};
}

std::optional<std::string> workQueueCaution(const json& run) {
  const json& queues = run.value("work_queues", json());
  const json& streams = run.value("kernel_streams", json());
  if (!queues.is_number_integer() || queues.get<std::int64_t>() != 1 ||
      !streams.is_number_integer() || streams.get<std::int64_t>() < 2)
    return std::nullopt;
  return fmt::format(
      "the program ran kernels on {} streams, and the probe ran with one hardware work queue "
      "(CUDA_DEVICE_MAX_CONNECTIONS=1), which can serialize kernels that overlapped in the "
      "reference run; to probe with the driver's default, set CUDA_DEVICE_MAX_CONNECTIONS: \"8\" "
      "under run.env in the program spec",
      streams.get<std::int64_t>());
}

}  // namespace argus::synthesis
