#include "argus/query/scope.h"

#include <gtest/gtest.h>

namespace argus::query {
namespace {

TEST(Scope, EmptyAndAllSelectEverything) {
  for (const char* text : {"", "all", "  "}) {
    auto s = parseScope(text);
    ASSERT_TRUE(s) << text;
    EXPECT_TRUE(s->all());
    EXPECT_EQ(s->canonical(), "");
  }
}

TEST(Scope, ParsesTheDesignExample) {
  auto s = parseScope("role=producer,iter=0..7,sm=0..15");
  ASSERT_TRUE(s) << s.error().text();
  ASSERT_EQ(s->clauses.size(), 3u);
  EXPECT_TRUE(s->clause(Coordinate::Role)->contains("producer"));
  EXPECT_FALSE(s->clause(Coordinate::Role)->contains("consumer"));
  EXPECT_TRUE(s->clause(Coordinate::Iteration)->contains(7));
  EXPECT_FALSE(s->clause(Coordinate::Iteration)->contains(8));
  EXPECT_TRUE(s->clause(Coordinate::Sm)->contains(0));
  EXPECT_EQ(s->clause(Coordinate::Warp), nullptr);
}

TEST(Scope, CanonicalFormIsOrderAndSpellingIndependent) {
  auto a = parseScope("sm=8..15|0..7, iter=3|1|2 ,role=producer|consumer|producer");
  auto b = parseScope("role=consumer|producer,iter=1..3,sm=0..15");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->canonical(), "role=consumer|producer,iter=1..3,sm=0..15");
  auto again = parseScope(a->canonical());
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *a);
}

TEST(Scope, SingleValuesAndEveryCoordinate) {
  auto s = parseScope("warp=4,warpgroup=1,cta=0|3,launch=2,iter=5");
  ASSERT_TRUE(s) << s.error().text();
  EXPECT_EQ(s->canonical(), "warp=4,warpgroup=1,iter=5,cta=0|3,launch=2");
  EXPECT_EQ(s->coordinates().size(), 5u);
}

TEST(Scope, ErrorsNameTheClauseAndListCoordinates) {
  struct Case {
    const char* text;
    const char* expected;
  };
  for (auto c :
       {Case{"lane=0", "unknown coordinate `lane`"}, Case{"iter", "expected `coordinate=values`"},
        Case{"iter=7..3", "is empty"}, Case{"iter=-1", "not a non-negative integer"},
        Case{"iter=a", "not a non-negative integer"}, Case{"role=1x", "not a name"},
        Case{"iter=1,iter=2", "appears twice"}, Case{"iter=1|", "empty value"}}) {
    auto s = parseScope(c.text);
    ASSERT_FALSE(s) << c.text;
    EXPECT_NE(s.error().message.find(c.expected), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("role, warp, warpgroup, iter, sm, cta, launch"),
              std::string::npos)
        << s.error().message;
  }
}

TEST(Scope, NumbersOutOfACoordinatesRangeNameTheTokenAndTheRange) {
  struct Case {
    const char* text;
    const char* expected;
  };
  for (auto c :
       {Case{"iter=0..4294967296", "`4294967296` is out of range: `iter` takes 0..4294967294"},
        Case{"iter=4294967295", "`4294967295` is out of range: `iter` takes 0..4294967294"},
        Case{"warp=99999999999", "`99999999999` is out of range: `warp` takes 0..4294967295"},
        Case{"sm=0|99999999999999999999999",
             "`99999999999999999999999` is out of range: `sm` takes 0..4294967295"},
        Case{"launch=9223372036854775807|0", "`launch` takes 0..4294967295"}}) {
    auto s = parseScope(c.text);
    ASSERT_FALSE(s) << c.text << " parsed as " << s->canonical();
    EXPECT_NE(s.error().message.find(c.expected), std::string::npos) << s.error().message;
  }
  auto top = parseScope("warp=4294967295|0..4294967294,iter=4294967294|0..4294967293");
  ASSERT_TRUE(top) << top.error().text();
  EXPECT_EQ(top->canonical(), "warp=0..4294967295,iter=0..4294967294");
}

TEST(Scope, RangesEndingAtTheTopMergeWithoutOverflow) {
  auto s = parseScope("cta=4294967295|0..4294967295|7");
  ASSERT_TRUE(s) << s.error().text();
  EXPECT_EQ(s->canonical(), "cta=0..4294967295");
  const auto* clause = s->clause(Coordinate::Cta);
  ASSERT_NE(clause, nullptr);
  EXPECT_EQ(clause->ranges.size(), 1u);
}

}  // namespace
}  // namespace argus::query
