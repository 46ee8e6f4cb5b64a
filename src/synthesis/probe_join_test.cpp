// probe_join on synthetic decoded traces: exact joins by region ID and (launch, CTA, warp) in
// the probed iteration, statistics, slack clamping, and errors.
#include "argus/synthesis/probe_join.h"

#include <gtest/gtest.h>

namespace argus::synthesis {
namespace {

trace::TraceMap makeMap(bool withProbe) {
  trace::TraceMap map;
  map.kernel = "k";
  map.timeBase = trace::TimeBase::GlobalTimer;
  // The probe variant has one region more; indices differ, IDs do not.
  map.regions.push_back({0, "iterid", "mainloop", std::nullopt});
  map.regions.push_back({1, "loadid", "mainloop/load", 0});
  if (withProbe) map.regions.push_back({2, "probeid", "mainloop/load/probe.cp_async.3", 1});
  return map;
}

trace::Occurrence occ(uint32_t region, uint64_t begin, uint64_t end, uint32_t cta, uint32_t warp,
                      std::optional<uint32_t> iteration) {
  trace::Occurrence o;
  o.region = region;
  o.begin = begin;
  o.end = end;
  o.cta = cta;
  o.warp = warp;
  o.iteration = iteration;
  return o;
}

nlohmann::json probeDescription() {
  return {{"op", "abc:cp_async:3"},
          {"kernel", "k"},
          {"iteration", 2},
          {"completion_method", "cp_async_wait_all"},
          {"region", {{"name", "probe.cp_async.3"}, {"id", "probeid"}}},
          {"iteration_region", {{"path", "mainloop"}, {"id", "iterid"}}}};
}

TEST(ProbeJoin, JoinsIterationByCtaAndWarp) {
  const trace::TraceMap probeMap = makeMap(true);
  const trace::TraceMap refMap = makeMap(false);
  trace::DecodedTrace probe;
  // Iteration 2 in CTA 0 warps 0 and 1, CTA 1 warp 0: probe latencies 400, 600, 500.
  probe.occurrences = {
      occ(2, 100, 500, 0, 0, 2), occ(0, 0, 1000, 0, 0, 2),  occ(2, 100, 700, 0, 1, 2),
      occ(0, 0, 1200, 0, 1, 2),  occ(2, 100, 600, 1, 0, 2), occ(0, 0, 1100, 1, 0, 2),
      occ(0, 0, 5000, 0, 0, 3),  // another iteration: ignored
  };
  trace::DecodedTrace ref;
  ref.occurrences = {
      occ(0, 0, 800, 0, 0, 2),  occ(0, 0, 900, 0, 1, 2),
      occ(0, 0, 1000, 1, 0, 2), occ(0, 0, 100, 0, 0, 1),  // another iteration: ignored
      occ(1, 0, 50, 0, 0, 2),                             // another region: ignored
  };
  ProbeJoinRequest request{probeDescription(), {{&probe, &probeMap}}, {{&ref, &refMap}}};
  auto out = probeJoin(request);
  ASSERT_TRUE(out.has_value()) << out.error().text();
  const auto& j = *out;
  EXPECT_EQ(j["qualification"], "derived");
  EXPECT_TRUE(j["provenance"].is_null());
  EXPECT_EQ(j["unit"], "ns");
  EXPECT_EQ(j["iteration"], 2);
  EXPECT_EQ(j["latency"]["count"], 3);
  EXPECT_EQ(j["latency"]["median"], 500.0);
  EXPECT_EQ(j["latency"]["min"], 400);
  EXPECT_EQ(j["latency"]["max"], 600);
  EXPECT_EQ(j["latency"]["p95"], 600);
  EXPECT_EQ(j["iteration_probe"]["median"], 1100.0);
  EXPECT_EQ(j["iteration_reference"]["median"], 900.0);
  // Exposed per pair: 200, 300, 100 -> median 200; slack = 500 - 200.
  EXPECT_EQ(j["exposed"]["median"], 200.0);
  EXPECT_EQ(j["exposed"]["min"], 100);
  EXPECT_EQ(j["exposed"]["max"], 300);
  EXPECT_EQ(j["slack"], 300.0);
  EXPECT_FALSE(j["slack_clamped"].get<bool>());
  EXPECT_EQ(j["joined"], 3);
  EXPECT_EQ(j["unmatched"], 0);
}

// A probe of an op issued after its iteration region (Triton's pipelined loads) waits outside the
// region: latency only, no exposed time or slack.
TEST(ProbeJoin, LoopTripProbesDeriveLatencyOnly) {
  const trace::TraceMap probeMap = makeMap(true);
  const trace::TraceMap refMap = makeMap(false);
  trace::DecodedTrace probe;
  probe.occurrences = {occ(2, 100, 400, 0, 0, 2), occ(0, 0, 1000, 0, 0, 2)};
  trace::DecodedTrace ref;
  ref.occurrences = {occ(0, 0, 1000, 0, 0, 2)};
  nlohmann::json description = probeDescription();
  description["iteration_source"] = "loop_trip";
  auto out = probeJoin({description, {{&probe, &probeMap}}, {{&ref, &refMap}}});
  ASSERT_TRUE(out.has_value()) << out.error().text();
  EXPECT_EQ((*out)["latency"]["median"], 300.0);
  EXPECT_TRUE((*out)["exposed"].is_null());
  EXPECT_TRUE((*out)["slack"].is_null());
  EXPECT_NE((*out)["slack_note"].get<std::string>().find("outside the region"), std::string::npos);
}

TEST(ProbeJoin, NegativeSlackIsClampedAndSaidSo) {
  const trace::TraceMap probeMap = makeMap(true);
  const trace::TraceMap refMap = makeMap(false);
  trace::DecodedTrace probe;
  probe.occurrences = {occ(2, 0, 100, 0, 0, 2), occ(0, 0, 2000, 0, 0, 2)};
  trace::DecodedTrace ref;
  ref.occurrences = {occ(0, 0, 1000, 0, 0, 2), occ(0, 0, 700, 0, 1, 2)};
  auto out = probeJoin({probeDescription(), {{&probe, &probeMap}}, {{&ref, &refMap}}});
  ASSERT_TRUE(out.has_value()) << out.error().text();
  EXPECT_EQ((*out)["exposed"]["median"], 1000.0);
  EXPECT_EQ((*out)["slack"], 0.0);
  EXPECT_TRUE((*out)["slack_clamped"].get<bool>());
}

TEST(ProbeJoin, LaunchesJoinByIndexAndUnmatchedAreCounted) {
  const trace::TraceMap probeMap = makeMap(true);
  const trace::TraceMap refMap = makeMap(false);
  trace::DecodedTrace p0, p1, r0, r1;
  p0.occurrences = {occ(2, 0, 10, 0, 0, 2), occ(0, 0, 100, 0, 0, 2)};
  p1.occurrences = {occ(2, 0, 30, 0, 0, 2), occ(0, 0, 300, 0, 0, 2), occ(2, 0, 20, 5, 0, 2)};
  r0.occurrences = {occ(0, 0, 90, 0, 0, 2)};
  r1.occurrences = {occ(0, 0, 200, 0, 0, 2)};
  auto out = probeJoin(
      {probeDescription(), {{&p0, &probeMap}, {&p1, &probeMap}}, {{&r0, &refMap}, {&r1, &refMap}}});
  ASSERT_TRUE(out.has_value()) << out.error().text();
  EXPECT_EQ((*out)["joined"], 2);
  EXPECT_EQ((*out)["unmatched"], 1);  // CTA 5 has no iteration-region record in the probe run
  EXPECT_EQ((*out)["latency"]["count"], 3);
  EXPECT_EQ((*out)["exposed"]["median"], 55.0);  // (10 + 100) / 2
}

TEST(ProbeJoin, Errors) {
  const trace::TraceMap probeMap = makeMap(true);
  const trace::TraceMap refMap = makeMap(false);
  trace::DecodedTrace probe;
  probe.occurrences = {occ(0, 0, 100, 0, 0, 2)};
  trace::DecodedTrace ref;
  ref.occurrences = {occ(0, 0, 90, 0, 0, 2)};

  auto noProbe = probeJoin({probeDescription(), {{&probe, &probeMap}}, {{&ref, &refMap}}});
  ASSERT_FALSE(noProbe.has_value());
  EXPECT_NE(noProbe.error().message.find("no occurrence of the probe region"), std::string::npos);

  auto badDescription = probeJoin({nlohmann::json{{"op", "x"}}, {{&probe, &probeMap}}, {}});
  ASSERT_FALSE(badDescription.has_value());
  EXPECT_NE(badDescription.error().message.find("region.id"), std::string::npos);

  // The reference map lacks the probe region; asking the reference for it would be wrong, and
  // using the reference as a probe run is reported.
  auto swapped = probeJoin({probeDescription(), {{&ref, &refMap}}, {{&ref, &refMap}}});
  ASSERT_FALSE(swapped.has_value());
  EXPECT_NE(swapped.error().message.find("not in the trace map"), std::string::npos);

  trace::TraceMap clockMap = makeMap(false);
  clockMap.timeBase = trace::TimeBase::SmClock;
  probe.occurrences.push_back(occ(2, 0, 10, 0, 0, 2));
  auto mixed = probeJoin({probeDescription(), {{&probe, &probeMap}}, {{&ref, &clockMap}}});
  ASSERT_FALSE(mixed.has_value());
  EXPECT_NE(mixed.error().message.find("time bases"), std::string::npos);

  trace::DecodedTrace emptyRef;
  auto noRef = probeJoin({probeDescription(), {{&probe, &probeMap}}, {{&emptyRef, &refMap}}});
  ASSERT_FALSE(noRef.has_value());
  EXPECT_NE(noRef.error().message.find("in both runs"), std::string::npos);
}

// Concurrent probe processes on one device: kernels that touch are fine, overlapping ones are
// reported pairwise; other devices and probes without kernel times are not compared.
TEST(ProbeJoin, IsolationFindsOverlappingKernelsOnOneDevice) {
  std::vector<ProbeProcess> processes = {
      {"collect/a", "0", true, {{100, 200}, {300, 400}}},
      {"collect/b", "0", true, {{400, 500}}},  // starts where a's last kernel ends
      {"collect/c", "1", true, {{100, 600}}},  // another device
      {"collect/d", "0", false, {}},
  };
  auto iso = probeIsolation(processes);
  EXPECT_EQ(iso["processes"], 4);
  EXPECT_EQ(iso["turns_taken"], 3);
  EXPECT_EQ(iso["kernels_checked"], 4);
  EXPECT_EQ(iso["shared_device"], nlohmann::json::array({"0"}));
  EXPECT_EQ(iso["unchecked"], nlohmann::json::array({"collect/d"}));
  // Ran (lifetime unknown: as if) beside others of its device without kernel times or a turn:
  // cannot show it ran alone. One that ran after the others needs not.
  EXPECT_EQ(iso["unverified"], nlohmann::json::array({"collect/d"}));
  std::vector<ProbeProcess> sequential = {{"collect/x", "0", true, {{1, 2}}, {100, 200}},
                                          {"collect/y", "0", false, {}, {200, 300}}};
  EXPECT_TRUE(probeIsolation(sequential)["unverified"].empty());
  sequential[1].lifetime = {150, 300};
  EXPECT_EQ(probeIsolation(sequential)["unverified"], nlohmann::json::array({"collect/y"}));
  EXPECT_TRUE(iso["overlaps"].empty()) << iso.dump();

  EXPECT_TRUE(iso["neighbours"].empty()) << "no process has a clock offset";

  processes.push_back({"collect/e", "0", true, {{350, 360}, {370, 380}}});  // inside a's second
  iso = probeIsolation(processes);
  ASSERT_EQ(iso["overlaps"].size(), 1u) << iso.dump();  // one report per pair of processes
  EXPECT_EQ(iso["overlaps"][0]["first"], "collect/a");
  EXPECT_EQ(iso["overlaps"][0]["second"], "collect/e");
  EXPECT_EQ(iso["overlaps"][0]["first_kernel"], nlohmann::json::array({300, 400}));
  EXPECT_EQ(iso["overlaps"][0]["second_kernel"], nlohmann::json::array({350, 360}));
}

// What other processes of the device did outside every hold while a probe's kernels ran: the
// system clock runs 1000 ns ahead of CUPTI's in every process here.
TEST(ProbeJoin, NeighboursSetOtherProcessesPhasesBesideAProbesKernels) {
  const auto process = [](std::string collect,
                          std::vector<std::pair<std::uint64_t, std::uint64_t>> k,
                          std::pair<std::uint64_t, std::uint64_t> life,
                          std::vector<std::pair<std::string, std::uint64_t>> events) {
    ProbeProcess p{std::move(collect), "0", true, std::move(k), life};
    p.turnEvents = std::move(events);
    p.epochMinusCupti = 1000;
    return p;
  };
  std::vector<ProbeProcess> processes = {
      // kernels 500..700 (CUPTI clock)
      process("collect/p", {{500, 600}, {650, 700}}, {1100, 2000},
              {{"set_up_held", 150}, {"turn_taken", 450}, {"turn_released", 750}}),
      // starts at 550 (epoch 1550), takes its set-up hold at 620: 70 ns beside p's kernels
      process("collect/q", {{900, 950}}, {1550, 3000}, {{"set_up_held", 620}}),
      // gives up its turn at 300 and ends at 420 (epoch 1420): before p's kernels, 80 ns
      process("collect/r", {{200, 250}}, {1000, 1420},
              {{"set_up_held", 10}, {"turn_released", 300}}),
      // ended at 690: its end (released 640) overlaps p's kernels by 50 ns
      process("collect/s", {{100, 120}}, {1000, 1690},
              {{"set_up_held", 5}, {"turn_released", 640}}),
      // idle from 480 to 520 (its turn taken again) and from 560 to its exit handler at 580,
      // then under its teardown hold from 590 (the last turn_released) to its end at 800
      process("collect/u", {{50, 60}}, {1000, 1800},
              {{"set_up_held", 1},
               {"turn_idle_released", 480},
               {"turn_asked", 520},
               {"turn_taken", 530},
               {"turn_idle_released", 560},
               {"exit_handler", 580},
               {"turn_released", 590}}),
  };
  processes.push_back({"collect/t", "0", true, {{10, 20}}, {1000, 1010}});  // no clock offset
  const auto neighbours = probeIsolation(processes)["neighbours"];
  ASSERT_EQ(neighbours.size(), 5u) << neighbours.dump();
  const auto& p = neighbours[0];
  EXPECT_EQ(p["collect"], "collect/p");
  EXPECT_EQ(p["kernels"], nlohmann::json::array({500, 700}));
  ASSERT_EQ(p["beside"].size(), 5u) << p.dump();
  EXPECT_EQ(p["beside"][0],
            nlohmann::json({{"collect", "collect/q"}, {"phase", "starting"}, {"overlap_ns", 70}}));
  EXPECT_EQ(p["beside"][1],
            nlohmann::json({{"collect", "collect/s"}, {"phase", "ending"}, {"overlap_ns", 50}}));
  EXPECT_EQ(p["beside"][2],
            nlohmann::json({{"collect", "collect/u"}, {"phase", "idle"}, {"overlap_ns", 20}}));
  EXPECT_EQ(p["beside"][3],
            nlohmann::json({{"collect", "collect/u"}, {"phase", "idle"}, {"overlap_ns", 20}}));
  EXPECT_EQ(p["beside"][4],
            nlohmann::json({{"collect", "collect/u"}, {"phase", "ending"}, {"overlap_ns", 110}}));
  EXPECT_EQ(p["last_exit"], nlohmann::json({{"collect", "collect/r"}, {"before_ns", 80}}));
  EXPECT_EQ(p["timeline"],
            nlohmann::json::parse(
                R"([["set_up_held", 0], ["turn_taken", 300], ["turn_released", 600]])"));
}

// A probe process ran with one work queue (backends/run.cpp): a program with kernels on several
// streams gets a caution naming the setting and how to choose another; one stream, the spec's
// own setting (no work_queues in the record) or an unknown stream count get none.
TEST(ProbeJoin, OneWorkQueueIsCautionedOnlyWhereKernelsUsedSeveralStreams) {
  using nlohmann::json;
  const auto caution = workQueueCaution(json{{"work_queues", 1}, {"kernel_streams", 3}});
  ASSERT_TRUE(caution.has_value());
  EXPECT_NE(caution->find("3 streams"), std::string::npos) << *caution;
  EXPECT_NE(caution->find("CUDA_DEVICE_MAX_CONNECTIONS"), std::string::npos) << *caution;
  EXPECT_NE(caution->find("run.env in the program spec"), std::string::npos) << *caution;
  EXPECT_FALSE(workQueueCaution(json{{"work_queues", 1}, {"kernel_streams", 1}}));
  EXPECT_FALSE(workQueueCaution(json{{"kernel_streams", 4}}));
  EXPECT_FALSE(workQueueCaution(json{{"work_queues", 1}}));
  EXPECT_FALSE(workQueueCaution(json{{"work_queues", 8}, {"kernel_streams", 2}}));
  EXPECT_FALSE(workQueueCaution(json::object()));
  // As a run record reads back from its artifact: unsigned numbers.
  EXPECT_TRUE(workQueueCaution(json::parse(R"({"work_queues": 1, "kernel_streams": 2})")));
  EXPECT_FALSE(workQueueCaution(json::parse(R"({"work_queues": 1, "kernel_streams": 1})")));
}

}  // namespace
}  // namespace argus::synthesis
