// Communication chunks and their statistics from a system trace (argus/synthesis/comm_signals.h).
#include "argus/synthesis/comm_signals.h"
#include "argus/support/json_number.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace argus::synthesis {
namespace {

using json = nlohmann::json;
using evidence::SystemTrace;
using evidence::TraceOp;

bool isCommRange(const evidence::TraceRange& r) {
  return r.name.rfind("argus.comm", 0) == 0;
}

int labelInt(const evidence::TraceRange& r, const char* key, int fallback) {
  auto it = r.labels.find(key);
  if (it == r.labels.end()) return fallback;
  try {
    return std::stoi(it->second);
  } catch (...) {
    return fallback;
  }
}

uint64_t labelBytes(const evidence::TraceRange& r, uint64_t fallback) {
  auto it = r.labels.find("bytes");
  if (it == r.labels.end()) return fallback;
  try {
    return std::stoull(it->second);
  } catch (...) {
    return fallback;
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

}  // namespace

CommSignals commSignals(const SystemTrace& trace) {
  CommSignals out;
  std::map<int, CommChunk> byRange;  // comm range index -> chunk
  for (const auto& op : trace.ops) {
    // The innermost range, or an enclosing one, may be the comm range.
    int commRange = -1;
    if (op.range >= 0) {
      for (size_t r = static_cast<size_t>(op.range) + 1; r-- > 0;) {
        const auto& range = trace.ranges[r];
        if (op.launchNs && range.thread == op.thread.value_or(0) && range.startNs <= *op.launchNs &&
            range.endNs >= *op.launchNs && isCommRange(range)) {
          commRange = static_cast<int>(r);
          break;
        }
      }
    }
    if (commRange < 0 && !op.nccl) continue;
    CommChunk* chunk = nullptr;
    CommChunk single;
    if (commRange >= 0) {
      auto [it, fresh] = byRange.try_emplace(commRange);
      chunk = &it->second;
      if (fresh) {
        const auto& range = trace.ranges[commRange];
        auto impl = range.labels.find("impl");
        chunk->source = op.nccl ? "nccl" : (impl != range.labels.end() ? impl->second : "range");
        chunk->startNs = op.startNs;
        chunk->endNs = op.endNs;
      }
    } else {
      chunk = &single;
      chunk->source = "nccl";
      chunk->startNs = op.startNs;
      chunk->endNs = op.endNs;
      chunk->sms = static_cast<int>(op.grid[0] * op.grid[1] * op.grid[2]);
    }
    chunk->startNs = std::min(chunk->startNs, op.startNs);
    chunk->endNs = std::max(chunk->endNs, op.endNs);
    if (chunk->ops == 0 && op.launchNs) chunk->launchNs = *op.launchNs;
    chunk->bytes += op.bytes;
    if (op.nccl && commRange >= 0 && chunk->sms == 0)
      chunk->sms = static_cast<int>(op.grid[0] * op.grid[1] * op.grid[2]);
    ++chunk->ops;
    if (chunk == &single) out.chunks.push_back(single);
  }
  for (auto& [index, chunk] : byRange) {
    const auto& range = trace.ranges[index];
    chunk.bytes = labelBytes(range, chunk.bytes);
    chunk.sms = labelInt(range, "sms", chunk.sms);
    out.chunks.push_back(chunk);
  }
  std::sort(out.chunks.begin(), out.chunks.end(),
            [](const auto& a, const auto& b) { return a.startNs < b.startNs; });

  // A chunk launched while an earlier one still ran waits in the queue: its launch-to-start is
  // that wait, not launch overhead.
  int64_t busyUntil = std::numeric_limits<int64_t>::min();
  for (auto& c : out.chunks) {
    c.queued = c.launchNs >= 0 && c.launchNs < busyUntil;
    busyUntil = std::max(busyUntil, c.endNs);
  }

  std::map<std::tuple<std::string, int, uint64_t>, std::vector<const CommChunk*>> groups;
  for (const auto& c : out.chunks) groups[{c.source, c.sms, c.bytes}].push_back(&c);
  for (const auto& [key, chunks] : groups) {
    CommGroup g;
    std::tie(g.source, g.sms, g.bytes) = key;
    g.chunks = chunks.size();
    std::vector<double> times, launches;
    int64_t first = chunks.front()->startNs, last = chunks.front()->endNs;
    double sum = 0;
    for (const auto* c : chunks) {
      times.push_back(static_cast<double>(c->timeNs()));
      sum += static_cast<double>(c->timeNs());
      if (c->launchNs >= 0 && !c->queued)
        launches.push_back(static_cast<double>(c->startNs - c->launchNs));
      first = std::min(first, c->startNs);
      last = std::max(last, c->endNs);
    }
    g.meanNs = sum / static_cast<double>(times.size());
    g.medianNs = median(times);
    g.minNs = *std::min_element(times.begin(), times.end());
    g.launchOverheadNs = launches.empty() ? -1 : median(launches);
    g.chunkThroughputGBs = g.medianNs > 0 ? static_cast<double>(g.bytes) / g.medianNs : 0;
    g.sustainedGBs = last > first ? static_cast<double>(g.bytes) * static_cast<double>(g.chunks) /
                                        static_cast<double>(last - first)
                                  : 0;
    out.groups.push_back(g);
  }
  return out;
}

json commSignalsJson(const CommSignals& signals) {
  json chunkTime = json::array(), overhead = json::array(), throughput = json::array();
  for (const auto& g : signals.groups) {
    json key = {{"bytes", g.bytes}, {"sms", g.sms}, {"source", g.source}, {"chunks", g.chunks}};
    json t = key;
    t.update({{"mean_ns", g.meanNs}, {"median_ns", g.medianNs}, {"min_ns", g.minNs}});
    chunkTime.push_back(t);
    if (g.launchOverheadNs >= 0) {
      json o = key;
      o["median_ns"] = g.launchOverheadNs;
      overhead.push_back(o);
    }
    json b = key;
    b.update({{"chunk_GBps", g.chunkThroughputGBs}, {"sustained_GBps", g.sustainedGBs}});
    throughput.push_back(b);
  }
  return json{
      {"comm_chunk_time", {{"unit", "ns"}, {"qualification", "observed"}, {"groups", chunkTime}}},
      {"launch_overhead", {{"unit", "ns"}, {"qualification", "observed"}, {"groups", overhead}}},
      {"comm_throughput",
       {{"unit", "GB/s"}, {"qualification", "derived"}, {"groups", throughput}}}};
}

std::vector<CommGroup> slowestProcess(const std::vector<std::vector<CommGroup>>& processes) {
  std::map<std::tuple<std::string, int, uint64_t>, CommGroup> merged;
  for (const auto& groups : processes)
    for (const auto& g : groups) {
      auto [it, fresh] = merged.try_emplace({g.source, g.sms, g.bytes}, g);
      if (fresh) continue;
      CommGroup& m = it->second;
      m.chunks += g.chunks;
      m.meanNs = std::max(m.meanNs, g.meanNs);
      m.medianNs = std::max(m.medianNs, g.medianNs);
      m.minNs = std::max(m.minNs, g.minNs);
      m.launchOverheadNs = std::max(m.launchOverheadNs, g.launchOverheadNs);
      m.sustainedGBs = m.sustainedGBs > 0 && g.sustainedGBs > 0
                           ? std::min(m.sustainedGBs, g.sustainedGBs)
                           : std::max(m.sustainedGBs, g.sustainedGBs);
    }
  std::vector<CommGroup> out;
  for (auto& [key, g] : merged) {
    g.chunkThroughputGBs = g.medianNs > 0 ? static_cast<double>(g.bytes) / g.medianNs : 0;
    out.push_back(g);
  }
  return out;
}

Result<std::vector<CommGroup>> commGroupsFromJson(const json& chunkTime, const json& overhead) {
  if (!chunkTime.is_object() || !chunkTime.contains("groups") || !chunkTime["groups"].is_array())
    return fail("comm_signals",
                "comm_chunk_time has no `groups` list (is it the signal's value "
                "from an `argus query --json` report?)");
  if (chunkTime.value("unit", "ns") != "ns")
    return fail("comm_signals",
                fmt::format("comm_chunk_time is in {}, not ns", chunkTime.value("unit", "")));
  std::vector<CommGroup> groups;
  try {
    for (const auto& g : chunkTime["groups"]) {
      CommGroup c;
      c.bytes = exactInteger<uint64_t>(g.at("bytes"), "`bytes`");
      c.sms = exactInteger<int>(g.at("sms"), "`sms`");
      c.source = g.at("source").get<std::string>();
      c.chunks = integerOr(g, "chunks", size_t{0});
      c.meanNs = g.value("mean_ns", 0.0);
      c.medianNs = g.at("median_ns").get<double>();
      c.minNs = g.value("min_ns", 0.0);
      c.chunkThroughputGBs = c.medianNs > 0 ? static_cast<double>(c.bytes) / c.medianNs : 0;
      groups.push_back(c);
    }
    if (overhead.is_object() && overhead.contains("groups"))
      for (const auto& o : overhead["groups"])
        for (auto& c : groups)
          if (c.bytes == exactInteger<uint64_t>(o.at("bytes"), "`bytes`") &&
              c.sms == exactInteger<int>(o.at("sms"), "`sms`") &&
              c.source == o.at("source").get<std::string>())
            c.launchOverheadNs = o.at("median_ns").get<double>();
  } catch (const json::exception& e) {
    return fail("comm_signals", fmt::format("malformed communication group: {}", e.what()));
  }
  return groups;
}

json kernelTimelineJson(const SystemTrace& trace) {
  struct Acc {
    size_t count = 0;
    double total = 0, launch = 0;
    size_t launches = 0;
    std::set<uint32_t> streams;
  };
  std::map<std::string, Acc> acc;
  for (const auto& op : trace.ops) {
    auto& a = acc[op.name];
    ++a.count;
    a.total += static_cast<double>(op.durationNs());
    if (auto l = op.launchLatencyNs()) {
      a.launch += static_cast<double>(*l);
      ++a.launches;
    }
    a.streams.insert(op.stream);
  }
  json rows = json::array();
  for (const auto& [name, a] : acc)
    rows.push_back({{"name", name},
                    {"count", a.count},
                    {"total_ns", a.total},
                    {"mean_ns", a.total / static_cast<double>(a.count)},
                    {"mean_launch_to_start_ns",
                     a.launches > 0 ? a.launch / static_cast<double>(a.launches) : -1.0},
                    {"streams", a.streams},
                    {"nccl", evidence::isNcclKernelName(name)}});
  return json{{"unit", "ns"},
              {"qualification", "observed"},
              {"operations", rows},
              {"ranges", trace.ranges.size()},
              {"dropped", trace.dropped}};
}

}  // namespace argus::synthesis
