#include "argus/trace/proton.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "argus/ptx/regions.h"

namespace argus::trace {
namespace {

using json = nlohmann::json;

/// The unsigned number after `word` in `text` ("CTA36" -> 36 for word "CTA").
std::optional<uint32_t> numberAfter(std::string_view text, std::string_view word) {
  const size_t at = text.find(word);
  if (at == std::string_view::npos) return std::nullopt;
  const char* begin = text.data() + at + word.size();
  const char* end = text.data() + text.size();
  uint32_t value = 0;
  auto [next, error] = std::from_chars(begin, end, value);
  if (error != std::errc{} || next == begin) return std::nullopt;
  return value;
}

/// The largest time a trace event may give, in cycles: doubles hold every integer up to 2^53
/// (52 days at 2 GHz), and sums of such times stay far from wrapping.
constexpr double kMaxCycles = 9007199254740992.0;  // 2^53
constexpr double kMaxMhz = 1e6;                    // 1 THz: far above any GPU clock

struct Event {
  std::string name;
  uint32_t sm = 0, cta = 0, warp = 0;
  uint64_t begin = 0, end = 0;  // cycles
  size_t index = 0;             // in traceEvents
};

}  // namespace

Result<ProtonImport> importProtonTrace(const json& doc, std::string_view kernel) {
  auto bad = [](std::string message) { return fail("proton", std::move(message)); };
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    return bad(
        "not a Chrome trace: no `traceEvents` list (Proton writes one with "
        "proton.start(..., backend=\"instrumentation\", data=\"trace\"))");
  ProtonImport out;
  std::map<std::string, std::vector<Event>> byKernel;
  std::optional<double> frequency;
  const json& events = doc["traceEvents"];
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    // A field of the wrong type is an error naming the event, never a silently dropped event.
    auto wrongType = [&](std::string_view field, const json& value, std::string_view expected) {
      return bad(
          fmt::format("traceEvents[{}]: field `{}` is {}; give {} (Proton's Chrome trace "
                      "has it so; is the file damaged?)",
                      i, field, value.dump(), expected));
    };
    if (!e.is_object() || !e.contains("ph")) continue;
    if (!e["ph"].is_string()) return wrongType("ph", e["ph"], "a string");
    if (e["ph"] != "X") continue;  // metadata, counters: not scopes
    for (const char* field : {"pid", "tid", "name"})
      if (e.contains(field) && !e[field].is_string()) return wrongType(field, e[field], "a string");
    for (const char* field : {"ts", "dur"})
      if (e.contains(field) && !e[field].is_number()) return wrongType(field, e[field], "a number");
    if (e.contains("args") && !e["args"].is_object())
      return wrongType("args", e["args"], "an object");
    if (!e.contains("pid")) continue;
    const std::string pid = e["pid"].get<std::string>();
    const size_t core = pid.rfind(" Core");
    if (core == std::string::npos) continue;  // not a Proton scope event
    const auto sm = numberAfter(std::string_view(pid).substr(core), " Core");
    const auto cta = numberAfter(std::string_view(pid).substr(core), " CTA");
    const std::string tid = e.contains("tid") ? e["tid"].get<std::string>() : std::string();
    const auto warp = numberAfter(tid, "warp ");
    if (!sm || !cta || !warp)
      return bad(
          fmt::format("traceEvents[{}]: process `{}`, thread `{}` are not Proton's "
                      "`<kernel> Core<sm> CTA<cta>` and `warp <w> (line <l>)`",
                      i, pid, tid));
    const json args = e.contains("args") ? e["args"] : json::object();
    if (!args.contains("Frequency (MHz)"))
      return bad(
          fmt::format("traceEvents[{}]: no `Frequency (MHz)` argument, so its times "
                      "cannot be turned back into cycles",
                      i));
    const json& given = args["Frequency (MHz)"];
    if (!given.is_number() || !(given.get<double>() > 0) || given.get<double>() > kMaxMhz)
      return wrongType("args.Frequency (MHz)", given,
                       fmt::format("a clock frequency in MHz above 0 and at most {}", kMaxMhz));
    const double mhz = given.get<double>();
    if (frequency && *frequency != mhz)
      return bad(
          fmt::format("traceEvents[{}]: frequency {} MHz differs from the {} MHz of the "
                      "events before it",
                      i, mhz, *frequency));
    frequency = mhz;
    if (!e.contains("ts") || !e.contains("dur"))
      return bad(fmt::format("traceEvents[{}]: `ts` and `dur` must be numbers >= 0", i));
    // ts and dur are microseconds at `mhz`: cycles = us * MHz. Each time, and their sum, is at
    // most kMaxCycles, so that cycle counts are exact and no sum of them wraps.
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    for (auto [field, us, last] : {std::tuple{"ts", ts, ts}, std::tuple{"dur", dur, ts + dur}})
      if (!(us >= 0) || !(last * mhz <= kMaxCycles))
        return bad(
            fmt::format("traceEvents[{}]: field `{}` is {} us; give a time >= 0 that ends "
                        "within 2^53 cycles ({} us at its {} MHz)",
                        i, field, us, kMaxCycles / mhz, mhz));
    const auto cycles = [&](double us) { return static_cast<uint64_t>(std::llround(us * mhz)); };
    const uint64_t begin = cycles(ts);
    const uint64_t end = cycles(ts + dur);
    if (!e.contains("name") || e["name"].get<std::string>().empty())
      return bad(fmt::format("traceEvents[{}]: no scope name (`name`)", i));
    byKernel[pid.substr(0, core)].push_back(
        Event{e["name"].get<std::string>(), *sm, *cta, *warp, begin, end, i});
  }
  for (const auto& [name, list] : byKernel) out.kernels.push_back(name);
  const std::string kernels = fmt::format("{}", fmt::join(out.kernels, ", "));
  if (byKernel.empty())
    return bad(
        "no Proton scope events (complete events on processes named `<kernel> Core<sm> "
        "CTA<cta>`) in the trace");
  std::string chosen(kernel);
  if (chosen.empty()) {
    if (byKernel.size() > 1)
      return bad(
          fmt::format("the trace holds several kernels ({}); choose one with --kernel", kernels));
    chosen = byKernel.begin()->first;
  }
  auto found = byKernel.find(chosen);
  if (found == byKernel.end())
    return bad(fmt::format("the trace has no events of kernel `{}`; it holds {}", chosen, kernels));
  std::vector<Event>& list = found->second;

  out.frequencyMhz = *frequency;
  out.map.kernel = chosen;
  out.map.timeBase = TimeBase::SmClock;
  // One warp's scopes in time order, outer before inner when they start together: a stack of the
  // open ones gives each its path.
  std::stable_sort(list.begin(), list.end(), [](const Event& a, const Event& b) {
    return std::tuple(a.cta, a.warp, a.begin, b.end) < std::tuple(b.cta, b.warp, b.begin, a.end);
  });
  std::map<std::string, uint32_t> regionOf;             // path -> index in out.map.regions
  std::vector<std::pair<const Event*, uint32_t>> open;  // the warp's open scopes, innermost last
  for (const Event& e : list) {
    while (!open.empty() && (open.back().first->cta != e.cta || open.back().first->warp != e.warp ||
                             open.back().first->end <= e.begin))
      open.pop_back();
    if (!open.empty() && e.end > open.back().first->end)
      return bad(fmt::format(
          "traceEvents[{}] (`{}`, CTA {} warp {}) overlaps traceEvents[{}] "
          "(`{}`) without nesting in it",
          e.index, e.name, e.cta, e.warp, open.back().first->index, open.back().first->name));
    std::optional<uint32_t> parent;
    if (!open.empty()) parent = open.back().second;
    const std::string path = parent ? out.map.regions[*parent].path + "/" + e.name : e.name;
    auto [it, fresh] = regionOf.try_emplace(path, static_cast<uint32_t>(out.map.regions.size()));
    if (fresh)
      out.map.regions.push_back(
          TraceMap::Region{it->second, ptx::regionId(chosen, path), path, parent});
    Occurrence o;
    o.region = it->second;
    o.begin = e.begin;
    o.end = e.end;
    o.sm = e.sm;
    o.cta = e.cta;
    o.warp = e.warp;
    out.trace.occurrences.push_back(o);
    open.emplace_back(&e, it->second);
  }
  std::stable_sort(out.trace.occurrences.begin(), out.trace.occurrences.end(),
                   [](const Occurrence& a, const Occurrence& b) {
                     return std::tuple(a.begin, a.sm, a.cta, a.warp, a.region) <
                            std::tuple(b.begin, b.sm, b.cta, b.warp, b.region);
                   });
  return out;
}

}  // namespace argus::trace
