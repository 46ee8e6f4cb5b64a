#include "argus/query/query.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace argus::query {
namespace {

TEST(Query, JsonRoundTrip) {
  Query q;
  q.program = "examples/tma_gemm/argus.yaml";
  q.kernel = "tma_gemm";
  q.region = "mainloop";
  q.scope = *parseScope("role=producer,iter=0..7");
  q.signals = {"duration", "op_latency"};
  auto back = queryFromJson(toJson(q));
  ASSERT_TRUE(back) << back.error().text();
  EXPECT_EQ(*back, q);
  EXPECT_FALSE(toJson(q).contains("ops"));  // absent unless given
  q.ops = {"312c7c1477af4fae:tma_load:1"};
  auto withOps = queryFromJson(toJson(q));
  ASSERT_TRUE(withOps) << withOps.error().text();
  EXPECT_EQ(*withOps, q);
  EXPECT_FALSE(toJson(q).contains("trace_options"));
  q.traceOptions = {{"parted", "record"}, {"time_base", "clock64"}};
  auto withOptions = queryFromJson(toJson(q));
  ASSERT_TRUE(withOptions) << withOptions.error().text();
  EXPECT_EQ(*withOptions, q);
}

TEST(Query, JsonErrorsNameTheField) {
  auto base = nlohmann::json{{"program", "p.yaml"}, {"region", "main"}, {"signals", {"duration"}}};
  EXPECT_TRUE(queryFromJson(base));
  auto noRegion = base;
  noRegion.erase("region");
  EXPECT_NE(queryFromJson(noRegion).error().message.find("`region` is required"),
            std::string::npos);
  auto extra = base;
  extra["color"] = "red";
  EXPECT_NE(queryFromJson(extra).error().message.find("unknown field `color`"), std::string::npos);
  auto badSignals = base;
  badSignals["signals"] = nlohmann::json::array();
  EXPECT_NE(queryFromJson(badSignals).error().message.find("`signals`"), std::string::npos);
  auto badOps = base;
  badOps["ops"] = "x";
  EXPECT_NE(queryFromJson(badOps).error().message.find("`ops`"), std::string::npos);
  auto badOption = base;
  badOption["trace_options"] = {{"colour", "red"}};
  EXPECT_NE(queryFromJson(badOption).error().message.find("unknown trace option `colour`; the "
                                                          "trace options are parted, "),
            std::string::npos);
  badOption["trace_options"] = {{"parted", 1}};
  EXPECT_NE(queryFromJson(badOption).error().message.find("`parted` must be a string"),
            std::string::npos);
  badOption["trace_options"] = "parted=record";
  EXPECT_NE(queryFromJson(badOption).error().message.find("`trace_options` must be an object"),
            std::string::npos);
  auto badScope = base;
  badScope["scope"] = "lane=1";
  EXPECT_NE(queryFromJson(badScope).error().message.find("unknown coordinate"), std::string::npos);
}

TEST(Query, SignalLists) {
  auto s = parseSignalList("duration, inst_mix ,stall_reasons");
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, (std::vector<std::string>{"duration", "inst_mix", "stall_reasons"}));
  EXPECT_FALSE(parseSignalList("duration,,inst_mix"));
  EXPECT_FALSE(parseSignalList(""));
}

}  // namespace
}  // namespace argus::query
