#include "trace_file.h"

#include "l2_read_kernel.h"

#include <argus/support/process.h>
#include <argus/trace/decode.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <vector>

namespace argus::inject {
namespace {

using trace::TraceHeader;
using trace::TraceRecord;

/// A compact record from its fields in TraceRecord's order (begin, end, meta, iteration); it is
/// stored in format.h's (kLayoutHalves: begin, iteration, end, meta).
trace::CompactRecord compactRecord(std::uint32_t begin, std::uint32_t end, std::uint32_t meta,
                                   std::uint32_t iteration) {
  return {.begin = begin, .iteration = iteration, .end = end, .meta = meta};
}

/// One warp slot of a compact buffer of capacity `cap` (format.h kLayoutCountFirst): the counts
/// in place 0, record i in place 1 + i, the closing record in the last place.
struct CompactSlot {
  std::span<trace::CompactRecord> places;
  CompactSlot(std::vector<trace::CompactRecord>& area, std::size_t w, std::size_t cap)
      : places(std::span(area).subspan(w * 2 * cap, 2 * cap)) {}
  trace::CompactRecord& counts() { return places.front(); }
  trace::CompactRecord& record(std::size_t i) { return places[1 + i]; }
  trace::CompactRecord& closing() { return places.back(); }
};

TEST(TraceGeometry, SizesFromGridBlockAndCapacity) {
  const std::uint32_t grid[3] = {128, 1, 1};
  const std::uint32_t block[3] = {256, 1, 1};
  const auto g = traceGeometry(grid, block, 64, ~0ull);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->warpsPerCta, 8u);
  EXPECT_EQ(g->warpSlots, 1024u);
  EXPECT_EQ(g->capacityPerWarp, 64u);
  EXPECT_EQ(g->bytes, 64u + 1024u * 64u * 32u);
}

TEST(TraceGeometry, PartialWarpsAndMultiDimensionalLaunches) {
  const std::uint32_t grid[3] = {3, 2, 2};
  const std::uint32_t block[3] = {50, 2, 1};  // 100 threads: 4 warps, the last partial
  const auto g = traceGeometry(grid, block, 16, ~0ull);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->warpsPerCta, 4u);
  EXPECT_EQ(g->warpSlots, 48u);
}

TEST(TraceGeometry, RefusesEmptyHugeAndOverLimitBuffers) {
  const std::uint32_t block[3] = {1024, 1, 1};
  const std::uint32_t none[3] = {0, 1, 1};
  EXPECT_FALSE(traceGeometry(none, block, 16, ~0ull));
  const std::uint32_t huge[3] = {0x7fffffffu, 65535u, 1};  // warp slots overflow 32 bits
  EXPECT_FALSE(traceGeometry(huge, block, 16, ~0ull));
  const std::uint32_t grid[3] = {128, 1, 1};
  EXPECT_FALSE(traceGeometry(grid, block, 256, 1u << 20));  // 32 MiB > 1 MiB
  EXPECT_FALSE(traceGeometry(grid, block, 0, ~0ull));
}

// Compact kernels keep a record's place as the low 32 bits of its address: the buffer must not
// cross a 4 GiB edge. The library allocates twice the size where the first allocation does.
TEST(TraceGeometry, WindowedStartKeepsTheBufferOffFourGibEdges) {
  constexpr std::uint64_t kGib = 1ull << 30;
  constexpr std::uint64_t kWindow = 4 * kGib;
  const std::uint64_t mib = 1ull << 20;
  // Inside one window: where it was allocated.
  EXPECT_EQ(windowedStart(0x7f0000000000ull, mib, mib), 0x7f0000000000ull);
  EXPECT_EQ(windowedStart(3 * kWindow - mib, mib, mib), 3 * kWindow - mib);  // ends at the edge
  // Across an edge: no start in an allocation of the buffer's own size.
  EXPECT_FALSE(windowedStart(3 * kWindow - mib / 2, mib, mib));
  // Twice the size: before the edge when that leaves room, else from the edge on.
  EXPECT_EQ(windowedStart(3 * kWindow - mib, 2 * mib, mib), 3 * kWindow - mib);
  EXPECT_EQ(windowedStart(3 * kWindow - mib / 2, 2 * mib, mib), 3 * kWindow);
  EXPECT_EQ(windowedStart(3 * kWindow - 1, 2 * mib, mib), 3 * kWindow);
  // A whole window fits only from an edge; more than a window never.
  EXPECT_EQ(windowedStart(kWindow + 256, 2 * kWindow, kWindow), 2 * kWindow);
  EXPECT_FALSE(windowedStart(kWindow, 2 * kWindow, kWindow + 1));
  EXPECT_FALSE(windowedStart(kWindow, mib, 0));
  EXPECT_FALSE(windowedStart(kWindow, mib - 1, mib));  // smaller than the buffer
  // The top window of the address space has no edge after it.
  EXPECT_EQ(windowedStart(~0ull - mib + 1, mib, mib), ~0ull - mib + 1);
}

TEST(TraceHeader, InitialHeaderHasMagicVersionAndShape) {
  const TraceHeader h = initialHeader({8, 1024, 64, 0});
  EXPECT_EQ(h.magic, trace::kTraceMagic);
  EXPECT_EQ(h.version, trace::kTraceVersion);
  EXPECT_EQ(h.capacityPerWarp, 64u);
  EXPECT_EQ(h.warpSlots, 1024u);
  EXPECT_EQ(h.warpsPerCta, 8u);
  EXPECT_EQ(h.dropped, 0u);
}

std::vector<TraceRecord> sampleBuffer() {
  // 3 slots x 4 records: slot 0 holds 2, slot 1 none, slot 2 is full.
  std::vector<TraceRecord> records(12);
  auto put = [&](std::size_t index, std::uint32_t warp, std::uint32_t iteration) {
    records[index].meta = trace::kValidBit | (5u << 16);
    records[index].warp = warp;
    records[index].iteration = iteration;
    records[index].begin = 100 + index;
  };
  put(0, 0, 0);
  put(1, 0, 1);
  for (std::uint32_t i = 0; i < 4; ++i) put(8 + i, 2, i);
  return records;
}

TEST(CompactRecords, KeepsValidRecordsInSlotAndAppendOrder) {
  const auto records = sampleBuffer();
  const auto kept = compactRecords(records, 3, 4);
  ASSERT_EQ(kept.size(), 6u);
  EXPECT_EQ(kept[0].begin, 100u);
  EXPECT_EQ(kept[1].begin, 101u);
  for (std::uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(kept[2 + i].warp, 2u);
    EXPECT_EQ(kept[2 + i].iteration, i);
  }
}

TEST(LaunchFile, CompactFormFlagsCountAndHoldsOnlyValidRecords) {
  const auto records = sampleBuffer();
  TraceHeader header = initialHeader({1, 3, 4, 0});
  header.dropped = 7;
  std::uint64_t valid = 0;
  const std::string bytes = launchFileBytes(header, records, true, &valid);
  EXPECT_EQ(valid, 6u);
  ASSERT_EQ(bytes.size(), sizeof(TraceHeader) + 6 * sizeof(TraceRecord));
  TraceHeader read;
  std::memcpy(&read, bytes.data(), sizeof read);
  EXPECT_EQ(read.reserved[0], kCompactTraceFile);
  EXPECT_EQ(read.reserved[1], 6u);
  EXPECT_EQ(read.dropped, 7u);
  TraceRecord last;
  std::memcpy(&last, bytes.data() + sizeof read + 5 * sizeof last, sizeof last);
  EXPECT_EQ(last.iteration, 3u);
}

TEST(LaunchFile, FullFormIsTheBufferVerbatim) {
  const auto records = sampleBuffer();
  std::uint64_t valid = 0;
  const std::string bytes = launchFileBytes(initialHeader({1, 3, 4, 0}), records, false, &valid);
  EXPECT_EQ(valid, 6u);
  ASSERT_EQ(bytes.size(), sizeof(TraceHeader) + 12 * sizeof(TraceRecord));
  TraceHeader read;
  std::memcpy(&read, bytes.data(), sizeof read);
  EXPECT_EQ(read.reserved[0], 0u);
  EXPECT_EQ(std::memcmp(bytes.data() + sizeof read, records.data(), 12 * sizeof(TraceRecord)), 0);
}

TEST(LaunchLine, IsOneJsonObjectWithEscapedNames) {
  LaunchLine line;
  line.seq = 3;
  line.api = "cuLaunchKernel";
  line.kernel = "k\"<\\>";
  line.grid[0] = 128, line.grid[1] = 1, line.grid[2] = 1;
  line.block[0] = 256, line.block[1] = 1, line.block[2] = 1;
  line.traced = true;
  line.records = 65536;
  line.capacityPerWarp = 64;
  line.warpSlots = 1024;
  line.file = "launch-3.bin";
  line.module = "0x1234";
  line.lookup = "module";
  line.correlation = 9;
  EXPECT_EQ(launchLine(line),
            R"({"seq":3,"api":"cuLaunchKernel","kernel":"k\"<\\>","grid":[128,1,1],)"
            R"("block":[256,1,1],"traced":true,"records":65536,"dropped":0,)"
            R"("capacity_per_warp":64,"warp_slots":1024,"file":"launch-3.bin",)"
            R"("module":"0x1234","lookup":"module","correlation":9})");
  LaunchLine plain;
  plain.kernel = "plain";
  EXPECT_NE(launchLine(plain).find(R"("traced":false,"records":0,"dropped":0,"file":null)"),
            std::string::npos);
}

// The L2 reader's PTX assembles for Hopper, as the driver will compile it at load time (ptxas
// from the CUDA toolkit; skipped where there is none).
TEST(L2ReadKernel, PtxAssemblesForSm90) {
  auto ptxas = findTool("ptxas");
  if (!ptxas) GTEST_SKIP() << ptxas.error().text();
  const auto dir =
      std::filesystem::temp_directory_path() / ("argus-l2-read-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "l2_read.ptx") << kL2ReadPtx;
  auto run = runProcess({ptxas->string(), "-arch=sm_90", "-o", (dir / "l2_read.cubin").string(),
                         (dir / "l2_read.ptx").string()});
  std::error_code ec;
  const auto cubinBytes = std::filesystem::file_size(dir / "l2_read.cubin", ec);
  std::filesystem::remove_all(dir, ec);
  ASSERT_TRUE(run) << run.error().text();
  EXPECT_EQ(run->exitCode, 0) << run->err;
  EXPECT_GT(cubinBytes, 0u);
}

// Occurrences run without lane 0: the lost-counting end markers' count of passes without lane 0
// (place 0's second word) counts them even where every lane ran as many markers as lane
// 0; where both counts say something, the larger one is the lower bound.
TEST(CompactLayout, OccurrencesRunWithoutLaneZeroAreCounted) {
  std::vector<trace::CompactRecord> area(16);
  const std::uint32_t meta = trace::kValidBit | 1u;
  const auto closing = [&](std::uint32_t count) {
    return compactRecord(count, 0, meta | trace::kClosingBit, 1000);
  };
  // Slot 0: lane 0 ran 1 marker, as many as the others, which ran 3 without lane 0.
  CompactSlot s0(area, 0, 2), s1(area, 1, 2), s2(area, 2, 2), s3(area, 3, 2);
  s0.record(0) = compactRecord(10, 20, meta, 0);
  s0.counts() = {1, 3, 0, 0};
  s0.closing() = closing(1);
  // Slot 1: others ran 2 markers more than lane 0 and counted 1 without it: 2 lost at least.
  s1.record(0) = compactRecord(30, 40, meta, 0);
  s1.counts() = {3, 1, 0, 0};
  s1.closing() = closing(1);
  // Slot 2: nothing run without lane 0.
  s2.record(0) = compactRecord(50, 60, meta, 0);
  s2.counts() = {1, 0, 0, 0};
  s2.closing() = closing(1);
  // Slot 3: no closing record (the warp left by a path that writes none); only the 4 passes
  // without lane 0 say it ran anything.
  s3.counts() = {0, 4, 0, 0};
  const ExpandedRecords out = expandCompactRecords(area, 4, 2, 4);
  EXPECT_EQ(out.records.size(), 3u);
  EXPECT_EQ(out.partedSlots, 2u);
  EXPECT_EQ(out.partedRecords, 3u + 2u);
  EXPECT_EQ(out.unclosedSlots, 1u);
  EXPECT_EQ(out.unclosedRecords, 4u);
  EXPECT_EQ(out.dropped, 5u + 4u);
}

// parted=record (format.h, kLayoutPartedRecorded): passes begun without lane 0 store their
// records from the last record place down (record 2 cap - 3 - n, in place 2 cap - 2 - n, for the
// count's old value n); lane 0's go up from record 0. Capacity 4: the counts in place 0, records
// 0..5 in places 1..6, the closing record in place 7. Places both streams may have written are
// left out and counted as dropped.
TEST(CompactLayout, RecordedPassesWithoutLaneZeroFollowLaneZerosRecords) {
  std::vector<trace::CompactRecord> area(4 * 8);
  const std::uint32_t low = trace::kValidBit | (1u << 16);
  const std::uint32_t high = trace::kValidBit | (2u << 16);
  const auto closing = [&](std::uint32_t count, std::uint64_t at) {
    return compactRecord(count, static_cast<std::uint32_t>(at >> 32), low | trace::kClosingBit,
                         static_cast<std::uint32_t>(at));
  };
  const std::uint64_t at = (3ull << 32) | 1000u;
  CompactSlot s0(area, 0, 4), s1(area, 1, 4), s2(area, 2, 4), s3(area, 3, 4);
  // Slot 0: lane 0 stored 2 records, 2 passes without it stored theirs as records 5 and 4 (each
  // lane ran 2 markers: no surplus).
  s0.record(0) = compactRecord(100, 110, low, 0);
  s0.record(1) = compactRecord(300, 310, low, 1);
  s0.record(5) = compactRecord(400, 420, high, 1);
  s0.record(4) =
      compactRecord(0xfffffff0u, 5, high, 0);  // ended across the low word's wrap, before the close
  s0.counts() = {2, 2, 0, 0};
  s0.closing() = closing(2, at);
  // Slot 1: lane 0's 4 records and 3 recorded passes overlap in record 3 (4 + 3 > 6 places):
  // lane 0's records 0..2 and the passes' 5..4 are kept, record 3 is not, 2 records dropped.
  for (std::uint32_t i = 0; i < 4; ++i) s1.record(i) = compactRecord(10 * i, 10 * i + 5, low, i);
  s1.record(5) = compactRecord(500, 505, high, 0);
  s1.record(4) = compactRecord(600, 605, high, 1);
  s1.counts() = {4, 3, 0, 0};
  s1.closing() = closing(4, at);
  // Slot 2: 9 passes without lane 0, more than the 6 places: every one of them went down to
  // record 0 and stayed there, so lane 0's 1 record is gone too; records 1..5 are kept.
  for (std::uint32_t i = 0; i < 6; ++i) s2.record(i) = compactRecord(20 * i, 20 * i + 1, high, i);
  s2.counts() = {1, 9, 0, 0};
  s2.closing() = closing(1, at);
  // Slot 3: the lanes' highest count is 5 above lane 0's and only 2 passes were recorded: at
  // least 3 records lost apart from lane 0.
  s3.record(0) = compactRecord(7, 8, low, 0);
  s3.record(5) = compactRecord(9, 10, high, 0);
  s3.record(4) = compactRecord(11, 12, high, 1);
  s3.counts() = {6, 2, 0, 0};
  s3.closing() = closing(1, at);

  const ExpandedRecords out = expandCompactRecords(area, 4, 4, 4, true);
  EXPECT_EQ(out.capacityPerWarp, 6u);
  EXPECT_EQ(out.unclosedSlots, 0u);
  EXPECT_EQ(out.partedSlots, 1u);
  EXPECT_EQ(out.partedRecords, 3u);
  EXPECT_EQ(out.dropped, 2u + (1u + 4u) + 3u);
  ASSERT_EQ(out.records.size(), 4u + 5u + 5u + 3u);
  // Slot 0: lane 0's two, then the passes' in the order they took places (records 5, then 4).
  EXPECT_EQ(out.records[0].begin, (3ull << 32) | 100u);
  EXPECT_EQ(out.records[1].end, (3ull << 32) | 310u);
  EXPECT_EQ(out.records[2].begin, (3ull << 32) | 400u);
  EXPECT_EQ(out.records[2].meta, high);
  EXPECT_EQ(out.records[2].warp, 2u << 8);
  EXPECT_EQ(out.records[3].begin, (2ull << 32) | 0xfffffff0u);
  EXPECT_EQ(out.records[3].end, (3ull << 32) | 5u);
  EXPECT_EQ(out.records[3].warp, 3u << 8);
  EXPECT_EQ(out.records[3].iteration, 0u);
  // Slot 1: records 0..2, then 5 and 4.
  EXPECT_EQ(out.records[4].iteration, 0u);
  EXPECT_EQ(out.records[6].iteration, 2u);
  EXPECT_EQ(out.records[7].begin, (3ull << 32) | 500u);
  EXPECT_EQ(out.records[8].begin, (3ull << 32) | 600u);
  EXPECT_EQ(out.records[8].warp, (4u << 8) | 1u);
  // Slot 2: records 5 down to 1.
  EXPECT_EQ(out.records[9].iteration, 5u);
  EXPECT_EQ(out.records[13].iteration, 1u);
  EXPECT_EQ(out.records[13].cta, 0u);
  EXPECT_EQ(out.records[13].warp, (4u << 8) | 2u);
  // Without the flag the same slots read as lane 0's records only, the passes counted as lost:
  // slot 0's records 4 and 5 past lane 0's count then mean an earlier exit's closing record.
  const ExpandedRecords counted = expandCompactRecords(area, 4, 4, 4);
  EXPECT_EQ(counted.unclosedSlots, 4u);
}

// A compact buffer of 5 warp slots (2 warps per CTA) with capacity 2: 4 places per slot, the
// lanes' highest count in place 0, records in places 1..2, lane 0's closing record in place 3.
TEST(CompactLayout, ExpandToFullRecordsWithCtaWarpSequenceAndWholeTimestamps) {
  std::vector<trace::CompactRecord> area(20);
  const std::uint32_t meta = trace::kValidBit | (3u << 16) | 7u;
  const auto closing = [&](std::uint32_t count, std::uint64_t at, std::uint32_t also = 0) {
    return compactRecord(count, static_cast<std::uint32_t>(at >> 32),
                         meta | trace::kClosingBit | also, static_cast<std::uint32_t>(at));
  };
  const auto highest = [](std::uint32_t count) { return trace::CompactRecord{count, 0, 0, 0}; };
  CompactSlot s0(area, 0, 2), s1(area, 1, 2), s2(area, 2, 2), s3(area, 3, 2), s4(area, 4, 2);
  // Slot 0: two records across the low word's wrap (the places exactly full), then the closing
  // record.
  s0.record(0) = compactRecord(0xffffff00u, 0xfffffff0u, meta, 1);
  s0.record(1) = compactRecord(0x10u, 0x50u, meta, 2);
  s0.counts() = highest(2);
  s0.closing() = closing(2, (5ull << 32) | 0x100u);
  // Slot 1 (CTA 0, warp 1): five records produced by a kernel that stores second halves at the
  // next place (kClosingPendingBit); the last place holds the newest (the clamp) and the one
  // before it the second half of one the clamp overwrote (stored when the next took the last
  // place again), so none is kept.
  s1.record(0) = compactRecord(100, 130, meta, 0);
  s1.record(1) = compactRecord(140, 150, meta, 4);
  s1.counts() = highest(5);
  s1.closing() = closing(5, (9ull << 32) | 200u, trace::kClosingPendingBit);
  // Slot 2 (CTA 1, warp 0): a record but no closing record.
  s2.record(0) = compactRecord(1, 2, meta, 0);
  // Slot 3 (CTA 1, warp 1): other lanes ran 2 markers more than lane 0, which stores.
  s3.record(0) = compactRecord(10, 20, meta, 0);
  s3.counts() = highest(3);
  s3.closing() = closing(1, 50);
  // Slot 4 (CTA 2, warp 0): a closing record that counts 1 with 2 records written: an earlier
  // exit's (a guarded ret not taken), the warp having left without one. Left out, like slot 2.
  s4.record(0) = compactRecord(5, 6, meta, 0);
  s4.record(1) = compactRecord(7, 8, meta, 1);
  s4.counts() = highest(2);
  s4.closing() = closing(1, 60);

  const ExpandedRecords out = expandCompactRecords(area, 5, 2, 2);
  EXPECT_EQ(out.capacityPerWarp, 2u);
  EXPECT_EQ(out.unclosedSlots, 2u);
  EXPECT_EQ(out.unclosedRecords, 1u + 2u);
  EXPECT_EQ(out.partedSlots, 1u);
  EXPECT_EQ(out.partedRecords, 2u);
  EXPECT_EQ(out.dropped, 5u + 1u + 2u + 2u);  // slot 1's past its places, 2's, 3's parted, 4's
  ASSERT_EQ(out.records.size(), 3u);
  const auto& a = out.records[0];
  EXPECT_EQ(a.begin, (4ull << 32) | 0xffffff00u);
  EXPECT_EQ(a.end, (4ull << 32) | 0xfffffff0u);
  EXPECT_EQ(a.cta, 0u);
  EXPECT_EQ(a.warp, 0u);  // sequence 0, warp 0
  EXPECT_EQ(a.iteration, 1u);
  EXPECT_EQ(a.meta, meta);
  const auto& b = out.records[1];
  EXPECT_EQ(b.begin, (5ull << 32) | 0x10u);
  EXPECT_EQ(b.end, (5ull << 32) | 0x50u);
  EXPECT_EQ(b.warp, 1u << 8);
  const auto& d = out.records[2];
  EXPECT_EQ(d.warp, (0u << 8) | 1u);
  EXPECT_EQ(d.cta, 1u);
  EXPECT_EQ(d.begin, 10u);
  EXPECT_EQ(d.end, 20u);
  // Fewer than 4 places hold no record: nothing is read.
  EXPECT_TRUE(expandCompactRecords(std::span(area).first(2), 1, 1, 1).records.empty());
}

// A place whose first half alone was written (a leaf's begin marker ran, its second half was
// never stored) has no meta word, so it is no record: below the count it is dropped and counted.
// Past the count it means lane 0 went on after the closing record (a guarded ret not taken) and
// left by a path that writes none: the slot is not closed, and what it holds is counted.
TEST(CompactLayout, APlaceWithOnlyItsFirstHalfIsNoRecord) {
  std::vector<trace::CompactRecord> area(16);  // capacity 4: records 0..5 in places 1..6
  CompactSlot slot(area, 0, 4), later(area, 1, 4);
  const std::uint32_t meta = trace::kValidBit;
  slot.record(0) = compactRecord(10, 20, meta, 0);
  slot.record(1) = {.begin = 30, .iteration = 1};  // counted (the count is 2), never ended
  slot.counts() = {2, 0, 0, 0};
  slot.closing() = compactRecord(2, 0, meta | trace::kClosingBit, 100);
  later.record(0) = compactRecord(10, 20, meta, 0);
  later.record(1) = {.begin = 40, .iteration = 0};  // past the count
  later.counts() = {1, 0, 0, 0};
  later.closing() = compactRecord(1, 0, meta | trace::kClosingBit | trace::kClosingPendingBit, 30);
  const ExpandedRecords out = expandCompactRecords(area, 2, 4, 1);
  ASSERT_EQ(out.records.size(), 1u);
  EXPECT_EQ(out.records[0].end, 20u);
  EXPECT_EQ(out.unclosedSlots, 1u);
  EXPECT_EQ(out.unclosedRecords, 2u);
  EXPECT_EQ(out.dropped, 1u + 2u);
  EXPECT_EQ(out.partedSlots, 0u);
}

// The layout word: full records (32), compact ones only in the halves order with the counts
// first; anything else, the field order before the halves and the slot order before the counts
// first, is not traced.
TEST(LayoutWord, CompactNeedsTheHalvesOrderAndTheCountsFirst) {
  const std::uint32_t compact = sizeof(trace::CompactRecord) | trace::kLayoutCountFirst;
  const auto both = readLayoutWord(compact | trace::kLayoutWindowed | trace::kLayoutHalves |
                                   trace::kLayoutPartedRecorded);
  ASSERT_TRUE(both.has_value()) << both.error();
  EXPECT_EQ(both->recordBytes, sizeof(trace::CompactRecord));
  EXPECT_TRUE(both->windowed);
  EXPECT_TRUE(both->partedRecorded);
  const auto halves = readLayoutWord(compact | trace::kLayoutHalves);
  ASSERT_TRUE(halves.has_value());
  EXPECT_FALSE(halves->windowed);
  EXPECT_FALSE(halves->partedRecorded);
  const auto older = readLayoutWord(compact | trace::kLayoutWindowed);
  ASSERT_FALSE(older.has_value());
  EXPECT_NE(older.error().find("rebuild the variant"), std::string::npos) << older.error();
  const auto countLast = readLayoutWord(sizeof(trace::CompactRecord) | trace::kLayoutHalves);
  ASSERT_FALSE(countLast.has_value());
  EXPECT_NE(countLast.error().find("count-first"), std::string::npos) << countLast.error();
  EXPECT_NE(countLast.error().find("rebuild the variant"), std::string::npos) << countLast.error();
  const auto full = readLayoutWord(sizeof(trace::TraceRecord));
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(full->recordBytes, sizeof(trace::TraceRecord));
  EXPECT_FALSE(readLayoutWord(sizeof(trace::TraceRecord) | trace::kLayoutHalves).has_value());
  EXPECT_FALSE(readLayoutWord(8).has_value());
  EXPECT_FALSE(readLayoutWord(compact | (1u << 20) | trace::kLayoutHalves).has_value());
}

// The expanded records make a compact launch file whose slots hold 2 cap - 2 records.
TEST(CompactLayout, FillALaunchFileWithTheExpandedCapacity) {
  std::vector<trace::CompactRecord> area(4);
  CompactSlot slot(area, 0, 2);
  const std::uint32_t meta = trace::kValidBit;
  slot.record(0) = compactRecord(10, 20, meta, 0);
  slot.closing() = compactRecord(1, 0, meta | trace::kClosingBit, 30);
  const ExpandedRecords out = expandCompactRecords(area, 1, 2, 1);
  TraceHeader header = initialHeader({1, 1, out.capacityPerWarp, 0});
  std::uint64_t valid = 0;
  const std::string bytes = launchFileBytes(header, out.records, true, &valid);
  EXPECT_EQ(valid, 1u);
  ASSERT_EQ(bytes.size(), sizeof(TraceHeader) + sizeof(TraceRecord));
  TraceRecord r;
  std::memcpy(&r, bytes.data() + sizeof(TraceHeader), sizeof r);
  EXPECT_EQ(r.begin, 10u);
  EXPECT_EQ(r.end, 20u);
}

// The same occurrences written in both layouts decode alike: the compact buffer, expanded and
// put in a launch file, gives the full layout's occurrences (timestamps across the low word's
// wrap included) and counts what a full compact slot could not keep.
TEST(CompactLayout, DecodesToTheFullLayoutsOccurrences) {
  struct Occ {
    std::uint32_t region;
    std::uint64_t begin, end;
    std::uint32_t iteration;
  };
  const std::uint64_t base = (7ull << 32) - 300;  // the low word wraps during warp 0's records
  const std::vector<std::vector<Occ>> warps = {
      {{0, base, base + 100, 0}, {1, base + 150, base + 250, 0}, {0, base + 260, base + 420, 1}},
      {{1, base + 10, base + 30, trace::kNoIteration}, {0, base + 40, base + 900, 2}}};
  const std::uint32_t cap = 4, warpsPerCta = 2, slots = 2, sm = 5;
  const auto meta = [&](std::uint32_t region) {
    return trace::kValidBit | (region << 16) | (trace::kNoRole << 12) | sm;
  };
  std::vector<TraceRecord> full(slots * cap);
  std::vector<trace::CompactRecord> compact(slots * 2 * cap);
  for (std::uint32_t w = 0; w < slots; ++w) {
    CompactSlot slot(compact, w, cap);
    for (std::uint32_t j = 0; j < warps[w].size(); ++j) {
      const Occ& o = warps[w][j];
      full[w * cap + j] = {o.begin,         o.end,       meta(o.region),
                           w / warpsPerCta, o.iteration, (j << 8) | (w % warpsPerCta)};
      slot.record(j) =
          compactRecord(static_cast<std::uint32_t>(o.begin), static_cast<std::uint32_t>(o.end),
                        meta(o.region), o.iteration);
    }
    const std::uint64_t exit = base + 1000;
    slot.counts() = {static_cast<std::uint32_t>(warps[w].size()), 0, 0, 0};
    slot.closing() = compactRecord(static_cast<std::uint32_t>(warps[w].size()),
                                   static_cast<std::uint32_t>(exit >> 32),
                                   meta(0) | trace::kClosingBit, static_cast<std::uint32_t>(exit));
  }
  auto map = trace::parseTraceMap(nlohmann::json::parse(R"({"argus_trace_map": 1, "kernel": "k",
      "time_base": "globaltimer", "overflow": "clamp", "regions": [
      {"index": 0, "path": "a", "parent": null}, {"index": 1, "path": "b", "parent": null}]})"));
  ASSERT_TRUE(map.has_value()) << map.error().text();
  trace::TraceMap compactMap = *map;
  compactMap.compactRecords = true;
  const auto decode = [&](TraceHeader header, const std::vector<TraceRecord>& records,
                          const trace::TraceMap& with) {
    const std::string bytes = launchFileBytes(header, records, true, nullptr);
    auto decoded = trace::decodeTrace(std::as_bytes(std::span(bytes.data(), bytes.size())), with);
    EXPECT_TRUE(decoded.has_value()) << decoded.error().text();
    return decoded.value_or(trace::DecodedTrace{});
  };
  const trace::DecodedTrace a = decode(initialHeader({warpsPerCta, slots, cap, 0}), full, *map);
  const ExpandedRecords expanded = expandCompactRecords(compact, slots, cap, warpsPerCta);
  TraceHeader header = initialHeader({warpsPerCta, slots, expanded.capacityPerWarp, 0});
  header.dropped = expanded.dropped;
  header.reserved[2] = sizeof(trace::CompactRecord);  // what the library writes after expanding
  const trace::DecodedTrace b = decode(header, expanded.records, compactMap);
  ASSERT_EQ(a.occurrences.size(), 5u);
  ASSERT_EQ(b.occurrences.size(), a.occurrences.size());
  for (std::size_t i = 0; i < a.occurrences.size(); ++i) {
    const auto &x = a.occurrences[i], &y = b.occurrences[i];
    EXPECT_EQ(std::tie(x.region, x.begin, x.end, x.sm, x.cta, x.warp, x.iteration, x.role),
              std::tie(y.region, y.begin, y.end, y.sm, y.cta, y.warp, y.iteration, y.role))
        << "occurrence " << i;
  }
  EXPECT_EQ(a.dropped, 0u);
  EXPECT_EQ(b.dropped, 0u);

  // One slot of 4 record places (capacity 3) for a warp that produced 6. With second halves
  // stored at the next place (kClosingPendingBit) records 0..1 are kept; the last place (the
  // newest, record 5) and the one before it (record 2 with the second half of record 4, which
  // the clamp overwrote: stored when record 5 took the last place again) are left out, 4
  // counted as dropped. A kernel that stores them at the end marker keeps record 2 as well.
  std::vector<trace::CompactRecord> small(6);
  CompactSlot smallSlot(small, 0, 3);
  for (std::uint32_t j = 0; j < 3; ++j)
    smallSlot.record(j) = compactRecord(10 * j, 10 * j + 5, meta(0), j);
  smallSlot.record(3) = compactRecord(50, 55, meta(0), 5);
  smallSlot.counts() = {6, 0, 0, 0};
  for (const bool pending : {true, false}) {
    SCOPED_TRACE(pending ? "pending second halves" : "second halves at the end marker");
    smallSlot.closing() = compactRecord(
        6, 0, meta(0) | trace::kClosingBit | (pending ? trace::kClosingPendingBit : 0), 100);
    const ExpandedRecords kept = expandCompactRecords(small, 1, 3, 1);
    TraceHeader smallHeader = initialHeader({1, 1, kept.capacityPerWarp, 0});
    smallHeader.dropped = kept.dropped;
    smallHeader.reserved[2] = sizeof(trace::CompactRecord);
    const trace::DecodedTrace c = decode(smallHeader, kept.records, compactMap);
    ASSERT_EQ(c.occurrences.size(), pending ? 2u : 3u);
    EXPECT_EQ(c.occurrences.back().iteration, pending ? 1u : 2u);
    EXPECT_EQ(c.dropped, pending ? 4u : 3u);
  }

  // A compact kernel's launch file that no library expanded is refused, not misread.
  const std::string raw =
      launchFileBytes(initialHeader({warpsPerCta, slots, cap, 0}), full, true, nullptr);
  auto refused = trace::decodeTrace(std::as_bytes(std::span(raw.data(), raw.size())), compactMap);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("unexpanded"), std::string::npos)
      << refused.error().text();
}

// A launch shorter than 2^32 timer units decodes exactly: 2^32 ns of %globaltimer, or 2^32
// %clock64 cycles at the clock plus 10 % (H200: 1980 MHz -> 1.97 s), 3 GHz when unknown.
TEST(CompactTimeSpan, TheShorterOfBothTimeBases) {
  EXPECT_EQ(compactTimeSpanNs(1'980'000), 1'971'977'638u);
  EXPECT_EQ(compactTimeSpanNs(0), 1'301'505'241u);
  EXPECT_EQ(compactTimeSpanNs(-5), compactTimeSpanNs(0));
  EXPECT_EQ(compactTimeSpanNs(500'000), 1ull << 32) << "slow clocks: the globaltimer bound";
  EXPECT_EQ(compactTimeSpanNs(10'000'000), 390'451'572u) << "the clock query's gate";
}

}  // namespace
}  // namespace argus::inject
