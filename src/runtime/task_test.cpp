#include "argus/runtime/task.h"

#include <gtest/gtest.h>

namespace argus::runtime {
namespace {

using nlohmann::json;

TaskDescriptor fullTask() {
  TaskDescriptor t;
  t.id = "collect/op3/iter2";
  t.type = TaskType::Collect;
  t.executor = "cupti.sass_metrics";
  t.programVersion = "v:5f2a";
  t.region = "gemm/mainloop";
  t.scope = "role=producer,iter=0..7";
  t.config = json{{"metrics", {"smsp__sass_inst_executed"}}, {"clock_control", "none"}};
  t.inputs = {{"binary", "compile/op3", "cubin"}, {"map", "pcmap", "map"}};
  t.dependencies = {"discover"};
  t.sampling = {"every_n", 3, 1, json{{"n", 4}}};
  t.outputs = {"evidence", "stats"};
  t.isolation = {true, "forced_wait", {"timing", "patching"}};
  t.requirements = {Requirement::Gpu, Requirement::HardwareCounters};
  t.timeoutSeconds = 12.5;
  return t;
}

TEST(TaskDescriptor, JsonRoundTripIsExact) {
  TaskDescriptor t = fullTask();
  auto back = taskFromJson(toJson(t));
  ASSERT_TRUE(back) << back.error().text();
  EXPECT_EQ(*back, t);
  // Through text too, and a default descriptor.
  auto fromText = taskFromJson(json::parse(toJson(t).dump(2)));
  ASSERT_TRUE(fromText);
  EXPECT_EQ(*fromText, t);
  TaskDescriptor minimal;
  minimal.id = "x";
  auto minimalBack = taskFromJson(toJson(minimal));
  ASSERT_TRUE(minimalBack);
  EXPECT_EQ(*minimalBack, minimal);
}

TEST(TaskDescriptor, ParseErrorsNameTheField) {
  auto noId = taskFromJson(json{{"type", "collect"}});
  ASSERT_FALSE(noId);
  EXPECT_NE(noId.error().message.find("id"), std::string::npos);
  auto badType = taskFromJson(json{{"id", "a"}, {"type", "measure"}});
  ASSERT_FALSE(badType);
  EXPECT_NE(badType.error().message.find("measure"), std::string::npos);
  auto badReq = taskFromJson(json{{"id", "a"}, {"requirements", {"quantum"}}});
  ASSERT_FALSE(badReq);
  EXPECT_NE(badReq.error().message.find("quantum"), std::string::npos);
  auto badTimeout = taskFromJson(json{{"id", "a"}, {"timeout_s", "soon"}});
  ASSERT_FALSE(badTimeout);
}

TEST(TaskDescriptor, CanonicalJsonSortsKeysWithoutWhitespace) {
  json a = json::parse(R"({"b": 1, "a": {"z": [1, 2], "y": "s"}})");
  json b = json::parse(R"({"a": {"y": "s", "z": [1, 2]}, "b": 1})");
  EXPECT_EQ(canonicalJson(a), R"({"a":{"y":"s","z":[1,2]},"b":1})");
  EXPECT_EQ(canonicalJson(a), canonicalJson(b));
}

TEST(TaskDescriptor, MemoKeyIsStable) {
  // A fixed key: changing it invalidates every stored workspace, so it must be deliberate.
  TaskDescriptor t = fullTask();
  std::string key = memoKey(t, {{"binary", "aa"}, {"map", "bb"}});
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key, memoKey(t, {{"map", "bb"}, {"binary", "aa"}}));  // input order irrelevant
  EXPECT_EQ(key, "a044ecf744278e00c51760f5074400c6");
}

TEST(TaskDescriptor, MemoKeyIgnoresProducerIdsAndScheduling) {
  TaskDescriptor t = fullTask();
  const std::string key = memoKey(t, {{"binary", "aa"}});
  TaskDescriptor u = t;
  u.inputs[0].task = "compile/elsewhere";
  u.dependencies.clear();
  u.timeoutSeconds = 99;
  u.config = json::parse(R"({"clock_control": "none", "metrics": ["smsp__sass_inst_executed"]})");
  EXPECT_EQ(memoKey(u, {{"binary", "aa"}}), key);
}

TEST(TaskDescriptor, MemoKeyChangesWithEveryResultRelevantField) {
  TaskDescriptor t = fullTask();
  const std::string key = memoKey(t, {{"binary", "aa"}});
  std::vector<std::pair<std::string, TaskDescriptor>> variants;
  auto vary = [&](const char* what, auto change) {
    TaskDescriptor u = t;
    change(u);
    variants.emplace_back(what, u);
  };
  vary("id", [](TaskDescriptor& u) { u.id = "collect/op3/iter3"; });
  vary("type", [](TaskDescriptor& u) { u.type = TaskType::Synthesize; });
  vary("executor", [](TaskDescriptor& u) { u.executor = "ncu"; });
  vary("version", [](TaskDescriptor& u) { u.programVersion = "v:5f2b"; });
  vary("region", [](TaskDescriptor& u) { u.region = "gemm/epilogue"; });
  vary("scope", [](TaskDescriptor& u) { u.scope = "role=consumer"; });
  vary("config", [](TaskDescriptor& u) { u.config["clock_control"] = "base"; });
  vary("sampling", [](TaskDescriptor& u) { u.sampling.repetitions = 4; });
  vary("outputs", [](TaskDescriptor& u) { u.outputs.push_back("extra"); });
  vary("isolation", [](TaskDescriptor& u) { u.isolation.exclusiveDevice = false; });
  vary("requirements", [](TaskDescriptor& u) { u.requirements.pop_back(); });
  vary("input name", [](TaskDescriptor& u) { u.inputs[0].name = "bin"; });
  for (const auto& [what, u] : variants) EXPECT_NE(memoKey(u, {{"binary", "aa"}}), key) << what;
  EXPECT_NE(memoKey(t, {{"binary", "ab"}}), key) << "input content";
  EXPECT_NE(memoKey(t, {{"binary", "aa"}, {"map", "bb"}}), key) << "extra input";
}

TEST(TaskDescriptor, UpstreamIsDeduplicatedInOrder) {
  TaskDescriptor t = fullTask();
  t.dependencies = {"pcmap", "discover"};
  EXPECT_EQ(t.upstream(), (std::vector<std::string>{"compile/op3", "pcmap", "discover"}));
}

}  // namespace
}  // namespace argus::runtime
