// The region-trace buffer: shared by the PTX trace-lowering pass (which emits the device code
// that writes it), the injection library (which allocates, clears, installs and reads it back
// around each launch) and the decoder (which turns it into occurrences).
//
// Layout in device memory: one TraceHeader, then `warpSlots * capacityPerWarp` TraceRecords.
// Warp slot w = ctaLinearId * warpsPerCta + warpInCta; each warp appends to its own slot with a
// per-warp counter kept in a register, so recording needs no atomics. A warp whose slot is full
// adds 1 to `dropped` (one atomic, only on overflow) and records nothing more: overflow is
// counted, never silent. The buffer is zeroed before every launch; a record is valid when
// bit 31 of `meta` is set, so unused records decode as absent.
//
// Launch files written by the injection library are compact by default: reserved[0] holds
// kCompactMarker ("ARGC") and reserved[1] the number of records that follow, which are only the
// valid records, slot by slot in append order; reserved[2] is the device's record size when the
// library expanded 16-byte CompactRecords (record_layout=compact; 0 for full records). With
// ARGUS_TRACE_FULL=1 reserved[0] is 0 and the whole buffer follows the header.
//
// The kernel finds the buffer through the module-scope constant kTraceSymbol (TraceSymbol: the
// header's device address, capacityPerWarp and warpsPerCta, 16 bytes in the constant bank),
// which the injection library sets with cuModuleGetGlobal + a copy before the launch. When the
// address is 0 (an ordinary run without the injection library) the kernel records nothing.
#pragma once

#include <cstdint>

namespace argus::trace {

/// Name of the `.const` variable (a TraceSymbol) through which the kernel finds its buffer.
inline constexpr const char* kTraceSymbol = "__argus_trace";

/// Records per warp slot (in 32-byte records) when ARGUS_TRACE_CAPACITY does not say.
inline constexpr std::uint32_t kDefaultTraceCapacity = 256;

/// The contents of kTraceSymbol. Legacy 8-byte symbols hold only the address.
struct TraceSymbol {
  std::uint64_t header = 0;  ///< Device address of the TraceHeader; 0 = not tracing.
  std::uint32_t capacityPerWarp = 0;
  std::uint32_t warpsPerCta = 0;
};
static_assert(sizeof(TraceSymbol) == 16);
inline constexpr std::uint64_t kTraceSymbolBytes = sizeof(TraceSymbol);

inline constexpr std::uint32_t kTraceMagic = 0x54475241u;  // "ARGT" little-endian
inline constexpr std::uint32_t kTraceVersion = 1;
inline constexpr std::uint64_t kCompactMarker = 0x43475241u;  // "ARGC" little-endian

/// What the record timestamps count.
enum class TimeBase : std::uint32_t {
  GlobalTimer = 0,  ///< %globaltimer, nanoseconds, comparable across SMs.
  SmClock = 1,      ///< %clock64, SM cycles, comparable within one SM only.
};

/// 64 bytes at the start of the buffer. The host fills every field but `dropped` before launch.
struct TraceHeader {
  std::uint32_t magic = kTraceMagic;
  std::uint32_t version = kTraceVersion;
  std::uint32_t capacityPerWarp = 0;  ///< Records each warp slot can hold.
  std::uint32_t warpSlots = 0;        ///< gridDim.x*y*z * warpsPerCta.
  std::uint32_t warpsPerCta = 0;      ///< ceil(blockDim.x*y*z / 32).
  std::uint32_t timeBase = 0;         ///< Unused: the time base is recorded in the trace map.
  std::uint64_t dropped =
      0;  ///< Records lost to full slots or run without lane 0 (device atomics).
  std::uint64_t reserved[4] = {};
};
static_assert(sizeof(TraceHeader) == 64);

/// One region occurrence, written by the warp's leader lane with two 16-byte stores at `end`.
struct TraceRecord {
  std::uint64_t begin = 0;      ///< Timestamp at the begin marker (TimeBase units).
  std::uint64_t end = 0;        ///< Timestamp at the end marker.
  std::uint32_t meta = 0;       ///< bit 31 valid | bits 16..27 region index | bits 12..15 role
                                ///< index (15 = none) | bits 0..7 SM id.
  std::uint32_t cta = 0;        ///< Linear CTA id (x + y*gridDim.x + z*gridDim.x*gridDim.y).
  std::uint32_t iteration = 0;  ///< Iteration coordinate, kNoIteration when the marker has none.
  std::uint32_t warp = 0;       ///< Warp index within the CTA.
};
static_assert(sizeof(TraceRecord) == 32);

inline constexpr std::uint32_t kValidBit = 1u << 31;
inline constexpr std::uint32_t kNoIteration = 0xffffffffu;
inline constexpr std::uint32_t kNoRole = 15;
inline constexpr std::uint32_t kMaxRegions = 4096;  ///< 12 bits of region index.

[[nodiscard]] constexpr std::uint32_t regionIndexOf(std::uint32_t meta) {
  return (meta >> 16) & 0xfffu;
}
[[nodiscard]] constexpr std::uint32_t roleIndexOf(std::uint32_t meta) {
  return (meta >> 12) & 0xfu;
}
[[nodiscard]] constexpr std::uint32_t smOf(std::uint32_t meta) {
  return meta & 0xffu;
}

// ---- The compact device layout (lower_markers_to_trace's record_layout=compact) -------------
//
// Each warp slot's capacityPerWarp x 32 bytes hold 2 x capacityPerWarp 16-byte CompactRecords
// (places), written by lane 0 with its own count: place 0 holds counts, places 1 .. 2 cap - 2
// records, place 2 cap - 1 the closing record (kLayoutCountFirst). A record's first half is the
// low 32 bits of the begin timestamp and the iteration (a leaf region's stored at its begin
// marker), its second half the low 32 bits of the end timestamp and meta: stored when the warp
// takes its next place (a leaf's begin marker, the end marker of a region with regions inside)
// or leaves the kernel, at the new place's address - 8, so that an end marker's path is a timer
// read (kernels with a leaf region open at some ret store it at the end marker instead, and the
// closing record says which, kClosingPendingBit). The
// meta word, with its valid bit, is in the second half, so a place whose first half alone was
// written (the buffer is zeroed before every launch) is not a record. CTA and warp follow from
// the slot, the sequence number from the place in it: record j goes to place 1 + min(j, 2 cap -
// 3), so when a slot is full its last record place holds the newest record, and (with pending
// second halves) the place before it the second half of a record that was overwritten: the
// expansion leaves both out. At
// every exit of the kernel the leaving lanes raise place 0's first word to their highest count
// (red.max), and lane 0 writes a closing record into the slot's last place: its record count and
// a whole 64-bit timestamp (the last exit's), from which the timestamps' high bits follow going
// back one record at a time. That needs each record's end less than 2^32 timer units before the
// next one's (or the exit's) and each region shorter than that: 4.29 s with globaltimer, about
// 2 s with clock64. A launch that ran longer than that (inject::compactTimeSpanNs) is reported
// as possibly decoded wrong, in its launches.jsonl note and errors.txt. A highest count above
// lane 0's means other lanes ran markers lane 0 did not: those records are lost, and counted. So
// are occurrences a warp ran without lane 0 with as many markers in every lane (an if/else
// inside a warp with markers on both arms): at each end marker the trace pass finds a warp may
// run without lane 0 (ptx::blocksWithoutLaneZero), the lowest running lane of a pass without
// lane 0 adds 1 to place 0's second word (the full layout: to header.dropped); the lost records
// are at least the larger of the two counts. Place 0's second half takes the pending-half store
// of the warp's first place, or of an exit before any place (no record before either). The
// injection library gives compact kernels a
// capacity of at least 2 and turns a compact buffer into TraceRecords when it reads it back
// (inject::expandCompactRecords), so launch files and the decoder see one format; records it
// cannot place are added to header.dropped. A module whose kernels write this layout
// defines kTraceLayoutSymbol = sizeof(CompactRecord), with the flag bits below.

/// Name of the `.const .u32` holding the bytes per device record (16) in compact modules, with
/// kLayoutWindowed, kLayoutHalves, kLayoutCountFirst and, where asked for, kLayoutPartedRecorded
/// set.
inline constexpr const char* kTraceLayoutSymbol = "__argus_trace_layout";

/// Name of the `.global .b8` array that lists the module's instrumented kernels, each name ended
/// by a NUL byte. The injection library reads it where several kernels of one module launch at
/// once (a CUDA graph's nodes): only a listed kernel writes the module's buffer.
inline constexpr const char* kTraceKernelsSymbol = "__argus_trace_kernels";
/// Set in kTraceLayoutSymbol's word when the kernels record the occurrences a warp began without
/// lane 0 (lower_markers_to_trace's parted=record): the lowest lane of such a pass takes n, the
/// old value of place 0's second word, with an atomic add and stores the record at place
/// 2 cap - 2 - min(n, 2 cap - 3), so those records fill the slot from its last record place
/// downward while lane 0's fill it upward. Where the two may both have written (lane 0's
/// count plus n above the record places) the expansion keeps neither and counts both as dropped.
inline constexpr std::uint32_t kLayoutPartedRecorded = 1u << 16;
/// Set in kTraceLayoutSymbol's word when the kernels take a record's place from the low 32 bits
/// of its address alone (lower_markers_to_trace's compact layout: one fused add-and-clamp per
/// occurrence instead of a clamp and a 64-bit address computation). Their buffer must then lie
/// in one 4 GiB-aligned window of the address space, which the injection library guarantees
/// (kTraceWindowBytes); a library that does not know the bit does not trace such a module.
inline constexpr std::uint32_t kLayoutWindowed = 1u << 17;
/// The window a buffer of kLayoutWindowed kernels lies in, and so its largest size.
inline constexpr std::uint64_t kTraceWindowBytes = 1ull << 32;

/// Set in kTraceLayoutSymbol's word when the kernels store compact records in this order (below):
/// {begin, iteration} first, {end, meta} second, so that a leaf region's begin marker stores the
/// first 8 bytes itself and its end marker only the second (no copies of the begin timestamp and
/// iteration for the end marker's store: measured on the H200, 0.13-0.29 us less per launch of
/// 64 occurrences on the seed kernels, BENCHMARKS.md). Every compact module since carries it; a
/// library that does not know the bit does not trace such a module, and this library does not
/// trace a compact module without it (the older field order): rebuild it.
inline constexpr std::uint32_t kLayoutHalves = 1u << 18;

/// Set in kTraceLayoutSymbol's word when a slot's counts are in its place 0 and its records in
/// places 1 .. 2 cap - 2 (above), and a record's second half may be stored when the warp takes
/// its next place: at the new place's address - 8, which for the warp's first place is place
/// 0's second half. Then an end marker only reads the timer (and copies the meta word, unless
/// the kernel has one region with a fixed role; lost-counting end markers also count), and the
/// program's own next instructions wait for no store's register reads (measured on the H200:
/// 0.19-0.22 us less per launch of 64 occurrences on the seed's compute kernel, 0.06-0.13 on its
/// memory kernel, BENCHMARKS.md). Every compact module since carries it; this library does not
/// trace a compact module without it (the slot order before): rebuild it.
inline constexpr std::uint32_t kLayoutCountFirst = 1u << 19;

/// A compact record (kLayoutHalves order). In a slot's place 0 the first word is the highest
/// count of any lane and the second the occurrences counted as begun without lane 0.
struct CompactRecord {
  std::uint32_t begin = 0;      ///< Low 32 bits of the begin timestamp (closing: the count).
  std::uint32_t iteration = 0;  ///< As TraceRecord::iteration (closing: timestamp low 32 bits).
  std::uint32_t end = 0;        ///< Low 32 bits of the end timestamp (closing: timestamp high).
  std::uint32_t meta = 0;       ///< As TraceRecord::meta; kClosingBit on the closing record.
};
static_assert(sizeof(CompactRecord) == 16);

/// Marks a compact slot's closing record (meta bits 28..30 are otherwise unused).
inline constexpr std::uint32_t kClosingBit = 1u << 30;
/// Set with kClosingBit when the kernel stored its records' second halves at the next place
/// (kLayoutCountFirst): once its slot was full, the place before the last holds a second half
/// of a record the clamp overwrote. Kernels with a leaf region open at a ret on some path, and
/// kernels without leaf regions placed at their begin, store them at the end marker instead.
inline constexpr std::uint32_t kClosingPendingBit = 1u << 29;

}  // namespace argus::trace
