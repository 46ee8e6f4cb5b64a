// The report model against its schema, the text form's accounting of the run, and the PC-signal
// tables' region column.
#include "argus/report/report.h"

#include <string>
#include <vector>

#include "argus/report/text.h"

#include <gtest/gtest.h>

namespace argus::report {
namespace {

QueryReport smallReport() {
  QueryReport r;
  r.query = Json{{"program", "examples/nested_regions/argus.yaml"},
                 {"kernel", ""},
                 {"region", "outer"},
                 {"scope", ""},
                 {"signals", {"duration"}},
                 {"workspace", ""}};
  r.programVersion = "0123abcd";
  r.workspaceVersion = "v1";
  r.workspace = "ws";
  r.kernel = "_Z6nestedPfi";
  r.region = "outer";
  r.regionId = "r-1234";
  r.newVariantVersions = {{"trace_free", "v2"}};
  SignalEntry duration;
  duration.signal = "duration";
  duration.task = "synth/duration";
  duration.qualification = "observed";
  duration.unit = "ns";
  duration.status = "not collected";
  duration.reason = "collect/trace: needs a GPU, and this machine has none";
  r.signals.push_back(duration);
  r.notCollected = {{"collect/trace", "needs a GPU, and this machine has none"},
                    {"synth/duration", "needs `collect/trace`"}};
  r.run = {.planned = 5, .ran = 3, .executed = 1, .devices = {}};
  return r;
}

TEST(ReportSchema, AModelReportFollowsIt) {
  const auto ok = validate(toJson(smallReport()));
  EXPECT_TRUE(ok) << ok.error().text();
}

TEST(ReportSchema, NamesThePlaceThatBreaksIt) {
  Json doc = toJson(smallReport());
  doc["signals"]["duration"]["qualification"] = "guessed";
  auto bad = validate(doc);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("signals"), std::string::npos) << bad.error().text();
  EXPECT_NE(bad.error().message.find("qualification"), std::string::npos) << bad.error().text();

  doc = toJson(smallReport());
  doc.erase("run");
  EXPECT_FALSE(validate(doc));
  doc = toJson(smallReport());
  doc["workspace_version"] = "12";
  EXPECT_FALSE(validate(doc));
  doc = toJson(smallReport());
  doc["surprise"] = 1;
  EXPECT_FALSE(validate(doc));
}

TEST(ReportText, FooterCountsEveryTask) {
  // 3 tasks ran (1 executed, 2 reused) and 2 planned tasks could not run: 5 in all.
  const std::string text = toText(smallReport());
  EXPECT_NE(text.find("1 of 5 tasks executed, 2 reused from ws, 2 not run"), std::string::npos)
      << text;
  EXPECT_NE(text.find("duration (ns, observed): not collected"), std::string::npos) << text;
  EXPECT_NE(text.find("  why: collect/trace: needs a GPU"), std::string::npos) << text;
  EXPECT_NE(text.find("region outer [r-1234]  scope all"), std::string::npos) << text;
}

TEST(ReportJson, RunSummaryCarriesThePlan) {
  const Json doc = toJson(smallReport());
  EXPECT_EQ(doc["run"]["tasks"], 3);
  EXPECT_EQ(doc["run"]["executed"], 1);
  EXPECT_EQ(doc["run"]["planned"], 5);
  EXPECT_EQ(doc["run"]["not_run"], 2);
  EXPECT_TRUE(doc["trace_cost"].is_null());
}

/// An argus.pc_signal/1 document whose regions have these names; `wide` gives each an object
/// value (inst_mix's classes), otherwise a number (inst_executed).
Json pcSignal(const std::vector<std::string>& regions, bool wide) {
  Json doc = {{"schema", "argus.pc_signal/1"},
              {"signal", wide ? "inst_mix" : "inst_executed"},
              {"exact", true},
              {"ambiguous_pcs", 0},
              {"regions", Json::object()},
              {"source_files",
               {{"kernel.cu", {{"value", wide ? Json{{"barrier", 3}} : Json(3)}, {"share", 1.0}}}}},
              {"evidence",
               {{"collector", "cupti_sass"},
                {"variant", "reference"},
                {"cubin", {{"hash", "d25e9297c168"}}},
                {"cubin_check", {{"method", "identical bytes"}}}}}};
  for (const auto& name : regions)
    doc["regions"][name] = {{"value", wide ? Json{{"barrier", 1}} : Json(1)},
                            {"share", 1.0 / static_cast<double>(regions.size())},
                            {"ambiguity", {{"ambiguous_share", 0.0}, {"mean_entropy_bits", 0.0}}}};
  doc["total"] = {{"value", wide ? Json{{"barrier", regions.size()}} : Json(regions.size())}};
  return doc;
}

TEST(PcSignalText, PrintsEveryRegionPathWholeAndAligned) {
  // Paths longer than the table's 30-character minimum (the H200's inst_mix printed
  // `loop_cross_entropy_151/bar_syn`) beside short ones.
  const std::vector<std::string> regions = {
      "(outside every region)", "loop_cross_entropy_151/bar_sync",
      "loop_matmul_kernel_28/wgmma_wait", "loop_matmul_kernel_28/mainloop/wgmma_wait_group_0",
      "heavy"};
  for (bool wide : {true, false}) {
    const auto text = pcSignalText(pcSignal(regions, wide));
    ASSERT_TRUE(text);
    for (const auto& name : regions)
      EXPECT_NE(text->find("\n  " + name + " "), std::string::npos) << name << "\n" << *text;
    // Every row's share cell ends in the same column, the header's too.
    std::vector<size_t> shareEnds;
    size_t start = 0;
    for (size_t end = text->find('\n'); end != std::string::npos;
         start = end + 1, end = text->find('\n', start)) {
      const std::string line = text->substr(start, end - start);
      if (line.starts_with("  region ")) shareEnds.push_back(line.find("share") + 4);
      for (const auto& name : regions)
        if (line.starts_with("  " + name + " ")) shareEnds.push_back(line.find('%'));
    }
    ASSERT_EQ(shareEnds.size(), regions.size() + 1) << *text;
    for (size_t end : shareEnds) EXPECT_EQ(end, shareEnds.front()) << *text;
  }
}

TEST(PcSignalText, ShortPathsKeepTheThirtyCharacterColumn) {
  const auto text = pcSignalText(pcSignal({"heavy"}, false));
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("\n  heavy" + std::string(25, ' ') + " "), std::string::npos) << *text;
  EXPECT_EQ(text->find("  region" + std::string(24, ' ') + " "), 0U) << *text;
}

}  // namespace
}  // namespace argus::report
