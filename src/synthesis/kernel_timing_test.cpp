#include "argus/synthesis/kernel_timing.h"

#include <gtest/gtest.h>

namespace argus::synthesis {
namespace {

using json = nlohmann::json;

// A cupti_activity evidence document as backends/run.cpp writes it: kernels.jsonl records (the
// injection library's format) of three launches of `gemm`, out of start order, and one of
// another kernel.
std::string evidence() {
  const auto k = [](const char* name, uint64_t start, uint64_t end) {
    return json{{"seq", 0},          {"correlation", 1}, {"kernel", name},
                {"start_ns", start}, {"end_ns", end},    {"duration_ns", end - start},
                {"context", 1},      {"stream", 7}};
  };
  return json{{"kernel", "gemm"},
              {"kernels",
               {k("gemm", 3000, 3400), k("gemm", 1000, 1100), k("memset", 1500, 1600),
                k("gemm", 2000, 2200)}},
              {"run", {{"exit_code", 0}}}}
      .dump();
}

query::Scope scopeOf(const char* text) {
  auto scope = query::parseScope(text);
  EXPECT_TRUE(scope.has_value());
  return scope ? *scope : query::Scope{};
}

TEST(KernelTiming, EveryLaunchOfTheKernelInStartOrder) {
  auto t = kernelTiming(evidence(), scopeOf(""));
  ASSERT_TRUE(t.has_value()) << t.error().text();
  EXPECT_EQ((*t)["launches"], 3);
  EXPECT_EQ((*t)["count"], 3);
  EXPECT_EQ((*t)["min"], 100);
  EXPECT_EQ((*t)["max"], 400);
  EXPECT_EQ((*t)["median"], 200.0);
  EXPECT_EQ((*t)["total"], 700);
  ASSERT_EQ((*t)["per_launch"].size(), 3u);
  EXPECT_EQ((*t)["per_launch"][0]["ns"], 100);  // the first to start
  EXPECT_EQ((*t)["per_launch"][2]["ns"], 400);
  EXPECT_FALSE(t->contains("note"));
}

TEST(KernelTiming, LaunchClauseSelectsByStartOrder) {
  auto t = kernelTiming(evidence(), scopeOf("launch=1..2"));
  ASSERT_TRUE(t.has_value()) << t.error().text();
  EXPECT_EQ((*t)["count"], 2);
  EXPECT_EQ((*t)["min"], 200);
  EXPECT_EQ((*t)["per_launch"][0]["launch"], 1);
}

TEST(KernelTiming, OtherClausesDoNotApplyAndSaySo) {
  auto t = kernelTiming(evidence(), scopeOf("role=producer,launch=0"));
  ASSERT_TRUE(t.has_value()) << t.error().text();
  EXPECT_EQ((*t)["count"], 1);
  ASSERT_TRUE(t->contains("note"));
  EXPECT_NE((*t)["note"].get<std::string>().find("role"), std::string::npos);
}

TEST(KernelTiming, NothingSelectedOrNotEvidenceIsAnError) {
  auto none = kernelTiming(evidence(), scopeOf("launch=5"));
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("3 launches of `gemm`, none selected"), std::string::npos)
      << none.error().message;
  EXPECT_FALSE(kernelTiming("{\"regions\": []}", scopeOf("")).has_value());
  EXPECT_FALSE(kernelTiming("not json", scopeOf("")).has_value());
}

}  // namespace
}  // namespace argus::synthesis
