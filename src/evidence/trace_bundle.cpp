#include "argus/evidence/trace_bundle.h"
#include "argus/support/json_number.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

namespace argus::evidence {
namespace {

using json = nlohmann::json;

constexpr std::string_view kBundleMagic = "ARGUSTB1";

}  // namespace

std::optional<std::pair<std::uint64_t, std::uint64_t>> kernelRecordTimes(const json& record) {
  try {
    const auto start = integerOr(record, "start_ns", std::uint64_t{0});
    const auto end = integerOr(record, "end_ns", std::uint64_t{0});
    if (start == 0 || end < start) return std::nullopt;
    return std::pair{start, end - start};
  } catch (const json::exception&) {
    return std::nullopt;  // a time that is not a count of ns: no time
  }
}

void addKernelTimes(std::vector<BundleLaunch>& launches, const std::vector<json>& kernels) {
  std::map<std::int64_t, std::uint64_t> nsOfSeq;
  for (const json& k : kernels) {
    const json seq = k.is_object() ? k.value("seq", json()) : json();
    if (!seq.is_number_integer()) continue;  // not a launch the library knew
    if (const auto times = kernelRecordTimes(k); seq.get<std::int64_t>() >= 0 && times)
      nsOfSeq[seq.get<std::int64_t>()] = times->second;
  }
  for (BundleLaunch& launch : launches) {
    if (!launch.info.is_object() || !launch.info.contains("seq") ||
        !launch.info["seq"].is_number_integer())
      continue;
    if (auto it = nsOfSeq.find(launch.info["seq"].get<std::int64_t>()); it != nsOfSeq.end())
      launch.info["kernel_ns"] = it->second;
  }
}

std::optional<std::uint32_t> overflowCapacity(const std::vector<BundleLaunch>& launches,
                                              std::uint32_t capacity, std::uint64_t maxBytes) {
  double scale = 1.0;
  std::uint64_t slots = 0;
  for (const BundleLaunch& launch : launches) {
    const json& info = launch.info;
    if (!info.is_object() || !info.value("traced", false)) continue;
    const auto kept = info.value("records", std::uint64_t{0});
    const auto dropped = info.value("dropped", std::uint64_t{0});
    const auto warpSlots = info.value("warp_slots", std::uint64_t{0});
    const auto perWarp = info.value("capacity_per_warp", std::uint64_t{0});
    if (dropped == 0 || kept == 0 || warpSlots == 0 || perWarp == 0) continue;
    if (static_cast<double>(kept) < 0.9 * static_cast<double>(warpSlots * perWarp)) continue;
    scale = std::max(scale, static_cast<double>(kept + dropped) / static_cast<double>(kept));
    slots = std::max(slots, warpSlots);
  }
  if (slots == 0) return std::nullopt;
  const double wanted = std::ceil(static_cast<double>(capacity) * scale * 1.25);
  // One full (32-byte) record per place, plus the header: at most maxBytes.
  const std::uint64_t fits = maxBytes / (slots * 32);
  const auto next = static_cast<std::uint64_t>(std::min(wanted, static_cast<double>(fits)));
  if (next <= capacity || next > std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
  return static_cast<std::uint32_t>(next);
}

std::optional<std::size_t> kernelStreams(const std::vector<json>& kernels) {
  std::set<std::pair<std::uint64_t, std::uint64_t>> streams;
  for (const json& k : kernels) {
    if (!k.is_object()) continue;
    const json stream = k.value("stream", json());
    const json context = k.value("context", json(0));
    if (stream.is_number_unsigned() && (context.is_number_unsigned() || context == 0))
      streams.emplace(context.get<std::uint64_t>(), stream.get<std::uint64_t>());
  }
  if (streams.empty()) return std::nullopt;
  return streams.size();
}

std::string encodeBundle(const TraceBundle& bundle) {
  json launches = json::array();
  uint64_t offset = 0;
  for (const auto& l : bundle.launches) {
    launches.push_back({{"info", l.info}, {"offset", offset}, {"size", l.buffer.size()}});
    offset += l.buffer.size();
  }
  const std::string header =
      json{{"trace_map", bundle.traceMap}, {"run", bundle.run}, {"launches", launches}}.dump();
  std::string out(kBundleMagic);
  uint64_t size = header.size();
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  out.append(bytes, 8);
  out += header;
  for (const auto& l : bundle.launches) out += l.buffer;
  return out;
}

/// decodeBundle, throwing json::exception on a header field of the wrong type.
static Result<TraceBundle> decodeBundleFields(std::string_view bytes) {
  if (bytes.size() < 16 || bytes.substr(0, 8) != kBundleMagic)
    return fail("region_trace", "not a trace bundle (bad magic at byte 0)");
  uint64_t size = 0;
  for (int i = 0; i < 8; ++i)
    size |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  if (size > bytes.size() - 16)
    return fail("region_trace", fmt::format("trace bundle truncated: header of {} bytes at byte "
                                            "16, only {} bytes follow",
                                            size, bytes.size() - 16));
  json header = json::parse(bytes.substr(16, size), nullptr, false);
  if (header.is_discarded() || !header.contains("launches"))
    return fail("region_trace", "trace bundle header at byte 16 is not valid JSON");
  TraceBundle bundle;
  bundle.traceMap = header["trace_map"];
  bundle.run = header["run"];
  const std::string_view data = bytes.substr(16 + size);
  for (const auto& l : header["launches"]) {
    uint64_t off = integerOr(l, "offset", uint64_t{0}), len = integerOr(l, "size", uint64_t{0});
    if (off > data.size() || len > data.size() - off)
      return fail("region_trace", fmt::format("trace bundle truncated: launch buffer at byte {} "
                                              "of {} bytes is past the end",
                                              16 + size + off, len));
    bundle.launches.push_back(BundleLaunch{l["info"], std::string(data.substr(off, len))});
  }
  return bundle;
}

Result<TraceBundle> decodeBundle(std::string_view bytes) {
  try {
    return decodeBundleFields(bytes);
  } catch (const json::exception& e) {
    return fail("region_trace", fmt::format("trace bundle header at byte 16: {}", e.what()));
  }
}

}  // namespace argus::evidence
