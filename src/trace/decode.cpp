// Trace decoder: validates the header, reads records (full or compact layout), and derives
// statistics and Chrome traces. Byte order is little-endian, as on every CUDA device.
#include "argus/trace/decode.h"
#include "argus/support/json_number.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace argus::trace {
namespace {

Error traceError(std::string message) {
  return Error{"trace", std::move(message)};
}

template <class T>
T readAt(std::span<const std::byte> buffer, size_t offset) {
  T value;
  std::memcpy(&value, buffer.data() + offset, sizeof(T));
  return value;
}

Result<void> badTraceMap(const std::string& what) {
  return fail("trace", "trace map: " + what + "; regenerate it with lower_markers_to_trace");
}

/// parseTraceMap, throwing json::exception on a field of the wrong type.
Result<TraceMap> parseTraceMapFields(const nlohmann::json& json) {
  auto bad = [](const std::string& what) { return std::unexpected(badTraceMap(what).error()); };
  if (!json.is_object() || integerOr(json, "argus_trace_map", 0) != 1) {
    return bad("not an argus_trace_map 1 object");
  }
  TraceMap map;
  if (!json.contains("kernel") || !json["kernel"].is_string()) return bad("`kernel` missing");
  map.kernel = json["kernel"].get<std::string>();
  const std::string base = json.value("time_base", std::string("globaltimer"));
  if (base == "globaltimer") {
    map.timeBase = TimeBase::GlobalTimer;
  } else if (base == "clock64") {
    map.timeBase = TimeBase::SmClock;
  } else {
    return bad("unknown time_base `" + base + "`");
  }
  map.capacityHint = integerOr(json, "capacity_hint", 0u);
  map.sequenced = json.value("overflow", std::string("count")) == "clamp";
  const std::string layout = json.value("record_layout", std::string("full"));
  if (layout != "full" && layout != "compact") return bad("unknown record_layout `" + layout + "`");
  map.compactRecords = layout == "compact";
  map.scope = json.value("scope", std::string());
  if (json.contains("block")) {
    const auto& b = json["block"];
    if (!b.is_array() || b.size() != 3 ||
        !std::ranges::all_of(b, [](const auto& v) { return v.is_number_unsigned(); }))
      return bad("`block` is not three unsigned extents: " + b.dump());
    map.block = std::array<uint32_t, 3>{exactInteger<uint32_t>(b[0], "`block`"),
                                        exactInteger<uint32_t>(b[1], "`block`"),
                                        exactInteger<uint32_t>(b[2], "`block`")};
  }
  if (!json.contains("regions") || !json["regions"].is_array()) return bad("`regions` missing");
  for (const auto& r : json["regions"]) {
    if (!r.is_object() || !r.contains("index") || !r["index"].is_number_unsigned() ||
        !r.contains("path") || !r["path"].is_string()) {
      return bad("region entry without index/path: " + r.dump());
    }
    TraceMap::Region region;
    region.index = exactInteger<uint32_t>(r["index"], "`index`");
    if (region.index != map.regions.size()) {
      return bad(fmt::format("region index {} out of order", region.index));
    }
    region.path = r["path"].get<std::string>();
    region.id = r.value("id", std::string());
    if (r.contains("parent") && r["parent"].is_number_unsigned()) {
      region.parent = exactInteger<uint32_t>(r["parent"], "`parent`");
    }
    map.regions.push_back(std::move(region));
  }
  if (json.contains("roles")) {
    for (const auto& role : json["roles"]) {
      if (!role.is_string()) return bad("role names must be strings");
      map.roles.push_back(role.get<std::string>());
    }
  }
  return map;
}

}  // namespace

Result<TraceMap> parseTraceMap(const nlohmann::json& json) {
  try {
    return parseTraceMapFields(json);
  } catch (const nlohmann::json::exception& e) {
    return std::unexpected(badTraceMap(e.what()).error());
  }
}

Result<DecodedTrace> decodeTrace(std::span<const std::byte> buffer, const TraceMap& map,
                                 BufferLayout layout) {
  constexpr size_t kHeader = sizeof(TraceHeader);
  constexpr size_t kRecord = sizeof(TraceRecord);
  if (buffer.size() < kHeader) {
    return std::unexpected(traceError(
        fmt::format("buffer of {} bytes is shorter than the {}-byte header (truncated copy?)",
                    buffer.size(), kHeader)));
  }
  DecodedTrace out;
  std::memcpy(&out.header, buffer.data(), kHeader);
  const TraceHeader& h = out.header;
  if (h.magic != kTraceMagic) {
    return std::unexpected(traceError(fmt::format(
        "byte 0: magic is {:#010x}, expected {:#010x} (\"ARGT\"); not an Argus trace buffer",
        h.magic, kTraceMagic)));
  }
  if (h.version != kTraceVersion) {
    return std::unexpected(
        traceError(fmt::format("byte 4: trace format version {}, this decoder reads version {}",
                               h.version, kTraceVersion)));
  }
  out.dropped = h.dropped;
  if (map.compactRecords && h.reserved[2] != sizeof(CompactRecord)) {
    return std::unexpected(traceError(fmt::format(
        "byte {}: the kernel wrote {}-byte compact records (record_layout=compact) but this "
        "launch file holds them unexpanded (device record size {}); run the variant under a "
        "libargus_inject.so that expands them (this build's)",
        offsetof(TraceHeader, reserved) + 2 * sizeof(h.reserved[0]), sizeof(CompactRecord),
        h.reserved[2])));
  }
  const uint64_t fullRecords = uint64_t{h.capacityPerWarp} * h.warpSlots;
  const uint64_t fullBytes = kHeader + fullRecords * kRecord;
  if (layout == BufferLayout::Auto) {
    layout = buffer.size() >= fullBytes ? BufferLayout::Full : BufferLayout::Compact;
  }
  size_t records = 0;
  if (layout == BufferLayout::Full) {
    if (buffer.size() < fullBytes) {
      return std::unexpected(traceError(fmt::format(
          "record area truncated: the header describes {} warp slots x {} records ({} bytes in "
          "all) but the buffer ends at byte {}",
          h.warpSlots, h.capacityPerWarp, fullBytes, buffer.size())));
    }
    records = static_cast<size_t>(fullRecords);
  } else {
    const size_t body = buffer.size() - kHeader;
    if (body % kRecord != 0) {
      return std::unexpected(traceError(fmt::format(
          "record area truncated: {} bytes after the header is not a whole number of {}-byte "
          "records; the last record starts at byte {}",
          body, kRecord, kHeader + body / kRecord * kRecord)));
    }
    records = body / kRecord;
    if (records > fullRecords && fullRecords != 0) {
      return std::unexpected(traceError(fmt::format(
          "compact buffer holds {} records, more than the header's {} slots x {} records", records,
          h.warpSlots, h.capacityPerWarp)));
    }
  }

  out.occurrences.reserve(records);
  std::map<uint64_t, uint64_t> producedPerWarp;  // (cta, warp) -> records produced (sequenced)
  for (size_t i = 0; i < records; ++i) {
    const auto r = readAt<TraceRecord>(buffer, kHeader + i * kRecord);
    if ((r.meta & kValidBit) == 0) continue;  // unused slot
    const uint32_t region = regionIndexOf(r.meta);
    const uint32_t role = roleIndexOf(r.meta);
    if (region >= map.regions.size() || (role != kNoRole && role >= map.roles.size()) ||
        r.end < r.begin) {
      ++out.invalidRecords;
      continue;
    }
    Occurrence o;
    o.region = region;
    o.begin = r.begin;
    o.end = r.end;
    o.sm = smOf(r.meta);
    o.cta = r.cta;
    o.warp = map.sequenced ? (r.warp & 0xffu) : r.warp;
    if (map.sequenced) {
      // The slot's last record is the latest one written; its sequence number tells how many
      // the warp produced in all.
      uint64_t& produced = producedPerWarp[(uint64_t{r.cta} << 8) | o.warp];
      produced = std::max<uint64_t>(produced, uint64_t{r.warp >> 8} + 1);
    }
    if (r.iteration != kNoIteration) o.iteration = r.iteration;
    if (role != kNoRole) o.role = role;
    out.occurrences.push_back(o);
  }
  if (map.sequenced) {
    // Per warp: produced - kept records were overwritten in the slot's last place.
    std::map<uint64_t, uint64_t> keptPerWarp;
    for (const auto& o : out.occurrences) ++keptPerWarp[(uint64_t{o.cta} << 8) | o.warp];
    for (const auto& [warp, produced] : producedPerWarp)
      if (produced > keptPerWarp[warp]) out.dropped += produced - keptPerWarp[warp];
  }
  std::sort(out.occurrences.begin(), out.occurrences.end(),
            [](const Occurrence& a, const Occurrence& b) {
              return std::tie(a.begin, a.sm, a.cta, a.warp, a.region) <
                     std::tie(b.begin, b.sm, b.cta, b.warp, b.region);
            });
  return out;
}

DurationStats durationStats(std::vector<uint64_t> d) {
  DurationStats s;
  s.count = d.size();
  if (d.empty()) return s;
  std::sort(d.begin(), d.end());
  long double sum = 0;  // for the mean, also where the total saturates
  for (uint64_t v : d) {
    sum += static_cast<long double>(v);
    if (s.total > UINT64_MAX - v) s.totalSaturated = true;
    s.total = s.totalSaturated ? UINT64_MAX : s.total + v;
  }
  s.mean = static_cast<double>(sum / static_cast<long double>(d.size()));
  const size_t n = d.size();
  s.median = n % 2 == 1 ? static_cast<double>(d[n / 2])
                        : (static_cast<double>(d[n / 2 - 1]) + static_cast<double>(d[n / 2])) / 2;
  // Nearest rank: ceil(0.95 n) computed in integers to avoid rounding surprises.
  const size_t rank = (95 * n + 99) / 100;
  s.p95 = d[std::max<size_t>(rank, 1) - 1];
  s.min = d.front();
  s.max = d.back();
  return s;
}

std::vector<RegionStats> regionStatistics(const DecodedTrace& trace, const TraceMap& map) {
  struct Acc {
    std::vector<uint64_t> all;
    std::map<uint32_t, std::vector<uint64_t>> iter;
    std::map<std::string, std::vector<uint64_t>> role;
    std::map<uint32_t, std::vector<uint64_t>> sm;
  };
  std::vector<Acc> acc(map.regions.size());
  for (const Occurrence& o : trace.occurrences) {
    if (o.region >= acc.size()) continue;
    Acc& a = acc[o.region];
    const uint64_t d = o.duration();
    a.all.push_back(d);
    if (o.iteration) a.iter[*o.iteration].push_back(d);
    a.role[o.role ? map.roles[*o.role] : std::string()].push_back(d);
    a.sm[o.sm].push_back(d);
  }
  std::vector<RegionStats> out;
  for (size_t k = 0; k < map.regions.size(); ++k) {
    RegionStats s;
    s.region = static_cast<uint32_t>(k);
    s.id = map.regions[k].id;
    s.path = map.regions[k].path;
    s.parent = map.regions[k].parent;
    s.duration = durationStats(std::move(acc[k].all));
    for (auto& [key, v] : acc[k].iter) s.byIteration[key] = durationStats(std::move(v));
    for (auto& [key, v] : acc[k].role) s.byRole[key] = durationStats(std::move(v));
    for (auto& [key, v] : acc[k].sm) s.bySm[key] = durationStats(std::move(v));
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

nlohmann::json toJson(const DurationStats& s) {
  nlohmann::json j = {{"count", s.count},   {"total", s.total}, {"mean", s.mean},
                      {"median", s.median}, {"p95", s.p95},     {"min", s.min},
                      {"max", s.max}};
  if (s.totalSaturated) j["total_saturated"] = true;  // total is a lower bound
  return j;
}

template <class Map>
nlohmann::json breakdown(const Map& m) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, stats] : m) {
    if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
      out[key] = toJson(stats);
    } else {
      out[std::to_string(key)] = toJson(stats);
    }
  }
  return out;
}

std::string_view unitOf(TimeBase base) {
  return base == TimeBase::SmClock ? "cycles" : "ns";
}

}  // namespace

nlohmann::json statisticsJson(const std::vector<RegionStats>& stats, const DecodedTrace& trace,
                              const TraceMap& map) {
  nlohmann::json regions = nlohmann::json::array();
  for (const RegionStats& s : stats) {
    regions.push_back({{"index", s.region},
                       {"id", s.id},
                       {"path", s.path},
                       {"parent", s.parent ? nlohmann::json(*s.parent) : nlohmann::json()},
                       {"duration", toJson(s.duration)},
                       {"by_iteration", breakdown(s.byIteration)},
                       {"by_role", breakdown(s.byRole)},
                       {"by_sm", breakdown(s.bySm)}});
  }
  return {{"kernel", map.kernel},
          {"time_base", map.timeBase == TimeBase::SmClock ? "clock64" : "globaltimer"},
          {"unit", unitOf(map.timeBase)},
          {"occurrences", trace.occurrences.size()},
          {"dropped", trace.dropped},
          {"invalid_records", trace.invalidRecords},
          {"regions", std::move(regions)}};
}

nlohmann::json chromeTrace(const DecodedTrace& trace, const TraceMap& map,
                           ChromeGrouping grouping) {
  nlohmann::json events = nlohmann::json::array();
  uint64_t origin = trace.occurrences.empty() ? 0 : trace.occurrences.front().begin;
  for (const Occurrence& o : trace.occurrences) origin = std::min(origin, o.begin);
  const auto micros = [](uint64_t units) { return static_cast<double>(units) / 1000.0; };
  std::map<uint32_t, std::set<uint32_t>> threads;  // process -> warps seen
  for (const Occurrence& o : trace.occurrences) {
    const uint32_t pid = grouping == ChromeGrouping::Sm ? o.sm : o.cta;
    // Warps of different CTAs share an SM: thread ids keep them apart in per-SM processes.
    const uint64_t tid = grouping == ChromeGrouping::Sm ? uint64_t{o.cta} * 1024 + o.warp : o.warp;
    nlohmann::json args = {
        {"region_id", map.regions[o.region].id}, {"sm", o.sm}, {"cta", o.cta}, {"warp", o.warp}};
    if (o.iteration) args["iteration"] = *o.iteration;
    if (o.role) args["role"] = map.roles[*o.role];
    events.push_back({{"name", map.regions[o.region].path},
                      {"cat", "region"},
                      {"ph", "X"},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", micros(o.begin - origin)},
                      {"dur", micros(o.duration())},
                      {"args", std::move(args)}});
    threads[pid].insert(static_cast<uint32_t>(tid));
  }
  for (const auto& [pid, tids] : threads) {
    events.push_back(
        {{"name", "process_name"},
         {"ph", "M"},
         {"pid", pid},
         {"args",
          {{"name", fmt::format("{} {}", grouping == ChromeGrouping::Sm ? "SM" : "CTA", pid)}}}});
    for (uint32_t tid : tids) {
      const std::string name = grouping == ChromeGrouping::Sm
                                   ? fmt::format("CTA {} warp {}", tid / 1024, tid % 1024)
                                   : fmt::format("warp {}", tid);
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", pid},
                        {"tid", tid},
                        {"args", {{"name", name}}}});
    }
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"otherData",
           {{"kernel", map.kernel},
            {"time_base", map.timeBase == TimeBase::SmClock ? "clock64" : "globaltimer"},
            {"ts_unit", map.timeBase == TimeBase::SmClock ? "kilocycles" : "us"},
            {"dropped", trace.dropped},
            {"scope", map.scope}}}};
}

}  // namespace argus::trace
