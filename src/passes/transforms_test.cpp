// The transform registry and applyTransforms' error contract.
#include <gtest/gtest.h>

#include "test_util.h"

namespace argus::passes {
namespace {

ptx::Module tinyModule() {
  auto module = ptx::parseModule(
      ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
      "\t// @argus begin a\n\t// @argus end a\n\tret;\n}\n",
      "k.ptx");
  EXPECT_TRUE(module.has_value());
  return module ? *module : ptx::Module{};
}

TEST(Transforms, ListsTheImplementedPasses) {
  EXPECT_EQ(availableTransforms(),
            (std::vector<std::string>{"strip_markers", "lower_markers_to_trace", "paint_ptx",
                                      "insert_forced_wait", "clone_shared_callees"}));
}

TEST(Transforms, UnknownNameIsAnErrorAndLeavesTheModuleAlone) {
  ptx::Module module = tinyModule();
  const std::string before = ptx::printModule(module);
  auto result = applyTransforms(module, {"strip_markers", "frobnicate"}, {});
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().message.find("unknown transform `frobnicate`"), std::string::npos);
  EXPECT_NE(result.error().message.find("lower_markers_to_trace"), std::string::npos);
  EXPECT_EQ(ptx::printModule(module), before);
}

TEST(Transforms, ForcedWaitWithoutOptionsSaysWhatItNeeds) {
  ptx::Module module = tinyModule();
  auto result = applyTransforms(module, {"insert_forced_wait"}, {});
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().message.find("option `op`"), std::string::npos) << result.error().text();
}

TEST(Transforms, PassFailureNamesThePassAndKeepsTheModule) {
  ptx::Module module = tinyModule();
  const std::string before = ptx::printModule(module);
  TransformOptions options;
  options.config = {{"time_base", "sundial"}};
  auto result = applyTransforms(module, {"strip_markers", "lower_markers_to_trace"}, options);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().component, "passes");
  EXPECT_TRUE(result.error().message.starts_with("lower_markers_to_trace"))
      << result.error().text();
  EXPECT_EQ(ptx::printModule(module), before);
}

TEST(Transforms, EmptyListChangesNothing) {
  ptx::Module module = tinyModule();
  auto result = applyTransforms(module, {}, {});
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->traceMap.empty());
  EXPECT_TRUE(result->statistics.empty());
}

}  // namespace
}  // namespace argus::passes
