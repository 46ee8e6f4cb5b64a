// The template adapter registers what its record lists, and its executor works on a real PTX
// file (nvcc's PTX of examples/nested_regions, tests/data/ptx/README.md).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "argus/backends/adapter.h"
#include "argus/support/process.h"

namespace argus::backends::adapters {
const AdapterRecord& template_adapter();
}  // namespace argus::backends::adapters

namespace argus::backends {
namespace {

TEST(TemplateAdapter, RegistersWhatItsRecordLists) {
  const auto& record = adapters::template_adapter();
  runtime::ExecutorRegistry registry;
  ASSERT_TRUE(record.registerExecutors(registry, AdapterContext{}));
  for (const auto name : record.executors)
    EXPECT_NE(registry.find(std::string(name)), nullptr) << name;
}

TEST(TemplateAdapter, CountsTheStatementsOfRealPtx) {
  runtime::ExecutorRegistry registry;
  ASSERT_TRUE(adapters::template_adapter().registerExecutors(registry, AdapterContext{}));
  auto* executor = registry.find("template_ptx_statements");
  ASSERT_NE(executor, nullptr);
  runtime::TaskDescriptor task;
  task.id = "synth/statements";
  task.executor = "template_ptx_statements";
  task.inputs = {{"ptx", "ptx", "ptx"}};

  auto ptx = readFile(ARGUS_TEST_DATA_DIR "/ptx/examples_nested_regions.ptx");
  ASSERT_TRUE(ptx) << ptx.error().text();
  runtime::TaskContext ctx(task, "unused");
  ctx.inputs["ptx"] = runtime::Artifact::fromData(*ptx);
  auto out = executor->execute(ctx);
  ASSERT_TRUE(out) << out.error().text();
  auto counted = nlohmann::json::parse(*out->artifacts.at("statements").read());
  EXPECT_GT(counted["statements"].get<int>(), 50);

  runtime::TaskContext empty(task, "unused");
  empty.inputs["ptx"] = runtime::Artifact::fromData("// no statements\n");
  auto refused = executor->execute(empty);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().component, "template");
  EXPECT_NE(refused.error().message.find("holds no PTX statement"), std::string::npos);
}

}  // namespace
}  // namespace argus::backends
