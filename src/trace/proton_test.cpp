#include "argus/trace/proton.h"

#include <set>

#include <gtest/gtest.h>

#include "argus/ptx/regions.h"
#include "argus/support/process.h"
#include "argus/ttgir/regions.h"

namespace argus::trace {
namespace {

using json = nlohmann::json;

std::string slurp(const std::string& path) {
  auto text = readFile(path);
  return text ? *text : std::string();
}

json event(std::string name, std::string pid, std::string tid, double ts, double dur,
           double mhz = 1000.0) {
  return {{"ph", "X"},
          {"name", name},
          {"pid", pid},
          {"tid", tid},
          {"ts", ts},
          {"dur", dur},
          {"args", {{"Frequency (MHz)", mhz}, {"call_stack", {"ROOT", "k"}}}}};
}

// The trace Proton wrote on the H200 (tests/data/proton/README.md): every scope of every warp,
// in cycles, with the IDs Argus reads from the same kernel's TTGIR.
TEST(ProtonImport, TheH200TraceOfTheTmaMatmul) {
  const json doc = json::parse(slurp(ARGUS_TEST_DATA_DIR "/proton/matmul_tma_proton.chrome_trace"));
  auto imported = importProtonTrace(doc, "");
  ASSERT_TRUE(imported) << imported.error().text();
  EXPECT_EQ(imported->kernels, std::vector<std::string>{"matmul_tma_proton"});
  EXPECT_EQ(imported->frequencyMhz, 1000.0);
  EXPECT_EQ(imported->map.timeBase, TimeBase::SmClock);
  ASSERT_EQ(imported->map.regions.size(), 2u);

  auto ttgir = ttgir::analyzeRegions(slurp(ARGUS_TEST_DATA_DIR "/triton/matmul_tma_proton.ttgir"),
                                     "matmul_tma_proton.ttgir");
  ASSERT_TRUE(ttgir) << ttgir.error().text();
  std::set<std::pair<std::string, std::string>> fromTtgir, fromProton;
  for (const auto& f : *ttgir)
    for (const auto& r : f.regions) fromTtgir.insert({r.path, r.id});
  for (const auto& r : imported->map.regions) {
    fromProton.insert({r.path, r.id});
    EXPECT_FALSE(r.parent.has_value()) << r.path;
  }
  EXPECT_EQ(fromProton, fromTtgir);

  // 64 CTAs x 4 warps, each scope once per warp; Proton's process names carry the SM.
  std::map<std::string, std::set<std::pair<uint32_t, uint32_t>>> warps;
  std::map<std::string, uint64_t> cycles;
  std::set<uint32_t> sms;
  for (const auto& o : imported->trace.occurrences) {
    const std::string& path = imported->map.regions[o.region].path;
    warps[path].insert({o.cta, o.warp});
    cycles[path] += o.duration();
    sms.insert(o.sm);
    EXPECT_LT(o.cta, 64u);
    EXPECT_LT(o.warp, 4u);
  }
  EXPECT_EQ(imported->trace.occurrences.size(), 512u);
  EXPECT_EQ(warps["mainloop"].size(), 256u);
  EXPECT_EQ(warps["epilogue"].size(), 256u);
  EXPECT_EQ(sms.size(), 64u);
  // The tree Proton wrote for a second launch: mean cycles per occurrence agree within 5 %.
  const json tree =
      json::parse(slurp(ARGUS_TEST_DATA_DIR "/proton/matmul_tma_proton_tree.hatchet"));
  for (const auto& scope : tree[0]["children"][0]["children"]) {
    const std::string name = scope["frame"]["name"];
    const double mean = scope["metrics"]["normalized_cycles"].get<double>();
    EXPECT_NEAR(static_cast<double>(cycles[name]) / 256.0, mean, 0.05 * mean) << name;
  }
}

TEST(ProtonImport, NestedScopesBecomeChildRegions) {
  json doc = {{"traceEvents",
               {event("outer", "k Core3 CTA1", "warp 0 (line 0)", 1.0, 10.0),
                event("inner", "k Core3 CTA1", "warp 0 (line 0)", 2.0, 3.0),
                event("inner", "k Core3 CTA1", "warp 0 (line 0)", 6.0, 2.0),
                event("outer", "k Core3 CTA1", "warp 1 (line 0)", 1.0, 10.0),
                event("inner", "k Core3 CTA1", "warp 1 (line 0)", 11.0, 1.0)}}};
  auto imported = importProtonTrace(doc, "k");
  ASSERT_TRUE(imported) << imported.error().text();
  ASSERT_EQ(imported->map.regions.size(), 3u);
  const auto& regions = imported->map.regions;
  EXPECT_EQ(regions[0].path, "outer");
  EXPECT_EQ(regions[1].path, "outer/inner");
  EXPECT_EQ(regions[1].parent, std::optional<uint32_t>(0));
  EXPECT_EQ(regions[1].id, ptx::regionId("k", "outer/inner"));
  EXPECT_EQ(regions[2].path, "inner");  // warp 1's starts where its `outer` ended: a sibling
  EXPECT_EQ(imported->trace.occurrences.front().begin, 1000u);  // 1 us at 1000 MHz
  EXPECT_EQ(imported->trace.occurrences.front().duration(), 10000u);
  EXPECT_EQ(imported->trace.occurrences.front().sm, 3u);
}

TEST(ProtonImport, ErrorsSayWhatIsWrong) {
  auto message = [](const json& doc, std::string_view kernel = "") {
    auto r = importProtonTrace(doc, kernel);
    return r ? std::string("imported") : r.error().message;
  };
  EXPECT_NE(message(json::array()).find("not a Chrome trace"), std::string::npos);
  EXPECT_NE(message({{"traceEvents", json::array()}}).find("no Proton scope events"),
            std::string::npos);
  const json two = {{"traceEvents",
                     {event("a", "k1 Core0 CTA0", "warp 0 (line 0)", 0, 1),
                      event("a", "k2 Core0 CTA0", "warp 0 (line 0)", 0, 1)}}};
  EXPECT_NE(message(two).find("several kernels (k1, k2)"), std::string::npos);
  EXPECT_NE(message(two, "k3").find("no events of kernel `k3`; it holds k1, k2"),
            std::string::npos);
  EXPECT_EQ(message(two, "k2"), "imported");
  const json crossing = {{"traceEvents",
                          {event("a", "k Core0 CTA0", "warp 0 (line 0)", 0, 5),
                           event("b", "k Core0 CTA0", "warp 0 (line 0)", 3, 5)}}};
  EXPECT_NE(message(crossing).find("without nesting"), std::string::npos);
  const json thread = {{"traceEvents", {event("a", "k Core0 CTA0", "thread 7", 0, 1)}}};
  EXPECT_NE(message(thread).find("`warp <w> (line <l>)`"), std::string::npos);
  const json mixed = {{"traceEvents",
                       {event("a", "k Core0 CTA0", "warp 0 (line 0)", 0, 1, 1000),
                        event("a", "k Core0 CTA1", "warp 0 (line 0)", 0, 1, 1500)}}};
  EXPECT_NE(message(mixed).find("differs"), std::string::npos);
  json noFrequency = event("a", "k Core0 CTA0", "warp 0 (line 0)", 0, 1);
  noFrequency["args"].erase("Frequency (MHz)");
  EXPECT_NE(message({{"traceEvents", {noFrequency}}}).find("Frequency (MHz)"), std::string::npos);
}

// Issue 29, defect 6: wrongly typed fields dropped events silently, huge times overflowed.
TEST(ProtonImport, WrongTypesAndHugeValuesNameTheEventAndField) {
  auto message = [](const json& bad) {
    const json doc = {{"traceEvents", {event("a", "k Core0 CTA0", "warp 0 (line 0)", 0, 1), bad}}};
    auto r = importProtonTrace(doc, "");
    return r ? std::string("imported") : r.error().message;
  };
  const json good = event("b", "k Core0 CTA0", "warp 1 (line 0)", 0, 1);
  struct Case {
    const char* field;
    json value;
    const char* expected;
  };
  for (const auto& c : std::vector<Case>{
           {"ph", 5, "traceEvents[1]: field `ph` is 5; give a string"},
           {"pid", 7, "traceEvents[1]: field `pid` is 7; give a string"},
           {"tid", json::array(), "traceEvents[1]: field `tid` is []; give a string"},
           {"name", 1, "traceEvents[1]: field `name` is 1; give a string"},
           {"ts", "1", "traceEvents[1]: field `ts` is \"1\"; give a number"},
           {"dur", nullptr, "traceEvents[1]: field `dur` is null; give a number"},
           {"args", json::array({1}), "traceEvents[1]: field `args` is [1]; give an object"},
           {"ts", 1e300, "traceEvents[1]: field `ts` is 1e+300 us"},
           {"dur", 1e300, "traceEvents[1]: field `dur` is 1e+300 us"},
           {"ts", -1, "traceEvents[1]: field `ts` is -1"},
       }) {
    json bad = good;
    bad[c.field] = c.value;
    EXPECT_NE(message(bad).find(c.expected), std::string::npos) << c.field << ": " << message(bad);
  }
  for (const json& mhz : {json("1000"), json(0), json(-5), json(1e300)}) {
    json bad = event("b", "k Core0 CTA0", "warp 1 (line 0)", 0, 1, 1000);
    bad["args"]["Frequency (MHz)"] = mhz;
    json doc = {{"traceEvents", {bad}}};
    auto r = importProtonTrace(doc, "");
    ASSERT_FALSE(r) << mhz;
    EXPECT_NE(r.error().message.find("traceEvents[0]: field `args.Frequency (MHz)`"),
              std::string::npos)
        << r.error().message;
  }
  // Events of other kinds (metadata, counters) are not scopes: skipped, as before.
  json doc = {{"traceEvents",
               {event("a", "k Core0 CTA0", "warp 0 (line 0)", 0, 1),
                {{"ph", "M"}, {"name", "process_name"}, {"pid", 3}}}}};
  EXPECT_TRUE(importProtonTrace(doc, ""));
}

}  // namespace
}  // namespace argus::trace
