#include "trace_file.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

namespace argus::inject {

std::optional<TraceGeometry> traceGeometry(const std::uint32_t grid[3],
                                           const std::uint32_t block[3],
                                           std::uint32_t capacityPerWarp, std::uint64_t maxBytes) {
  const std::uint64_t threads = std::uint64_t{block[0]} * block[1] * block[2];
  const std::uint64_t ctas = std::uint64_t{grid[0]} * grid[1] * grid[2];
  const std::uint64_t warpsPerCta = (threads + 31) / 32;
  // ctas <= 2^32 * 2^16 * 2^16 and warpsPerCta <= 32: the product fits in 64 bits.
  const std::uint64_t slots = ctas * warpsPerCta;
  constexpr auto kMax32 = std::numeric_limits<std::uint32_t>::max();
  if (threads == 0 || ctas == 0 || capacityPerWarp == 0 || slots > kMax32) return std::nullopt;
  const std::uint64_t records = slots * capacityPerWarp;  // < 2^64: both factors < 2^32
  if (records > (std::numeric_limits<std::uint64_t>::max() - sizeof(trace::TraceHeader)) /
                    sizeof(trace::TraceRecord)) {
    return std::nullopt;
  }
  const std::uint64_t bytes = sizeof(trace::TraceHeader) + records * sizeof(trace::TraceRecord);
  if (bytes > maxBytes) return std::nullopt;
  return TraceGeometry{static_cast<std::uint32_t>(warpsPerCta), static_cast<std::uint32_t>(slots),
                       capacityPerWarp, bytes};
}

std::optional<std::uint64_t> windowedStart(std::uint64_t allocation, std::uint64_t allocated,
                                           std::uint64_t bytes) {
  constexpr std::uint64_t kWindow = trace::kTraceWindowBytes;
  if (bytes == 0 || bytes > kWindow || allocated < bytes) return std::nullopt;
  // The window edge after `at` (0 past the top of the address space: no edge).
  const auto edgeAfter = [](std::uint64_t at) { return (at / kWindow + 1) * kWindow; };
  const auto fits = [&](std::uint64_t start) {
    const std::uint64_t edge = edgeAfter(start);
    return start - allocation <= allocated - bytes && (edge == 0 || edge - start >= bytes);
  };
  if (fits(allocation)) return allocation;
  const std::uint64_t edge = edgeAfter(allocation);
  if (edge > allocation && fits(edge)) return edge;
  return std::nullopt;
}

trace::TraceHeader initialHeader(const TraceGeometry& geometry) {
  trace::TraceHeader header;
  header.capacityPerWarp = geometry.capacityPerWarp;
  header.warpSlots = geometry.warpSlots;
  header.warpsPerCta = geometry.warpsPerCta;
  return header;
}

std::vector<trace::TraceRecord> compactRecords(std::span<const trace::TraceRecord> records,
                                               std::uint32_t warpSlots,
                                               std::uint32_t capacityPerWarp) {
  std::vector<trace::TraceRecord> out;
  const std::uint64_t total = std::uint64_t{warpSlots} * capacityPerWarp;
  const std::uint64_t n = total < records.size() ? total : records.size();
  // Slot-major order is the buffer order, so one pass keeps slot order and append order.
  for (std::uint64_t i = 0; i < n; ++i) {
    if ((records[i].meta & trace::kValidBit) != 0) out.push_back(records[i]);
  }
  return out;
}

std::expected<LayoutWord, std::string> readLayoutWord(std::uint32_t word) {
  constexpr std::uint32_t kFlags = trace::kLayoutPartedRecorded | trace::kLayoutWindowed |
                                   trace::kLayoutHalves | trace::kLayoutCountFirst;
  if (word == sizeof(trace::TraceRecord)) return LayoutWord{word, false, false};
  if ((word & ~kFlags) != sizeof(trace::CompactRecord))
    return std::unexpected(
        "is not a 4-byte record size of 16 (with or without the parted-recorded, windowed, "
        "halves and count-first bits) or 32");
  if ((word & trace::kLayoutHalves) == 0)
    return std::unexpected(
        "holds compact records in the field order before the halves one (format.h "
        "kLayoutHalves): lowered by an older Argus; rebuild the variant");
  if ((word & trace::kLayoutCountFirst) == 0)
    return std::unexpected(
        "holds compact slots in the order before the count-first one (format.h "
        "kLayoutCountFirst): lowered by an older Argus; rebuild the variant");
  return LayoutWord{word & ~kFlags, (word & trace::kLayoutPartedRecorded) != 0,
                    (word & trace::kLayoutWindowed) != 0};
}

ExpandedRecords expandCompactRecords(std::span<const trace::CompactRecord> area,
                                     std::uint32_t warpSlots, std::uint32_t capacityPerWarp,
                                     std::uint32_t warpsPerCta, bool partedRecorded) {
  ExpandedRecords out;
  // Place 0: the highest count of any lane and the lost count; 1 .. 2 cap - 2: records;
  // 2 cap - 1: the closing record (format.h kLayoutCountFirst).
  const std::uint64_t places = 2 * std::uint64_t{capacityPerWarp};
  if (places < 4 || warpsPerCta == 0) return out;
  const std::uint64_t recordPlaces = places - 2;
  out.capacityPerWarp = static_cast<std::uint32_t>(recordPlaces);
  const auto valid = [](const trace::CompactRecord& r) { return (r.meta & trace::kValidBit) != 0; };
  const auto closes = [](const trace::CompactRecord& r) {
    return (r.meta & trace::kClosingBit) != 0;
  };
  for (std::uint64_t w = 0; w < warpSlots && (w + 1) * places <= area.size(); ++w) {
    const std::span<const trace::CompactRecord> slotPlaces = area.subspan(w * places, places);
    const trace::CompactRecord& close = slotPlaces[places - 1];
    const std::uint64_t highest = slotPlaces[0].begin;
    // Occurrences begun without lane 0 (0 unless the kernel counts them); with partedRecorded,
    // the records those passes stored from the last record place down.
    const std::uint64_t withoutLaneZero = slotPlaces[0].iteration;  // its second word
    // The record places, indexed by record (place 1 + i).
    const std::span<const trace::CompactRecord> slot = slotPlaces.subspan(1, recordPlaces);
    const std::uint64_t downStart =
        partedRecorded ? recordPlaces - std::min(withoutLaneZero, recordPlaces) : recordPlaces;
    // Records in places [from, to).
    const auto recordsIn = [&](std::uint64_t from, std::uint64_t to) {
      std::uint64_t found = 0;
      for (std::uint64_t i = from; i < to; ++i) found += valid(slot[i]) && !closes(slot[i]);
      return found;
    };
    // A place something was stored at: a record, or a first half alone (a begin marker ran; its
    // second half is stored later, kLayoutCountFirst). The buffer is zeroed before the launch,
    // and a first half of two zero words (a timestamp's low word 0 with iteration 0) is read as
    // unwritten.
    const auto touched = [](const trace::CompactRecord& r) {
      return r.begin != 0 || r.iteration != 0 || r.end != 0 || r.meta != 0;
    };
    const std::uint64_t count = close.begin;
    // No closing record, or a place written past its count (below the places recorded passes
    // without lane 0 wrote): then the closing record is an earlier exit's (written before a
    // guarded ret that was not taken). Either way the warp left by a path that writes none, and
    // its timestamps' high bits are unknown.
    bool closed = valid(close) && closes(close);
    for (std::uint64_t i = count; closed && i < downStart; ++i) closed = !touched(slot[i]);
    if (!closed) {
      std::uint64_t written = 0;
      for (const trace::CompactRecord& r : slot) written += touched(r) && !closes(r);
      if (written > 0 || highest > 0 || withoutLaneZero > 0) {
        ++out.unclosedSlots;
        out.unclosedRecords += std::max({written, highest, withoutLaneZero});
        out.dropped += std::max({written, highest, withoutLaneZero});
      }
      continue;
    }
    // Past the record places every record went to the last one: it holds the newest, not the
    // next in sequence, and is left out with the others that did not fit; where the kernel
    // stored second halves at the next place (kClosingPendingBit) the place before it holds the
    // second half of one of those (stored when the next took the last place again), and is left
    // out too. Places the passes without lane 0 also wrote are left out as well.
    const std::uint64_t upWritten = std::min(count, recordPlaces);
    const std::uint64_t overwritten = (close.meta & trace::kClosingPendingBit) != 0 ? 2 : 1;
    const std::uint64_t limit =
        std::min(count > recordPlaces ? recordPlaces - overwritten : count, downStart);
    const std::uint64_t kept = recordsIn(0, limit);
    out.dropped += count > kept ? count - kept : 0;
    // The recorded passes without lane 0: places [downFrom, recordPlaces), clear of lane 0's
    // and, past the record places, of the first record place, which every later one overwrote.
    const std::uint64_t downFrom =
        std::max(withoutLaneZero > recordPlaces ? std::uint64_t{1} : downStart, upWritten);
    const std::uint64_t keptDown =
        partedRecorded && downFrom < recordPlaces ? recordsIn(downFrom, recordPlaces) : 0;
    if (partedRecorded) out.dropped += withoutLaneZero - keptDown;
    // Lanes ran markers lane 0, which stores, did not run: more of them, or as many others
    // while lane 0 was not among the running lanes. Each count is a lower bound; recorded
    // passes without lane 0 account for up to withoutLaneZero of the highest count's surplus.
    const std::uint64_t surplus = highest > count ? highest - count : 0;
    if (const std::uint64_t parted =
            partedRecorded ? (surplus > withoutLaneZero ? surplus - withoutLaneZero : 0)
                           : std::max(surplus, withoutLaneZero);
        parted > 0) {
      ++out.partedSlots;
      out.partedRecords += parted;
      out.dropped += parted;
    }
    const std::uint64_t closing = (std::uint64_t{close.end} << 32) | close.iteration;
    // A record's whole end timestamp: the last one at or before `later` with its low 32 bits.
    const auto endBefore = [](std::uint64_t later, const trace::CompactRecord& r) {
      return later - ((static_cast<std::uint32_t>(later) - r.end) & 0xffffffffu);
    };
    const auto expand = [&](const trace::CompactRecord& r, std::uint64_t end, std::uint64_t seq,
                            trace::TraceRecord& t) {
      t.begin = end - ((r.end - r.begin) & 0xffffffffu);
      t.end = end;
      t.meta = r.meta;
      t.cta = static_cast<std::uint32_t>(w / warpsPerCta);
      t.iteration = r.iteration;
      t.warp = static_cast<std::uint32_t>(seq << 8) | static_cast<std::uint32_t>(w % warpsPerCta);
    };
    // Going back from the closing timestamp: each end is less than 2^32 units before the next.
    std::uint64_t later = closing;
    const std::size_t first = out.records.size();
    out.records.resize(first + kept);
    std::size_t at = first + kept;
    for (std::uint64_t i = limit; i-- > 0;) {
      const trace::CompactRecord& r = slot[i];
      if (!valid(r) || closes(r)) continue;
      const std::uint64_t end = endBefore(later, r);
      expand(r, end, i, out.records[--at]);
      later = end;
    }
    // The passes without lane 0 ran between the warp's other records, in no order the places
    // keep: each end is placed against the closing timestamp (exact within the span the launch
    // notes check), and the sequence numbers continue after lane 0's.
    std::uint64_t seq = kept;
    for (std::uint64_t i = recordPlaces; keptDown > 0 && i-- > downFrom;) {
      const trace::CompactRecord& r = slot[i];
      if (!valid(r) || closes(r)) continue;
      expand(r, endBefore(closing, r), seq++, out.records.emplace_back());
    }
  }
  return out;
}

std::uint64_t compactTimeSpanNs(int smClockKHz) {
  // 2^32 cycles at 1.1 x the clock: 2^32 * 10^6 / (1.1 kHz) ns, within 64 bits.
  const std::uint64_t kHz = smClockKHz > 0 ? static_cast<std::uint64_t>(smClockKHz) : 3'000'000;
  return std::min(kGlobalTimerSpanNs, kGlobalTimerSpanNs * 10'000'000 / (kHz * 11));
}

std::string launchFileBytes(trace::TraceHeader header, std::span<const trace::TraceRecord> records,
                            bool compact, std::uint64_t* validRecords) {
  std::vector<trace::TraceRecord> kept;
  std::span<const trace::TraceRecord> body = records;
  if (compact) {
    kept = compactRecords(records, header.warpSlots, header.capacityPerWarp);
    body = kept;
    header.reserved[0] = kCompactTraceFile;
    header.reserved[1] = kept.size();
    if (validRecords != nullptr) *validRecords = kept.size();
  } else {
    header.reserved[0] = 0;
    header.reserved[1] = 0;
    if (validRecords != nullptr) {
      *validRecords = compactRecords(records, header.warpSlots, header.capacityPerWarp).size();
    }
  }
  std::string bytes(sizeof header + body.size_bytes(), '\0');
  std::memcpy(bytes.data(), &header, sizeof header);
  if (!body.empty()) std::memcpy(bytes.data() + sizeof header, body.data(), body.size_bytes());
  return bytes;
}

namespace {
std::string dims(const std::uint32_t d[3]) {
  return "[" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) + "]";
}
}  // namespace

std::string launchLine(const LaunchLine& line) {
  std::string out = "{\"seq\":" + std::to_string(line.seq);
  out += ",\"api\":" + jsonString(line.api);
  out += ",\"kernel\":" + jsonString(line.kernel);
  out += ",\"grid\":" + dims(line.grid) + ",\"block\":" + dims(line.block);
  out += ",\"traced\":" + std::string(line.traced ? "true" : "false");
  out += ",\"records\":" + std::to_string(line.records);
  out += ",\"dropped\":" + std::to_string(line.dropped);
  if (line.traced) {
    out += ",\"capacity_per_warp\":" + std::to_string(line.capacityPerWarp);
    out += ",\"warp_slots\":" + std::to_string(line.warpSlots);
  }
  out += ",\"file\":" + (line.file.empty() ? std::string("null") : jsonString(line.file));
  out += ",\"module\":" + (line.module.empty() ? std::string("null") : jsonString(line.module));
  if (!line.lookup.empty()) out += ",\"lookup\":" + jsonString(line.lookup);
  out += ",\"correlation\":" + std::to_string(line.correlation);
  if (!line.note.empty()) out += ",\"note\":" + jsonString(line.note);
  return out + "}";
}

}  // namespace argus::inject
