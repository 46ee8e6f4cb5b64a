#include "argus/runtime/plan.h"

#include <gtest/gtest.h>

#include "runtime_test_util.h"

namespace argus::runtime {
namespace {

using test::task;

Plan diamond() {
  Plan p;
  EXPECT_TRUE(p.add(task("ptx", "cpu")));
  EXPECT_TRUE(p.add(task("paint", "cpu", {"ptx.out"})));
  auto c = test::gpuTask("collect", "worker", {"bin=ptx.out"});
  c.isolation.exclusiveDevice = true;
  EXPECT_TRUE(p.add(c));
  auto s =
      task("report", "cpu", {"map=paint.out", "ev=collect.out"}, {"report"}, TaskType::Synthesize);
  s.dependencies = {"ptx"};
  EXPECT_TRUE(p.add(s));
  return p;
}

TEST(Plan, JsonRoundTrip) {
  Plan p = diamond();
  ASSERT_TRUE(p.validate());
  auto back = Plan::fromJson(nlohmann::json::parse(p.toJson().dump()));
  ASSERT_TRUE(back) << back.error().text();
  EXPECT_EQ(*back, p);
  EXPECT_EQ(back->toJson(), p.toJson());
}

TEST(Plan, DotShowsTasksAndEdges) {
  std::string dot = diamond().toDot();
  EXPECT_NE(dot.find("digraph plan"), std::string::npos);
  EXPECT_NE(dot.find("\"ptx\" -> \"paint\" [label=\"ptx\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("\"collect\" -> \"report\" [label=\"ev\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("\"ptx\" -> \"report\" [style=dashed]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("shape=box3d"), std::string::npos);
  EXPECT_NE(dot.find("exclusive"), std::string::npos);
  EXPECT_NE(diamond().toText().find("report [synthesize] cpu <- map=paint.out ev=collect.out ptx"),
            std::string::npos)
      << diamond().toText();
}

TEST(Plan, ValidateRejectsBadReferences) {
  Plan dup;
  ASSERT_TRUE(dup.add(task("a", "cpu")));
  EXPECT_FALSE(dup.add(task("a", "cpu")));

  Plan unknown;
  ASSERT_TRUE(unknown.add(task("a", "cpu", {"ghost.out"})));
  auto r = unknown.validate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("ghost"), std::string::npos);

  Plan noOutput;
  ASSERT_TRUE(noOutput.add(task("a", "cpu")));
  ASSERT_TRUE(noOutput.add(task("b", "cpu", {"a.cubin"})));
  r = noOutput.validate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cubin"), std::string::npos);

  Plan cycle;
  ASSERT_TRUE(cycle.add(task("a", "cpu", {"c.out"})));
  ASSERT_TRUE(cycle.add(task("b", "cpu", {"a.out"})));
  ASSERT_TRUE(cycle.add(task("c", "cpu", {"b.out"})));
  r = cycle.validate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cycle"), std::string::npos);
}

TEST(Plan, ValidateHandlesDeepChains) {
  Plan p;
  ASSERT_TRUE(p.add(task("t0", "cpu")));
  for (int i = 1; i < 20000; ++i)
    ASSERT_TRUE(
        p.add(task("t" + std::to_string(i), "cpu", {"t" + std::to_string(i - 1) + ".out"})));
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace argus::runtime
