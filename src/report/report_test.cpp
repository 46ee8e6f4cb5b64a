// The report model against its schema, and the text form's accounting of the run.
#include "argus/report/report.h"

#include <string>

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

}  // namespace
}  // namespace argus::report
