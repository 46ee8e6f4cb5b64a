#include "argus/workspace/hash.h"

#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "argus/workspace/ids.h"
#include "argus/workspace/workspace.h"

namespace argus::workspace {
namespace {

// Known answers computed with libxxhash's XXH3_128bits (the digits `xxhsum -H2` prints).
TEST(ContentHash, KnownAnswers) {
  EXPECT_EQ(hashBytes("").hex(), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(hashBytes("abc").hex(), "06b05ab6733a618578af5f94892f3950");
  EXPECT_EQ(hashBytes("The quick brown fox jumps over the lazy dog").hex(),
            "ddd650205ca3e7fa24a1cc2e3a8a7651");
}

TEST(ContentHash, HexRoundTrip) {
  ContentHash h = hashBytes("round trip");
  auto parsed = ContentHash::fromHex(h.hex());
  ASSERT_TRUE(parsed) << parsed.error().text();
  EXPECT_EQ(*parsed, h);
  auto upper = ContentHash::fromHex("99AA06D3014798D86001C324468D497F");
  ASSERT_TRUE(upper);
  EXPECT_EQ(*upper, hashBytes(""));
  EXPECT_FALSE(ContentHash::fromHex("99aa"));
  EXPECT_FALSE(ContentHash::fromHex("99aa06d3014798d86001c324468d497g"));
  EXPECT_FALSE(ContentHash::fromHex("+9aa06d3014798d86001c324468d497f"));
}

TEST(ContentHash, DistinctForDistinctContent) {
  EXPECT_NE(hashBytes("a"), hashBytes("b"));
  EXPECT_NE(hashBytes(std::string(1, '\0')), hashBytes(""));
}

TEST(CanonicalJson, SortsKeysAndDropsWhitespace) {
  auto a = canonicalJson(std::string_view(R"({"b": 1, "a": {"y": [1, 2], "x": null}})"));
  auto b = canonicalJson(std::string_view(R"({"a":{"x":null,"y":[1,2]},"b":1})"));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, R"({"a":{"x":null,"y":[1,2]},"b":1})");
  EXPECT_EQ(*a, *b);
  auto bad = canonicalJson(std::string_view("{oops"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().component, "workspace");
}

TEST(MemoKey, StableUnderKeyOrder) {
  std::vector<ContentHash> inputs{hashBytes("ptx"), hashBytes("cubin")};
  auto a = memoKey("collect", std::string_view(R"({"recipe":"time","scope":{"iter":3,"op":1}})"),
                   inputs);
  auto b = memoKey("collect", std::string_view(R"({"scope":{"op":1,"iter":3},"recipe":"time"})"),
                   inputs);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
  // Pinned so an accidental change of the serialization (which would invalidate every memo in
  // existing workspaces) fails here.
  EXPECT_EQ(memoKey(TaskType::collect, nlohmann::json::parse(R"({"recipe":"time"})"), inputs),
            memoKey("collect", nlohmann::json{{"recipe", "time"}}, inputs));
}

TEST(MemoKey, SensitiveToEveryField) {
  nlohmann::json d = {{"recipe", "time"}, {"scope", {{"iter", 3}, {"op", 1}}}};
  std::vector<ContentHash> inputs{hashBytes("ptx"), hashBytes("cubin")};
  ContentHash base = memoKey("collect", d, inputs);
  EXPECT_NE(base, memoKey("transform", d, inputs));
  auto changed = d;
  changed["recipe"] = "stalls";
  EXPECT_NE(base, memoKey("collect", changed, inputs));
  changed = d;
  changed["scope"]["iter"] = 4;
  EXPECT_NE(base, memoKey("collect", changed, inputs));
  changed = d;
  changed["extra"] = nullptr;
  EXPECT_NE(base, memoKey("collect", changed, inputs));
  changed = d;
  changed["scope"]["iter"] = 3.0;  // a float is not an integer
  EXPECT_NE(base, memoKey("collect", changed, inputs));
  std::vector<ContentHash> other{hashBytes("ptx"), hashBytes("cubin2")};
  EXPECT_NE(base, memoKey("collect", d, other));
  std::vector<ContentHash> swapped{inputs[1], inputs[0]};
  EXPECT_NE(base, memoKey("collect", d, swapped));
  std::vector<ContentHash> fewer{inputs[0]};
  EXPECT_NE(base, memoKey("collect", d, fewer));
  EXPECT_NE(base, memoKey("collect", d, std::vector<ContentHash>{}));
  // The type and descriptor are length-prefixed, so moving text between them changes the key.
  EXPECT_NE(memoKey("ab", nlohmann::json("c"), {}), memoKey("a", nlohmann::json("bc"), {}));
}

TEST(Ids, PrintAndParse) {
  EXPECT_EQ(VersionId(12).text(), "v12");
  EXPECT_EQ(ArtifactId(34).text(), "a34");
  EXPECT_EQ(TaskId(56).text(), "t56");
  EXPECT_EQ(RunId(7).text(), "r7");
  auto v = parseObjectRef("v12");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, ObjectKind::version);
  EXPECT_EQ(v->value, 12);
  auto t = parseObjectRef("T56");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->kind, ObjectKind::task);
  auto bare = parseObjectRef("42");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->kind, ObjectKind::any);
  EXPECT_EQ(bare->value, 42);
  for (const char* bad : {"", "v", "x12", "v-1", "v0", "a1b", "12 "})
    EXPECT_FALSE(parseObjectRef(bad)) << bad;
}

TEST(Ids, AreDistinctTypes) {
  static_assert(!std::is_convertible_v<VersionId, ArtifactId>);
  static_assert(!std::is_convertible_v<ArtifactId, TaskId>);
  static_assert(!std::is_convertible_v<std::int64_t, VersionId>);
  static_assert(!std::is_constructible_v<VersionId, TaskId>);
  SUCCEED();
}

}  // namespace
}  // namespace argus::workspace
