#include "argus/backends/compile.h"

#include <filesystem>
#include <map>
#include <mutex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "argus/passes/transforms.h"
#include "argus/program/program.h"
#include "argus/runtime/plan.h"
#include "argus/runtime/result_store.h"
#include "argus/runtime/scheduler.h"
#include "argus/support/process.h"

namespace argus::backends {
namespace {

namespace fs = std::filesystem;
using runtime::InputBinding;
using runtime::TaskDescriptor;
using runtime::TaskState;
using runtime::TaskType;

const fs::path kSpec = fs::path(ARGUS_EXAMPLES_DIR) / "nested_regions" / "argus.yaml";

TaskDescriptor ptxTask() {
  TaskDescriptor t;
  t.id = "ptx";
  t.executor = "nvcc_ptx";
  t.config = {{"target", kSpec.string()}, {"kernel", "nested_regions"}};
  t.outputs = {"ptx"};
  return t;
}

TaskDescriptor variantTask(const std::string& key, nlohmann::json transforms) {
  TaskDescriptor t;
  t.id = "variant/" + key;
  t.executor = "ptx_pass";
  t.config = {{"variant", key}, {"transforms", std::move(transforms)}};
  t.inputs = {InputBinding{"ptx", "ptx", "ptx"}};
  t.outputs = {"ptx"};
  return t;
}

TaskDescriptor buildTask(const std::string& key) {
  TaskDescriptor t;
  t.id = "build/" + key;
  t.executor = "build_variant";
  t.config = {{"variant", key}};
  t.inputs = {InputBinding{"ptx", "variant/" + key, "ptx"}};
  t.outputs = {"executable"};
  return t;
}

runtime::RunOptions twoThreads() {
  runtime::RunOptions options;
  options.cpuThreads = 2;
  return options;
}

class CompileExecutors : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto nvcc = findTool("nvcc"); !nvcc) GTEST_SKIP() << nvcc.error().text();
    CompileContext context;
    context.target = kSpec;
    auto registered = registerCompileExecutors(registry_, std::move(context));
    ASSERT_TRUE(registered) << registered.error().text();
  }

  static TaskState state(const runtime::RunReport& report, const std::string& id) {
    const runtime::TaskReport* t = report.find(id);
    EXPECT_NE(t, nullptr) << id;
    return t ? t->outcome.state : TaskState::Pending;
  }

  runtime::ExecutorRegistry registry_;
  runtime::MemoryResultStore store_;
};

TEST_F(CompileExecutors, RegistersEachNameOnce) {
  EXPECT_NE(registry_.find("nvcc_ptx"), nullptr);
  EXPECT_NE(registry_.find("ptx_pass"), nullptr);
  EXPECT_NE(registry_.find("build_variant"), nullptr);
  CompileContext again;
  again.target = kSpec;
  auto twice = registerCompileExecutors(registry_, again);
  EXPECT_FALSE(twice);
}

// The toolkit (nvcc's path and size) and the passes' version are in the memo keys of the tasks
// whose outputs they make.
TEST_F(CompileExecutors, VersionsNameTheToolkitAndThePasses) {
  const auto nvcc = findTool("nvcc");
  ASSERT_TRUE(nvcc);
  EXPECT_TRUE(registry_.version("nvcc_ptx").starts_with(nvcc->string() + ":"));
  EXPECT_EQ(registry_.version("build_variant"), registry_.version("nvcc_ptx"));
  EXPECT_EQ(registry_.version("ptx_pass"), passes::kPassesVersion);
  EXPECT_EQ(registry_.version("no_such_executor"), "");
}

TEST(CompileExecutorsSetup, BadSpecFailsAtRegistration) {
  runtime::ExecutorRegistry registry;
  CompileContext context;
  context.target = "/nonexistent/argus.yaml";
  auto registered = registerCompileExecutors(registry, context);
  ASSERT_FALSE(registered);
  EXPECT_NE(registered.error().message.find("/nonexistent/argus.yaml"), std::string::npos);
}

// ptx -> variant(strip_markers) -> build, beside a variant whose transform does not exist: only
// that branch fails; a second run executes nothing that succeeded before.
TEST_F(CompileExecutors, PlanBuildsVariantAndMemoizes) {
  runtime::Plan plan;
  ASSERT_TRUE(plan.add(ptxTask()));
  ASSERT_TRUE(plan.add(variantTask("clean", {"strip_markers"})));
  ASSERT_TRUE(plan.add(buildTask("clean")));
  ASSERT_TRUE(plan.add(variantTask("bad", {"strip_markers", "no_such_pass"})));
  ASSERT_TRUE(plan.add(buildTask("bad")));

  runtime::Scheduler scheduler(registry_, store_, twoThreads());
  auto report = scheduler.run(plan);
  ASSERT_TRUE(report) << report.error().text();
  EXPECT_EQ(state(*report, "ptx"), TaskState::Succeeded) << report->toText();
  EXPECT_EQ(state(*report, "variant/clean"), TaskState::Succeeded) << report->toText();
  EXPECT_EQ(state(*report, "build/clean"), TaskState::Succeeded) << report->toText();
  EXPECT_EQ(state(*report, "variant/bad"), TaskState::Failed);
  EXPECT_EQ(state(*report, "build/bad"), TaskState::Skipped);
  const std::string& error = report->find("variant/bad")->outcome.error;
  EXPECT_NE(error.find("unknown transform `no_such_pass`"), std::string::npos) << error;
  EXPECT_NE(error.find("strip_markers"), std::string::npos) << error;  // lists what exists

  const std::size_t executions = store_.executions();
  EXPECT_EQ(executions, 4u);  // ptx, both variants, build/clean
  auto again = scheduler.run(plan);
  ASSERT_TRUE(again) << again.error().text();
  EXPECT_EQ(state(*again, "ptx"), TaskState::Memoized);
  EXPECT_EQ(state(*again, "variant/clean"), TaskState::Memoized);
  EXPECT_EQ(state(*again, "build/clean"), TaskState::Memoized);
  EXPECT_EQ(state(*again, "variant/bad"), TaskState::Failed);
  EXPECT_EQ(state(*again, "build/bad"), TaskState::Skipped);
  EXPECT_EQ(store_.executions(), executions + 1);  // only the failed variant ran again
  EXPECT_FALSE(report->find("build/clean")->log.empty());
}

// The executors' outputs themselves: markers stripped, executable and cubin published, trace map
// published when the passes make one.
TEST_F(CompileExecutors, OutputsAreWhatTheyClaim) {
  runtime::Plan plan;
  ASSERT_TRUE(plan.add(ptxTask()));
  ASSERT_TRUE(plan.add(variantTask("clean", {"strip_markers"})));
  ASSERT_TRUE(plan.add(buildTask("clean")));
  TaskDescriptor traced = variantTask("trace", {"lower_markers_to_trace"});
  traced.config["kernel"] = "nested_regions";
  traced.outputs = {"ptx", "trace_map"};
  ASSERT_TRUE(plan.add(traced));

  // A final task sees its upstream tasks' outputs as evidence; it records what it saw.
  std::map<std::string, std::string> seen;
  std::mutex mutex;
  ASSERT_TRUE(registry_.add({"inspect", "test probe",
                             std::make_shared<runtime::FunctionExecutor>(
                                 [&](runtime::TaskContext& ctx) -> Result<runtime::TaskOutputs> {
                                   std::lock_guard lock(mutex);
                                   for (const auto& [name, artifact] : ctx.evidence) {
                                     auto bytes = artifact.read();
                                     if (!bytes) return std::unexpected(bytes.error());
                                     seen[name] = *bytes;
                                   }
                                   return runtime::TaskOutputs{};
                                 })}));
  TaskDescriptor inspect;
  inspect.id = "inspect";
  inspect.type = TaskType::Synthesize;
  inspect.executor = "inspect";
  inspect.dependencies = {"ptx", "variant/clean", "build/clean", "variant/trace"};
  ASSERT_TRUE(plan.add(inspect));

  runtime::Scheduler scheduler(registry_, store_, twoThreads());
  auto report = scheduler.run(plan);
  ASSERT_TRUE(report) << report.error().text();
  ASSERT_TRUE(report->ok()) << report->toText();

  ASSERT_TRUE(seen.contains("ptx/ptx"));
  ASSERT_TRUE(seen.contains("variant/clean/ptx"));
  const std::string& original = seen["ptx/ptx"];
  const std::string& clean = seen["variant/clean/ptx"];
  EXPECT_NE(original.find("@argus"), std::string::npos);
  EXPECT_EQ(clean.find("@argus"), std::string::npos);
  EXPECT_NE(clean.find(".entry nested_regions"), std::string::npos);

  ASSERT_TRUE(seen.contains("build/clean/executable"));
  ASSERT_TRUE(seen.contains("build/clean/cubin"));
  EXPECT_TRUE(
      seen["build/clean/executable"].starts_with("\x7f"
                                                 "ELF"));
  EXPECT_TRUE(
      seen["build/clean/cubin"].starts_with("\x7f"
                                            "ELF"));

  ASSERT_TRUE(seen.contains("variant/trace/trace_map"));
  auto map = nlohmann::json::parse(seen["variant/trace/trace_map"], nullptr, false);
  ASSERT_FALSE(map.is_discarded());
  EXPECT_FALSE(map.empty()) << map.dump();
  EXPECT_FALSE(seen.contains("variant/clean/trace_map"));  // nothing traces, none declared
}

// A painted Triton variant (one whose task declares a cubin): Argus assembles the variant's PTX
// itself and the wrapper overrides Triton's cubin with it, so that the cubin that runs is the one
// the PC map is read from. Real Triton PTX (tests/data/ptx/triton_matmul_tma_argus.ptx, Triton
// 3.6 for examples/triton_matmul), painted by paint_ptx; the script is a stand-in that prints
// the override folder's cubin checksum instead of running Python.
TEST(TritonBuild, PaintedVariantOverridesTheCubinWithArgussOwn) {
  if (auto ptxas = findTool("ptxas"); !ptxas) GTEST_SKIP() << ptxas.error().text();
  auto dir = makeTempDir("argus-triton-build");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(
      writeFile(*dir / "run.py", "cksum < \"$TRITON_OVERRIDE_DIR/HASH/matmul_tma_argus.cubin\"\n"));
  ASSERT_TRUE(writeFile(*dir / "argus.yaml", "name: t\nlanguage: triton\nscript: run.py\n"));
  auto spec = program::loadProgramSpec(*dir / "argus.yaml");
  ASSERT_TRUE(spec) << spec.error().text();
  spec->python = "sh";
  runtime::ExecutorRegistry registry;
  CompileContext context;
  context.target = spec->file;
  context.spec = *spec;
  ASSERT_TRUE(registerCompileExecutors(registry, context));
  auto ptx = readFile(fs::path(ARGUS_EXAMPLES_DIR) / ".." / "tests" / "data" / "ptx" /
                      "triton_matmul_tma_argus.ptx");
  ASSERT_TRUE(ptx);
  // Stands in for the triton_dump task (a GPU run): its PTX and override key.
  ASSERT_TRUE(registry.add({"fixture_dump", "test: a Triton dump from fixtures",
                            std::make_shared<runtime::FunctionExecutor>(
                                [&](runtime::TaskContext&) -> Result<runtime::TaskOutputs> {
                                  runtime::TaskOutputs out;
                                  out.artifacts.emplace("ptx", runtime::Artifact::fromData(*ptx));
                                  out.artifacts.emplace(
                                      "triton_dump",
                                      runtime::Artifact::fromData(
                                          R"({"kernel":"matmul_tma_argus","source_hash":"HASH"})"));
                                  return out;
                                })}));
  runtime::Plan plan;
  TaskDescriptor dump;
  dump.id = "ptx";
  dump.executor = "fixture_dump";
  dump.outputs = {"ptx", "triton_dump"};
  ASSERT_TRUE(plan.add(dump));
  TaskDescriptor paint = variantTask("paint", {"paint_ptx"});
  paint.config["kernel"] = "matmul_tma_argus";
  paint.outputs = {"ptx", "paint_map"};
  ASSERT_TRUE(plan.add(paint));
  TaskDescriptor build = buildTask("paint");
  build.inputs.push_back(InputBinding{"triton_dump", "ptx", "triton_dump"});
  build.outputs = {"executable", "cubin"};
  ASSERT_TRUE(plan.add(build));
  runtime::MemoryResultStore store;
  runtime::Scheduler scheduler(registry, store, twoThreads());
  auto report = scheduler.run(plan);
  ASSERT_TRUE(report) << report.error().text();
  ASSERT_TRUE(report->ok()) << report->toText();

  auto built = store.lookup(report->find("build/paint")->memoKey);
  ASSERT_TRUE(built);
  ASSERT_TRUE(built->artifacts.contains("cubin"));
  auto cubin = built->artifacts.at("cubin").read();
  ASSERT_TRUE(cubin);
  EXPECT_TRUE(
      cubin->starts_with("\x7f"
                         "ELF"));
  const fs::path cubinFile = *dir / "built.cubin";
  const fs::path wrapper = *dir / "wrapper";
  ASSERT_TRUE(writeFile(cubinFile, *cubin));
  auto wrapperText = built->artifacts.at("executable").read();
  ASSERT_TRUE(wrapperText);
  EXPECT_NE(wrapperText->find("base64 -d > \"$dir/HASH/matmul_tma_argus.cubin\""),
            std::string::npos);
  ASSERT_TRUE(writeFile(wrapper, *wrapperText));
  fs::permissions(wrapper, fs::perms::owner_exec, fs::perm_options::add);
  auto ran = runProcess({wrapper.string()});
  auto expected = runProcess({"sh", "-c", "cksum < \"$0\"", cubinFile.string()});
  ASSERT_TRUE(ran && expected);
  EXPECT_EQ(ran->exitCode, 0) << ran->err;
  EXPECT_EQ(ran->out, expected->out);  // the cubin Triton would load is Argus's, byte for byte
  fs::remove_all(*dir);
}

TEST_F(CompileExecutors, BuildNeedsASpec) {
  runtime::ExecutorRegistry registry;
  CompileContext context;
  context.target = fs::path(ARGUS_EXAMPLES_DIR) / "nested_regions" / "kernel.cu";
  ASSERT_TRUE(registerCompileExecutors(registry, context));
  runtime::Plan plan;
  TaskDescriptor ptx = ptxTask();
  ptx.config.erase("target");
  ASSERT_TRUE(plan.add(ptx));
  ASSERT_TRUE(plan.add(variantTask("clean", {"strip_markers"})));
  ASSERT_TRUE(plan.add(buildTask("clean")));
  runtime::Scheduler scheduler(registry, store_, twoThreads());
  auto report = scheduler.run(plan);
  ASSERT_TRUE(report);
  EXPECT_EQ(state(*report, "ptx"), TaskState::Succeeded) << report->toText();
  EXPECT_EQ(state(*report, "build/clean"), TaskState::Failed);
  EXPECT_NE(report->find("build/clean")->outcome.error.find("not a program spec"),
            std::string::npos)
      << report->find("build/clean")->outcome.error;
}

}  // namespace
}  // namespace argus::backends
