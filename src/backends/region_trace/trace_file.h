// The host side of the trace buffer that needs no GPU: buffer geometry for a launch, the header the
// host writes before it, and the files written after it (so that all of it is unit-tested on CPU).
//
// Files in $ARGUS_TRACE_DIR, one traced launch each:
//   launch-<seq>.bin   the TraceHeader, then records (argus/trace/format.h).
//     Compact form (the default): header.reserved[0] == kCompactTraceFile and
//       header.reserved[1] == number of records that follow; only valid records are kept, slot by
//       slot in warp-slot order and, within a slot, in append order. header.dropped is the device's
//       count.
//     Full form (ARGUS_TRACE_FULL=1): header.reserved[0] == 0 and all warpSlots*capacityPerWarp
//       records follow exactly as they were in device memory.
//   launches.jsonl     one line per launch, traced or not (see launchLine).
//   kernels.jsonl      CUPTI kernel activity: GPU start/end of every kernel (inject/output.h).
//   errors.txt         problems, also printed on stderr with the prefix "argus-inject:".
#pragma once

#include <argus/inject/output.h>
#include <argus/trace/format.h>

#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace argus::inject {

/// header.reserved[0] of a compact launch file ("ARGC" little-endian).
inline constexpr std::uint64_t kCompactTraceFile = trace::kCompactMarker;

/// What a module's kTraceLayoutSymbol word says (format.h).
struct LayoutWord {
  std::uint32_t recordBytes = 0;  ///< 16 (CompactRecord) or 32 (TraceRecord).
  bool partedRecorded = false;    ///< kLayoutPartedRecorded.
  bool windowed = false;          ///< kLayoutWindowed.
};

/// Reads a layout word: a record size of 32, or 16 with the halves and count-first bits
/// (kLayoutHalves, kLayoutCountFirst) and any of the parted-recorded and windowed bits.
/// Otherwise why the module is not traced: another value, or compact records in the field order
/// before kLayoutHalves or the slot order before kLayoutCountFirst (an older Argus's lowering).
std::expected<LayoutWord, std::string> readLayoutWord(std::uint32_t word);

/// Device buffer shape of one launch.
struct TraceGeometry {
  std::uint32_t warpsPerCta = 0;
  std::uint32_t warpSlots = 0;
  std::uint32_t capacityPerWarp = 0;
  std::uint64_t bytes = 0;  ///< Header plus every record.
};

/// Geometry for a grid/block and capacity; nullopt when the counts overflow 32 bits (the header's
/// fields) or the buffer would exceed `maxBytes`.
[[nodiscard]] std::optional<TraceGeometry> traceGeometry(const std::uint32_t grid[3],
                                                         const std::uint32_t block[3],
                                                         std::uint32_t capacityPerWarp,
                                                         std::uint64_t maxBytes);

/// Where a buffer of `bytes` may start inside an allocation of `allocated` bytes at `allocation`
/// so that it lies in one 4 GiB-aligned window (trace::kTraceWindowBytes, which compact kernels
/// need: format.h, kLayoutWindowed): the allocation's start, else the first window edge inside
/// it; nullopt when neither leaves `bytes` before the allocation's end or the next edge. An
/// allocation of twice `bytes` (at most one window) always has such a start.
[[nodiscard]] std::optional<std::uint64_t> windowedStart(std::uint64_t allocation,
                                                         std::uint64_t allocated,
                                                         std::uint64_t bytes);

/// The header the host installs before the launch (dropped = 0).
[[nodiscard]] trace::TraceHeader initialHeader(const TraceGeometry& geometry);

/// Valid records only, slot by slot (see the compact form above).
[[nodiscard]] std::vector<trace::TraceRecord> compactRecords(
    std::span<const trace::TraceRecord> records, std::uint32_t warpSlots,
    std::uint32_t capacityPerWarp);

/// A compact device buffer's record area (format.h: record_layout=compact) as TraceRecords.
struct ExpandedRecords {
  std::vector<trace::TraceRecord> records;  ///< Valid records, slot by slot in append order.
  std::uint32_t capacityPerWarp = 0;        ///< Record places per slot: 2 cap - 2.
  /// Records the warps produced that are not in `records`: past a full slot (the closing
  /// record's count less the records kept), in unclosed slots, or parted (below).
  std::uint64_t dropped = 0;
  /// Warp slots where lanes ran markers without lane 0, which stores the records
  /// (partedRecords: at least the highest count less lane 0's, and at least the passes without
  /// lane 0 that the lost-counting end markers counted).
  std::uint64_t partedSlots = 0;
  std::uint64_t partedRecords = 0;
  /// Warp slots with records but no closing record (the warp left by a path that writes none):
  /// their records are left out (in `dropped`), their timestamps' high bits being unknown.
  std::uint64_t unclosedSlots = 0;
  std::uint64_t unclosedRecords = 0;
};

/// Expands `area` (warpSlots x capacityPerWarp x 32 bytes written as 2 x capacityPerWarp
/// CompactRecords per slot) into full records: CTA and warp from the slot, the sequence number
/// (TraceRecord::warp bits 8..31) from the place, the timestamps' high bits from the closing
/// record in the slot's last place, going back one record at a time. capacityPerWarp is at
/// least 2 (fewer places hold no record). `partedRecorded`: the module's kernels also recorded
/// the occurrences begun without lane 0, from the last record place down (format.h,
/// kLayoutPartedRecorded); their records follow lane 0's in each slot.
[[nodiscard]] ExpandedRecords expandCompactRecords(std::span<const trace::CompactRecord> area,
                                                   std::uint32_t warpSlots,
                                                   std::uint32_t capacityPerWarp,
                                                   std::uint32_t warpsPerCta,
                                                   bool partedRecorded = false);

/// How long a launch may run for its compact records to decode exactly, in ns. Their 32-bit
/// timestamps are placed by counting back from the closing record's 64-bit one, which is exact
/// while a warp's consecutive records are less than 2^32 timer units apart, and a launch that
/// ran less than that long cannot have records further apart. Both time bases are covered: 2^32
/// ns of %globaltimer, and 2^32 cycles of %clock64 at `smClockKHz` plus a 10 % margin (the
/// device's clock-rate attribute; 3 GHz when it is unknown, 0 or less).
[[nodiscard]] std::uint64_t compactTimeSpanNs(int smClockKHz);
/// 2^32 ns: the span with %globaltimer, the default time base.
inline constexpr std::uint64_t kGlobalTimerSpanNs = std::uint64_t{1} << 32;

/// The bytes of a launch file: `header` (with reserved[0..1] set for the chosen form) + records.
[[nodiscard]] std::string launchFileBytes(trace::TraceHeader header,
                                          std::span<const trace::TraceRecord> records, bool compact,
                                          std::uint64_t* validRecords);

/// One launches.jsonl line (without the newline).
struct LaunchLine {
  std::uint64_t seq = 0;
  std::string api;     ///< cuLaunchKernel, cuLaunchKernelEx, ...
  std::string kernel;  ///< Name from cuFuncGetName/cuKernelGetName, "" when unknown.
  std::uint32_t grid[3] = {0, 0, 0};
  std::uint32_t block[3] = {0, 0, 0};
  bool traced = false;
  std::uint64_t records = 0;  ///< Valid records read back.
  std::uint64_t dropped = 0;  ///< header.dropped after the launch.
  std::uint32_t capacityPerWarp = 0;
  std::uint32_t warpSlots = 0;
  std::string file;    ///< launch-<seq>.bin, "" when not traced.
  std::string module;  ///< Module (or library) handle, hex; "" when unknown.
  std::string lookup;  ///< How the trace symbol was found: module | kernel_function | library.
  std::uint32_t correlation = 0;  ///< CUPTI correlation id of the launch call.
  std::string note;               ///< Why a launch with the symbol was not traced, or an error.
};
[[nodiscard]] std::string launchLine(const LaunchLine& line);

}  // namespace argus::inject
