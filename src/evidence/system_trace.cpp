// Reader and Chrome export of system-trace evidence (argus/evidence/system_trace.h).
#include "argus/evidence/system_trace.h"
#include "argus/support/json_number.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

namespace argus::evidence {
namespace {

using json = nlohmann::json;

int64_t timeField(const json& j, const char* key) {
  return integerOr(j, key, int64_t{0});
}

std::string demangledHint(std::string_view name) {
  return std::string(name);
}

}  // namespace

bool isNcclKernelName(std::string_view name) {
  return name.find("ncclDevKernel") != std::string_view::npos ||
         name.find("ncclKernel") != std::string_view::npos;
}

std::map<std::string, std::string> parseLabels(std::string_view message) {
  std::map<std::string, std::string> labels;
  size_t at = 0;
  while (at < message.size()) {
    size_t end = message.find_first_of(" ,;", at);
    if (end == std::string_view::npos) end = message.size();
    std::string_view word = message.substr(at, end - at);
    if (size_t eq = word.find('='); eq != std::string_view::npos && eq > 0)
      labels[std::string(word.substr(0, eq))] = std::string(word.substr(eq + 1));
    at = end + 1;
  }
  return labels;
}

Result<SystemTrace> parseSystemTrace(std::string_view jsonl) {
  SystemTrace trace;
  std::unordered_map<uint32_t, std::pair<int64_t, uint64_t>> launchOf;  // correlation -> enter
  std::unordered_map<uint64_t, TraceRange> open;  // marker id -> started range
  size_t lineNo = 0;
  size_t at = 0;
  bool sawHeader = false;
  while (at < jsonl.size()) {
    size_t end = jsonl.find('\n', at);
    if (end == std::string_view::npos) end = jsonl.size();
    std::string_view line = jsonl.substr(at, end - at);
    at = end + 1;
    ++lineNo;
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("type"))
      return fail("system_trace", fmt::format("line {}: not a JSON object with a `type`", lineNo));
    try {
      const std::string type = j.value("type", "");
      if (type == "header") {
        if (j.value("format", "") != "argus.system_trace")
          return fail("system_trace",
                      fmt::format("line {}: header format is `{}`, expected argus.system_trace",
                                  lineNo, j.value("format", "")));
        if (integerOr(j, "version", 0) != 1)
          return fail("system_trace", fmt::format("line {}: version {} is not supported (1 is)",
                                                  lineNo, integerOr(j, "version", 0)));
        trace.header = j;
        sawHeader = true;
      } else if (type == "kernel" || type == "memcpy" || type == "memset") {
        TraceOp op;
        op.kind = type == "kernel"   ? TraceOp::Kind::Kernel
                  : type == "memcpy" ? TraceOp::Kind::Memcpy
                                     : TraceOp::Kind::Memset;
        op.device = integerOr(j, "device", 0u);
        op.stream = integerOr(j, "stream", 0u);
        op.correlation = integerOr(j, "correlation", 0u);
        op.startNs = timeField(j, "start_ns");
        op.endNs = timeField(j, "end_ns");
        if (op.endNs < op.startNs)
          return fail("system_trace", fmt::format("line {}: end_ns {} precedes start_ns {}", lineNo,
                                                  op.endNs, op.startNs));
        op.bytes = integerOr(j, "bytes", uint64_t{0});
        if (op.kind == TraceOp::Kind::Kernel) {
          op.name = demangledHint(j.value("name", ""));
          for (int i = 0; i < 3; ++i) {
            if (j.contains("grid")) op.grid[i] = exactInteger<uint32_t>(j["grid"].at(i), "`grid`");
            if (j.contains("block"))
              op.block[i] = exactInteger<uint32_t>(j["block"].at(i), "`block`");
          }
          op.nccl = isNcclKernelName(op.name);
        } else if (op.kind == TraceOp::Kind::Memcpy) {
          op.copyKind = j.value("kind", "unknown");
          op.name = "memcpy " + op.copyKind;
        } else {
          op.name = "memset";
        }
        trace.ops.push_back(std::move(op));
      } else if (type == "api") {
        const auto corr = integerOr(j, "correlation", 0u);
        const int64_t start = timeField(j, "start_ns");
        const uint64_t thread = integerOr(j, "thread", uint64_t{0});
        auto [it, inserted] = launchOf.try_emplace(corr, start, thread);
        if (!inserted && start < it->second.first) it->second = {start, thread};
      } else if (type == "marker") {
        const std::string flag = j.value("flag", "");
        const uint64_t id = integerOr(j, "id", uint64_t{0});
        if (flag == "start") {
          TraceRange r;
          r.name = j.value("name", "");
          r.domain = j.value("domain", "");
          r.thread = integerOr(j, "thread", uint64_t{0});
          r.id = id;
          r.startNs = timeField(j, "timestamp_ns");
          r.labels = parseLabels(r.name);
          open[id] = std::move(r);
        } else if (flag == "end") {
          auto it = open.find(id);
          if (it == open.end()) {
            ++trace.unmatchedMarkers;
            continue;
          }
          it->second.endNs = timeField(j, "timestamp_ns");
          trace.ranges.push_back(std::move(it->second));
          open.erase(it);
        } else if (flag == "instant") {
          TraceRange r;
          r.name = j.value("name", "");
          r.domain = j.value("domain", "");
          r.thread = integerOr(j, "thread", uint64_t{0});
          r.id = id;
          r.startNs = r.endNs = timeField(j, "timestamp_ns");
          r.labels = parseLabels(r.name);
          trace.ranges.push_back(std::move(r));
        }
      } else if (type == "dropped") {
        trace.dropped += integerOr(j, "count", uint64_t{0});
      }
      // Unknown types are skipped: newer writers may add records.
    } catch (const json::exception& e) {
      return fail("system_trace", fmt::format("line {}: {}", lineNo, e.what()));
    }
  }
  if (!sawHeader)
    return fail("system_trace", "no header line; is this a libargus_system_trace.so output?");
  trace.unmatchedMarkers += open.size();

  std::sort(trace.ranges.begin(), trace.ranges.end(), [](const auto& a, const auto& b) {
    return a.startNs != b.startNs ? a.startNs < b.startNs : a.endNs > b.endNs;
  });
  // Depth: ranges on one thread nest (push/pop); count the open ones that contain each start.
  for (size_t i = 0; i < trace.ranges.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (trace.ranges[k].thread == trace.ranges[i].thread &&
          trace.ranges[k].endNs >= trace.ranges[i].endNs &&
          trace.ranges[k].startNs <= trace.ranges[i].startNs)
        ++trace.ranges[i].depth;

  std::sort(trace.ops.begin(), trace.ops.end(),
            [](const auto& a, const auto& b) { return a.startNs < b.startNs; });
  for (auto& op : trace.ops) {
    if (auto it = launchOf.find(op.correlation); it != launchOf.end() && op.correlation != 0) {
      op.launchNs = it->second.first;
      op.thread = it->second.second;
    }
    if (!op.launchNs) continue;
    int best = -1;
    for (size_t r = 0; r < trace.ranges.size(); ++r) {
      const auto& range = trace.ranges[r];
      if (range.startNs > *op.launchNs) break;
      if (range.thread != *op.thread || range.endNs < *op.launchNs) continue;
      if (best < 0 || range.depth > trace.ranges[best].depth) best = static_cast<int>(r);
    }
    op.range = best;
  }
  return trace;
}

Result<SystemTrace> readSystemTrace(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return fail("system_trace", fmt::format("cannot read `{}`; is it the file named by "
                                            "ARGUS_SYSTEM_TRACE_OUT?",
                                            file.string()));
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parseSystemTrace(text.str());
  if (!parsed)
    return fail("system_trace", fmt::format("{}: {}", file.string(), parsed.error().message));
  return parsed;
}

namespace {

/// Appends one process's events; process p > 0 moves its Chrome pids by p * kProcessStride.
void appendChrome(const SystemTrace& trace, size_t process, json& events) {
  constexpr int64_t kProcessStride = 10000;
  const int64_t shift = static_cast<int64_t>(process) * kProcessStride;
  const std::string suffix = process == 0 ? std::string()
                                          : fmt::format(" (process {}, pid {})", process,
                                                        integerOr(trace.header, "pid", 0));
  const int64_t kHostPid = 1000000 + shift;
  std::map<uint32_t, std::set<uint32_t>> streams;
  std::set<uint64_t> threads;
  for (const auto& op : trace.ops) {
    streams[op.device].insert(op.stream);
    json args = {{"correlation", op.correlation}, {"stream", op.stream}};
    if (op.bytes > 0) args["bytes"] = op.bytes;
    if (op.kind == TraceOp::Kind::Kernel) {
      args["grid"] = {op.grid[0], op.grid[1], op.grid[2]};
      args["block"] = {op.block[0], op.block[1], op.block[2]};
      if (op.nccl) args["nccl"] = true;
    }
    if (auto l = op.launchLatencyNs()) args["launch_to_start_ns"] = *l;
    if (op.range >= 0) args["nvtx"] = trace.ranges[op.range].name;
    events.push_back({{"name", op.name},
                      {"cat", op.kind == TraceOp::Kind::Kernel
                                  ? (op.nccl ? "nccl" : "kernel")
                                  : (op.kind == TraceOp::Kind::Memcpy ? "memcpy" : "memset")},
                      {"ph", "X"},
                      {"pid", op.device + shift},
                      {"tid", op.stream},
                      {"ts", static_cast<double>(op.startNs) / 1000.0},
                      {"dur", static_cast<double>(op.durationNs()) / 1000.0},
                      {"args", args}});
  }
  for (const auto& r : trace.ranges) {
    threads.insert(r.thread);
    events.push_back({{"name", r.name},
                      {"cat", "nvtx"},
                      {"ph", "X"},
                      {"pid", kHostPid},
                      {"tid", r.thread},
                      {"ts", static_cast<double>(r.startNs) / 1000.0},
                      {"dur", static_cast<double>(r.endNs - r.startNs) / 1000.0},
                      {"args", {{"domain", r.domain}}}});
  }
  for (const auto& [device, ids] : streams) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", device + shift},
                      {"args", {{"name", fmt::format("GPU {}{}", device, suffix)}}}});
    for (uint32_t s : ids)
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", device + shift},
                        {"tid", s},
                        {"args", {{"name", fmt::format("stream {}", s)}}}});
  }
  if (!threads.empty())
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", kHostPid},
                      {"args", {{"name", "host" + suffix}}}});
}

}  // namespace

json systemTraceChrome(const SystemTrace& trace) {
  json events = json::array();
  appendChrome(trace, 0, events);
  return json{{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

json systemTraceChrome(const std::vector<SystemTrace>& processes) {
  json events = json::array();
  for (size_t p = 0; p < processes.size(); ++p) appendChrome(processes[p], p, events);
  return json{{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

}  // namespace argus::evidence
