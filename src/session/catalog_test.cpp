// The session's catalog: every adapter record registers what it lists, and the capability check
// says why a task cannot run here.
#include "argus/session/catalog.h"

#include <algorithm>
#include <string>

#include <gtest/gtest.h>

namespace argus::session {
namespace {

const char* kSpec = ARGUS_EXAMPLES_DIR "/nested_regions/argus.yaml";

Catalog cpuCatalog() {
  auto spec = program::loadProgramSpec(kSpec);
  EXPECT_TRUE(spec) << spec.error().text();
  auto catalog = makeCatalog({.target = kSpec, .spec = *spec, .devices = {}});
  EXPECT_TRUE(catalog) << catalog.error().text();
  return std::move(*catalog);
}

runtime::TaskDescriptor task(std::string id, std::string executor,
                             std::vector<std::string> after = {}) {
  runtime::TaskDescriptor t;
  t.id = std::move(id);
  t.type = runtime::TaskType::Collect;
  t.executor = std::move(executor);
  t.dependencies = std::move(after);
  return t;
}

TEST(Catalog, EveryAdapterRecordRegistersWhatItLists) {
  const auto records = adapterRecords();
  std::vector<std::string> names;
  for (const auto* r : records) names.emplace_back(r->name);
  for (const char* expected :
       {"compile", "run", "cupti_sass", "ncu", "ptx_analysis", "system_trace"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  const Catalog catalog = cpuCatalog();
  for (const auto* r : records) {
    EXPECT_FALSE(r->description.empty()) << r->name;
    EXPECT_FALSE(r->machineNeeds.empty()) << r->name;
    for (const auto e : r->executors) {
      EXPECT_NE(catalog.registry.find(std::string(e)), nullptr) << e;
      EXPECT_EQ(catalog.owners.at(std::string(e)), r) << e;
    }
  }
  // Synthesis registers beside the adapters; it owns no adapter record.
  EXPECT_NE(catalog.registry.find("region_timing"), nullptr);
  EXPECT_NE(catalog.registry.find("probe_join"), nullptr);
  EXPECT_FALSE(catalog.owners.contains("region_timing"));
}

TEST(Catalog, AdaptersThatRunAProgramNeedASpec) {
  auto catalog = makeCatalog({.target = "kernel.ptx", .spec = std::nullopt, .devices = {}});
  ASSERT_FALSE(catalog);
  EXPECT_NE(catalog.error().message.find("needs a program spec"), std::string::npos)
      << catalog.error().text();
}

TEST(Capabilities, SaysWhyEachTaskCannotRunHere) {
  const Catalog catalog = cpuCatalog();
  runtime::Plan plan;
  auto unknown = task("collect/unknown", "no_such_executor");
  auto pass = task("variant/x", "ptx_pass");
  pass.type = runtime::TaskType::Transform;
  pass.config["transforms"] = {"strip_markers", "no_such_transform"};
  auto gpu = task("collect/trace", "region_trace");
  gpu.requirements = {runtime::Requirement::Gpu};
  auto after = task("collect/after", "region_trace", {"collect/unknown"});
  after.requirements = {runtime::Requirement::Gpu};
  auto cpu = task("synth/timing", "region_timing", {"collect/trace"});
  cpu.type = runtime::TaskType::Synthesize;
  for (auto* t : {&unknown, &pass, &gpu, &after, &cpu}) ASSERT_TRUE(plan.add(*t));

  auto caps = checkCapabilities(plan, catalog);
  EXPECT_EQ(caps.reasons.at("collect/unknown"),
            "executor `no_such_executor` is not part of this build yet");
  EXPECT_EQ(caps.reasons.at("variant/x"),
            "transform `no_such_transform` is not part of this build yet");
  EXPECT_EQ(caps.reasons.at("collect/trace"),
            "needs a GPU, and this machine has none (nvidia-smi lists none)");
  // A GPU task after a task that cannot run points at it: the root cause, not the GPU.
  EXPECT_EQ(caps.reasons.at("collect/after"), "needs `collect/unknown`");
  EXPECT_EQ(caps.needGpu, (std::set<std::string>{"collect/after", "collect/trace"}));
  EXPECT_FALSE(caps.reasons.contains("synth/timing"));

  auto kept = without(plan, caps.reasons);
  EXPECT_EQ(kept.tasks().size(), 0u);  // the synthesis task needed the GPU collection
  EXPECT_EQ(rootReason(caps.reasons, "synth/timing"),
            "collect/trace: needs a GPU, and this machine has none (nvidia-smi lists none)");
  EXPECT_EQ(rootReason(caps.reasons, "collect/after"),
            "collect/unknown: executor `no_such_executor` is not part of this build yet");
}

TEST(Capabilities, WithGpusOnlyWhatTheBuildLacksIsLeftOut) {
  auto spec = program::loadProgramSpec(kSpec);
  ASSERT_TRUE(spec);
  auto catalog = makeCatalog({.target = kSpec, .spec = *spec, .devices = {"0"}});
  ASSERT_TRUE(catalog) << catalog.error().text();
  runtime::Plan plan;
  auto gpu = task("collect/trace", "region_trace");
  gpu.requirements = {runtime::Requirement::Gpu};
  ASSERT_TRUE(plan.add(gpu));
  EXPECT_TRUE(checkCapabilities(plan, *catalog).reasons.empty());
}

TEST(Devices, ArgusDevicesNamesThem) {
  ::setenv("ARGUS_DEVICES", "0,2,,3", 1);
  EXPECT_EQ(detectDevices(), (std::vector<std::string>{"0", "2", "3"}));
  ::unsetenv("ARGUS_DEVICES");
}

}  // namespace
}  // namespace argus::session
