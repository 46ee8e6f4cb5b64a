// Byte-level decoder tests on hand-built buffers, statistics definitions, Chrome export shape.
#include "argus/trace/decode.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace argus::trace {
namespace {

TraceMap testMap() {
  auto map = parseTraceMap(nlohmann::json::parse(R"({
    "argus_trace_map": 1, "kernel": "k", "time_base": "globaltimer", "capacity_hint": 4,
    "regions": [{"index": 0, "id": "aaaa", "path": "main", "parent": null},
                {"index": 1, "id": "bbbb", "path": "main/step", "parent": 0}],
    "roles": ["producer", "consumer"], "scope": ""})"));
  EXPECT_TRUE(map.has_value()) << map.error().text();
  return *map;
}

TraceRecord record(uint32_t region, uint64_t begin, uint64_t end, uint32_t iteration = kNoIteration,
                   uint32_t role = kNoRole, uint32_t sm = 3, uint32_t cta = 0, uint32_t warp = 0) {
  TraceRecord r;
  r.begin = begin;
  r.end = end;
  r.meta = kValidBit | (region << 16) | (role << 12) | sm;
  r.cta = cta;
  r.iteration = iteration;
  r.warp = warp;
  return r;
}

/// Header (2 slots x 4 records) + the given records placed at slot positions.
std::vector<std::byte> fullBuffer(const std::vector<std::pair<size_t, TraceRecord>>& records,
                                  uint64_t dropped = 0) {
  TraceHeader h;
  h.capacityPerWarp = 4;
  h.warpSlots = 2;
  h.warpsPerCta = 2;
  h.dropped = dropped;
  std::vector<std::byte> bytes(sizeof(TraceHeader) + 8 * sizeof(TraceRecord));
  std::memcpy(bytes.data(), &h, sizeof h);
  for (const auto& [slot, r] : records) {
    std::memcpy(bytes.data() + sizeof h + slot * sizeof r, &r, sizeof r);
  }
  return bytes;
}

TEST(Decode, FullLayoutSkipsUnusedSlotsAndSortsByBegin) {
  auto bytes = fullBuffer({{0, record(0, 100, 900)},
                           {1, record(1, 300, 400, 1, 0)},
                           {4, record(1, 200, 260, 0, 1, 5, 0, 1)}},
                          /*dropped=*/7);
  auto t = decodeTrace(bytes, testMap());
  ASSERT_TRUE(t.has_value()) << t.error().text();
  ASSERT_EQ(t->occurrences.size(), 3u);
  EXPECT_EQ(t->dropped, 7u);
  EXPECT_EQ(t->occurrences[0].begin, 100u);
  EXPECT_FALSE(t->occurrences[0].iteration.has_value());  // iteration absent
  EXPECT_FALSE(t->occurrences[0].role.has_value());
  EXPECT_EQ(t->occurrences[1].begin, 200u);
  EXPECT_EQ(t->occurrences[1].sm, 5u);
  EXPECT_EQ(t->occurrences[1].warp, 1u);
  EXPECT_EQ(t->occurrences[1].role, 1u);
  EXPECT_EQ(t->occurrences[2].iteration, 1u);
  EXPECT_EQ(t->occurrences[2].duration(), 100u);
}

TEST(Decode, CompactLayout) {
  std::vector<std::byte> bytes = fullBuffer({});
  bytes.resize(sizeof(TraceHeader));
  for (auto r : {record(0, 10, 20), record(1, 12, 18, 4)}) {
    const auto* p = reinterpret_cast<const std::byte*>(&r);
    bytes.insert(bytes.end(), p, p + sizeof r);
  }
  auto t = decodeTrace(bytes, testMap());
  ASSERT_TRUE(t.has_value()) << t.error().text();
  EXPECT_EQ(t->occurrences.size(), 2u);
  // The same bytes read as a full buffer are truncated.
  auto full = decodeTrace(bytes, testMap(), BufferLayout::Full);
  ASSERT_FALSE(full.has_value());
  EXPECT_NE(full.error().message.find("truncated"), std::string::npos);
  EXPECT_NE(full.error().message.find("byte 128"), std::string::npos) << full.error().text();
}

TEST(Decode, SequencedRecordsCountOverwrittenOnesAsDropped) {
  // overflow=clamp: warp 1 of CTA 0 produced 7 records into a 4-record slot (sequence numbers
  // 0, 1, 2 and the last one, 6, in the last place), so 3 were dropped; warp 0 produced 2.
  TraceMap map = testMap();
  map.sequenced = true;
  auto seq = [](uint32_t warp, uint32_t n) { return warp | (n << 8); };
  auto bytes = fullBuffer({{0, record(0, 10, 20, kNoIteration, kNoRole, 3, 0, seq(0, 0))},
                           {1, record(0, 30, 40, kNoIteration, kNoRole, 3, 0, seq(0, 1))},
                           {4, record(1, 10, 11, 0, kNoRole, 3, 0, seq(1, 0))},
                           {5, record(1, 12, 13, 1, kNoRole, 3, 0, seq(1, 1))},
                           {6, record(1, 14, 15, 2, kNoRole, 3, 0, seq(1, 2))},
                           {7, record(1, 20, 21, 6, kNoRole, 3, 0, seq(1, 6))}});
  auto t = decodeTrace(bytes, map);
  ASSERT_TRUE(t.has_value()) << t.error().text();
  EXPECT_EQ(t->occurrences.size(), 6u);
  EXPECT_EQ(t->dropped, 3u);
  for (const auto& o : t->occurrences) EXPECT_LE(o.warp, 1u);  // sequence bits stripped
  auto plain = parseTraceMap(nlohmann::json::parse(
      R"({"argus_trace_map": 1, "kernel": "k", "time_base": "globaltimer", "overflow": "clamp",
          "regions": [{"index": 0, "id": "a", "path": "main", "parent": null}], "roles": []})"));
  ASSERT_TRUE(plain.has_value()) << plain.error().text();
  EXPECT_TRUE(plain->sequenced);
}

TEST(Decode, BadHeaders) {
  auto bytes = fullBuffer({});
  auto shortBuffer = decodeTrace(std::span(bytes).first(40), testMap());
  ASSERT_FALSE(shortBuffer.has_value());
  EXPECT_NE(shortBuffer.error().message.find("40 bytes"), std::string::npos);

  auto badMagic = bytes;
  badMagic[0] = std::byte{0};
  auto m = decodeTrace(badMagic, testMap());
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message.find("byte 0: magic"), std::string::npos) << m.error().text();

  auto badVersion = bytes;
  badVersion[4] = std::byte{9};
  auto v = decodeTrace(badVersion, testMap());
  ASSERT_FALSE(v.has_value());
  EXPECT_NE(v.error().message.find("byte 4"), std::string::npos);
}

TEST(Decode, TruncatedCompactRecord) {
  auto bytes = fullBuffer({});
  bytes.resize(sizeof(TraceHeader) + 40);
  auto t = decodeTrace(bytes, testMap(), BufferLayout::Compact);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message.find("starts at byte 96"), std::string::npos) << t.error().text();
}

TEST(Decode, InvalidRecordsAreCountedAndSkipped) {
  auto bytes = fullBuffer({{0, record(9, 1, 2)},        // unknown region
                           {1, record(0, 1, 2, 0, 7)},  // unknown role
                           {2, record(0, 5, 4)},        // end before begin
                           {3, record(0, 1, 2)}});      // fine
  auto t = decodeTrace(bytes, testMap());
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->occurrences.size(), 1u);
  EXPECT_EQ(t->invalidRecords, 3u);
}

// Issue 29, defect 6: a total of huge durations wrapped around.
TEST(Stats, TotalsSaturateInsteadOfWrapping) {
  auto s = durationStats({UINT64_MAX - 1, 5, 7});
  EXPECT_EQ(s.total, UINT64_MAX);
  EXPECT_TRUE(s.totalSaturated);
  EXPECT_DOUBLE_EQ(s.mean, (static_cast<double>(UINT64_MAX - 1) + 12.0) / 3.0);
  EXPECT_EQ(s.max, UINT64_MAX - 1);
  auto fine = durationStats({UINT64_MAX - 12, 5, 7});
  EXPECT_EQ(fine.total, UINT64_MAX);
  EXPECT_FALSE(fine.totalSaturated);
}

TEST(Stats, MedianAndNearestRankP95) {
  auto odd = durationStats({5, 1, 3});
  EXPECT_EQ(odd.count, 3u);
  EXPECT_EQ(odd.total, 9u);
  EXPECT_DOUBLE_EQ(odd.mean, 3.0);
  EXPECT_DOUBLE_EQ(odd.median, 3.0);
  EXPECT_EQ(odd.p95, 5u);
  EXPECT_EQ(odd.min, 1u);
  EXPECT_EQ(odd.max, 5u);
  EXPECT_DOUBLE_EQ(durationStats({1, 2, 3, 10}).median, 2.5);
  std::vector<uint64_t> hundred;
  for (uint64_t i = 1; i <= 100; ++i) hundred.push_back(i);
  EXPECT_EQ(durationStats(hundred).p95, 95u);  // rank ceil(95) = 95
  hundred.push_back(101);
  EXPECT_EQ(durationStats(hundred).p95, 96u);  // rank ceil(95.95) = 96
  EXPECT_EQ(durationStats({}).count, 0u);
}

TEST(Stats, PerRegionBreakdownsAndNesting) {
  auto bytes = fullBuffer({{0, record(0, 0, 1000)},
                           {1, record(1, 100, 300, 0, 0)},
                           {2, record(1, 300, 700, 1, 0)},
                           {4, record(1, 100, 200, 0, 1, 4, 0, 1)}});
  TraceMap map = testMap();
  auto t = decodeTrace(bytes, map);
  ASSERT_TRUE(t.has_value());
  auto stats = regionStatistics(*t, map);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].duration.total, 1000u);
  EXPECT_EQ(stats[1].parent, 0u);
  EXPECT_EQ(stats[1].duration.count, 3u);
  EXPECT_EQ(stats[1].byIteration.at(0).count, 2u);
  EXPECT_EQ(stats[1].byIteration.at(1).total, 400u);
  EXPECT_EQ(stats[1].byRole.at("producer").count, 2u);
  EXPECT_EQ(stats[1].byRole.at("consumer").total, 100u);
  EXPECT_EQ(stats[1].bySm.at(4).count, 1u);
  EXPECT_EQ(stats[0].byRole.at("").count, 1u);
  auto json = statisticsJson(stats, *t, map);
  EXPECT_EQ(json["unit"], "ns");
  EXPECT_EQ(json["regions"][1]["by_iteration"]["1"]["total"], 400);
}

TEST(Chrome, OneProcessPerSmOneThreadPerWarpCompleteEvents) {
  auto bytes = fullBuffer({{0, record(0, 1000, 3000)}, {4, record(1, 2000, 2500, 2, 0, 5, 1, 1)}});
  TraceMap map = testMap();
  auto t = decodeTrace(bytes, map);
  ASSERT_TRUE(t.has_value());
  auto chrome = chromeTrace(*t, map);
  const auto& events = chrome["traceEvents"];
  int complete = 0;
  int processes = 0;
  for (const auto& e : events) {
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("pid") && e.contains("tid"));
    }
    if (e["ph"] == "M" && e["name"] == "process_name") ++processes;
  }
  EXPECT_EQ(complete, 2);
  EXPECT_EQ(processes, 2);
  EXPECT_EQ(events[0]["name"], "main");
  EXPECT_DOUBLE_EQ(events[0]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(events[0]["dur"].get<double>(), 2.0);  // 2000 ns = 2 us
  EXPECT_EQ(events[1]["name"], "main/step");
  EXPECT_EQ(events[1]["pid"], 5);
  EXPECT_EQ(events[1]["args"]["role"], "producer");
  EXPECT_EQ(events[1]["args"]["iteration"], 2);
  auto byCta = chromeTrace(*t, map, ChromeGrouping::Cta);
  EXPECT_EQ(byCta["traceEvents"][1]["pid"], 1);
}

TEST(TraceMapParsing, RejectsMalformedMaps) {
  EXPECT_FALSE(parseTraceMap(nlohmann::json::object()).has_value());
  auto bad = parseTraceMap(nlohmann::json::parse(
      R"({"argus_trace_map":1,"kernel":"k","time_base":"sundial","regions":[]})"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("sundial"), std::string::npos);
  auto layout = parseTraceMap(nlohmann::json::parse(
      R"({"argus_trace_map":1,"kernel":"k","record_layout":"tiny","regions":[]})"));
  ASSERT_FALSE(layout.has_value());
  EXPECT_NE(layout.error().message.find("record_layout `tiny`"), std::string::npos);
  auto compact = parseTraceMap(nlohmann::json::parse(
      R"({"argus_trace_map":1,"kernel":"k","record_layout":"compact","regions":[]})"));
  ASSERT_TRUE(compact.has_value()) << compact.error().text();
  EXPECT_TRUE(compact->compactRecords);
}

}  // namespace
}  // namespace argus::trace
