#include "argus/planner/planner.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <gtest/gtest.h>

#include "argus/program/program.h"
#include "argus/program/triton.h"
#include "argus/ptx/parser.h"
#include "argus/support/process.h"

namespace argus::planner {
namespace {

/// The TMA GEMM example (tests/data/ptx/examples_tma_gemm.ptx, made by nvcc from
/// examples/tma_gemm): regions mainloop{tma_load, mma} and epilogue.
ProgramContext tmaGemm() {
  auto text = readFile(std::string(ARGUS_TEST_DATA_DIR) + "/ptx/examples_tma_gemm.ptx");
  EXPECT_TRUE(text);
  auto module = ptx::parseModule(*text, "examples_tma_gemm.ptx");
  EXPECT_TRUE(module) << module.error().text();
  auto regions = ptx::analyzeRegions(*module);
  EXPECT_TRUE(regions) << regions.error().text();
  return ProgramContext{"examples/tma_gemm/argus.yaml", "v-test", std::move(*regions)};
}

const RecipeCatalog& catalog() {
  static RecipeCatalog c = *RecipeCatalog::load(ARGUS_RECIPE_DIR);
  return c;
}

query::Query runningExample() {
  query::Query q;
  q.program = "examples/tma_gemm/argus.yaml";
  q.kernel = "tma_gemm";
  q.region = "mainloop";
  q.signals = {"duration", "inst_mix", "barrier_inst", "op_latency"};
  return q;
}

/// `plan` printed with --explain equals tests/data/plans/NAME (ARGUS_UPDATE_GOLDEN=1 rewrites it).
void expectGoldenPlan(const Result<QueryPlan>& plan, const std::string& name) {
  ASSERT_TRUE(plan) << plan.error().text();
  const std::string golden = std::string(ARGUS_TEST_DATA_DIR) + "/plans/" + name;
  if (std::getenv("ARGUS_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(writeFile(golden, toText(*plan, true)));
  }
  auto expected = readFile(golden);
  ASSERT_TRUE(expected) << "missing " << golden << "; it should hold:\n" << toText(*plan, true);
  EXPECT_EQ(toText(*plan, true), *expected)
      << "regenerate " << golden << " if the change is intended";
}

TEST(Planner, RunningExampleMatchesTheGoldenPlan) {
  expectGoldenPlan(planQuery(runningExample(), catalog(), tmaGemm()), "running_example.txt");
}

/// Calls `check(task, traces)` for every ptx_pass task of `plan` (traces: its transforms lower
/// the markers to a trace); returns how many trace.
template <class Check>
int forEachPtxPass(const QueryPlan& plan, Check&& check) {
  int traced = 0;
  for (const auto& t : plan.plan.tasks()) {
    if (t.executor != "ptx_pass") continue;
    const bool traces =
        t.config["transforms"].dump().find("lower_markers_to_trace") != std::string::npos;
    traced += traces;
    check(t, traces);
  }
  return traced;
}

// The spec's block shapes reach the trace variants' PTX pass (its lane-0 analysis), and only
// those: the mapping and counter variants do not trace.
TEST(Planner, SpecBlockShapesReachTheTraceVariants) {
  ProgramContext program = tmaGemm();
  program.blocks["tma_gemm"] = {128, 1, 1};
  auto plan = planQuery(runningExample(), catalog(), program);
  ASSERT_TRUE(plan) << plan.error().text();
  const int traced = forEachPtxPass(*plan, [](const runtime::TaskDescriptor& t, bool traces) {
    EXPECT_EQ(t.config.contains("blocks"), traces) << t.id;
    if (traces) {
      EXPECT_EQ(t.config["blocks"], nlohmann::json::parse(R"({"tma_gemm":[128,1,1]})"));
    }
  });
  EXPECT_GT(traced, 0);
}

// A query's trace options (--trace-option) go into the trace variants' pass config, so that
// each choice is a variant of its own.
TEST(Planner, TraceOptionsReachTheTraceVariants) {
  query::Query q = runningExample();
  q.traceOptions = {{"parted", "record"}};
  auto plan = planQuery(q, catalog(), tmaGemm());
  ASSERT_TRUE(plan) << plan.error().text();
  auto plain = planQuery(runningExample(), catalog(), tmaGemm());
  ASSERT_TRUE(plain) << plain.error().text();
  const int traced = forEachPtxPass(*plan, [&](const runtime::TaskDescriptor& t, bool traces) {
    EXPECT_EQ(t.config.value("parted", ""), traces ? "record" : "") << t.id;
    const auto* same = plain->plan.find(t.id);
    ASSERT_NE(same, nullptr) << t.id;
    EXPECT_EQ(same->config == t.config, !traces) << t.id;
  });
  EXPECT_GT(traced, 0);
}

// The op_latency probe variants, made while the plan runs, trace with the same block shapes and
// trace options: the discovery task carries them, and each probe's pass config gets them.
TEST(Planner, ProbeVariantsGetTheQuerysTraceConfig) {
  query::Query q = runningExample();
  q.traceOptions = {{"time_base", "clock64"}};
  ProgramContext program = tmaGemm();
  program.blocks["tma_gemm"] = {160, 1, 1};
  auto plan = planQuery(q, catalog(), program);
  ASSERT_TRUE(plan) << plan.error().text();
  const auto* discover = plan->plan.find("discover/async_discovery");
  ASSERT_NE(discover, nullptr);
  const auto expected =
      nlohmann::json::parse(R"({"blocks": {"tma_gemm": [160, 1, 1]}, "time_base": "clock64"})");
  EXPECT_EQ(discover->config["trace_config"], expected);
  auto branches = probeBranches(*plan, {{"op.tma_load.0", "tma_load", {0}, "", {}}});
  ASSERT_TRUE(branches) << branches.error().text();
  int variants = 0;
  for (const auto& t : *branches) {
    if (t.executor != "ptx_pass") continue;
    ++variants;
    EXPECT_EQ(t.config["blocks"], expected["blocks"]) << t.id;
    EXPECT_EQ(t.config["time_base"], "clock64") << t.id;
    EXPECT_EQ(t.config["op"], "op.tma_load.0") << t.id;  // its own options stay
  }
  EXPECT_EQ(variants, 1);
  // Without either, the discovery task carries nothing.
  auto plain = planQuery(runningExample(), catalog(), tmaGemm());
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->plan.find("discover/async_discovery")->config.contains("trace_config"));
}

TEST(Planner, RunningExampleSeparatesTracingMappingAndCounters) {
  auto plan = planQuery(runningExample(), catalog(), tmaGemm());
  ASSERT_TRUE(plan) << plan.error().text();
  EXPECT_EQ(plan->subtree,
            (std::vector<std::string>{"mainloop", "mainloop/tma_load", "mainloop/mma"}));
  std::map<std::string, int> partitionOf;
  for (const auto& c : plan->collections) partitionOf[c.recipe] = c.partition;
  ASSERT_EQ(partitionOf.size(), 3u);
  EXPECT_NE(partitionOf["reference_trace"], partitionOf["pc_region_map"]);
  EXPECT_NE(partitionOf["reference_trace"], partitionOf["sass_counters"]);
  EXPECT_NE(partitionOf["pc_region_map"], partitionOf["sass_counters"]);
  // One PTX and one mapping run serve every attributed signal.
  int ptx = 0, mapping = 0;
  for (const auto& t : plan->plan.tasks()) {
    ptx += t.executor == "nvcc_ptx";
    mapping += t.id == "build/mapping";
  }
  EXPECT_EQ(ptx, 1);
  EXPECT_EQ(mapping, 1);
  EXPECT_EQ(plan->answers.at("inst_mix"), plan->answers.at("barrier_inst"));
  const auto* discover = plan->plan.find("discover/async_discovery");
  ASSERT_NE(discover, nullptr);
  EXPECT_EQ(discover->type, runtime::TaskType::Control);
}

TEST(Planner, EveryProbeRunsAlone) {
  auto plan = planQuery(runningExample(), catalog(), tmaGemm());
  ASSERT_TRUE(plan);
  std::vector<int64_t> iterations{0, 1, 2, 3, 4, 5, 6, 7};
  auto branches = probeBranches(*plan, {{"op.tma_load.0", "tma_load", iterations, "", {}},
                                        {"op.tma_load.1", "tma_load", iterations, "", {}}});
  ASSERT_TRUE(branches) << branches.error().text();
  std::set<std::string> groups;
  int collects = 0;
  for (const auto& t : *branches) {
    if (t.type != runtime::TaskType::Collect) continue;
    ++collects;
    // Alone on the GPU while it uses it: shares the device only with probes taking turns.
    EXPECT_TRUE(t.isolation.gpuTurns) << t.id;
    EXPECT_FALSE(t.isolation.exclusiveDevice) << t.id;
    EXPECT_TRUE(groups.insert(t.isolation.group).second) << t.id;
  }
  EXPECT_EQ(collects, 16);  // the seed's 16 operation-iteration candidates
  runtime::Plan all = plan->plan;
  for (auto t : *branches) ASSERT_TRUE(all.add(std::move(t)));
  EXPECT_TRUE(all.validate()) << all.validate().error().text();
}

TEST(Planner, MultiGpuProgramsCollectOnAllTheirGpus) {
  ProgramContext program = tmaGemm();
  program.gpus = 2;  // a spec with run.gpus: 2
  auto plan = planQuery(runningExample(), catalog(), program);
  ASSERT_TRUE(plan) << plan.error().text();
  int collects = 0;
  for (const auto& t : plan->plan.tasks()) {
    EXPECT_EQ(t.gpus, t.type == runtime::TaskType::Collect ? 2u : 1u) << t.id;
    collects += t.type == runtime::TaskType::Collect;
  }
  EXPECT_GT(collects, 0);
  auto branches = probeBranches(*plan, {{"op.tma_load.0", "tma_load", {0}, "", {}}});
  ASSERT_TRUE(branches) << branches.error().text();
  for (const auto& t : *branches) {
    if (t.type == runtime::TaskType::Collect) {
      EXPECT_EQ(t.gpus, 2u) << t.id;
    }
  }
  auto json = runtime::toJson(plan->plan.tasks().back());
  EXPECT_FALSE(json.contains("gpus"));  // synthesis tasks run on no GPU
}

TEST(Planner, JsonRoundTrip) {
  auto plan = planQuery(runningExample(), catalog(), tmaGemm());
  ASSERT_TRUE(plan);
  auto text = toJson(*plan).dump();
  auto back = queryPlanFromJson(nlohmann::json::parse(text));
  ASSERT_TRUE(back) << back.error().text();
  EXPECT_EQ(*back, *plan);
  EXPECT_EQ(toJson(*back).dump(), text);
}

TEST(Planner, ErrorsListWhatExists) {
  auto program = tmaGemm();
  auto q = runningExample();
  q.region = "mainlop";
  auto r = planQuery(q, catalog(), program);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no region `mainlop`"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("mainloop/tma_load"), std::string::npos) << r.error().message;

  q = runningExample();
  q.signals = {"duraton"};
  r = planQuery(q, catalog(), program);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("unknown signal `duraton`"), std::string::npos);
  EXPECT_NE(r.error().message.find("duration"), std::string::npos);

  q = runningExample();
  q.kernel = "gemm2";
  r = planQuery(q, catalog(), program);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no kernel `gemm2`; kernels: tma_gemm"), std::string::npos)
      << r.error().message;

  q = runningExample();
  q.signals = {"stall_reasons"};
  q.scope = *query::parseScope("launch=1");
  r = planQuery(q, catalog(), program);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cannot be restricted by scope coordinate `launch`"),
            std::string::npos)
      << r.error().message;
}

// Per-PC counters keep no warp, SM or iteration; a scoped query reads them through an unscoped
// trace's occurrences (Recipe::scopeThrough), whose build records every occurrence.
TEST(Planner, ScopedAttributionReadsAnUnscopedTracesOccurrences) {
  auto program = tmaGemm();
  auto q = runningExample();
  q.signals = {"stall_reasons", "inst_mix", "duration"};
  q.scope = *query::parseScope("sm=0..15");
  auto plan = planQuery(q, catalog(), program);
  ASSERT_TRUE(plan) << plan.error().text();
  const auto* sampling = plan->plan.find("synth/pc_sampling");
  const auto* counters = plan->plan.find("synth/sass_counters");
  ASSERT_NE(sampling, nullptr);
  ASSERT_NE(counters, nullptr);
  std::string traceOfSampling, traceOfCounters;
  for (const auto& in : sampling->inputs)
    if (in.name == "scope_trace") traceOfSampling = in.task;
  for (const auto& in : counters->inputs)
    if (in.name == "scope_trace") traceOfCounters = in.task;
  ASSERT_FALSE(traceOfSampling.empty());
  EXPECT_EQ(traceOfSampling, traceOfCounters) << "one unscoped trace serves both";
  ASSERT_NE(plan->plan.find(traceOfSampling), nullptr);
  EXPECT_EQ(plan->plan.find(traceOfSampling)->config.value("variant", ""), "full_trace");
  // The runs and builds are the unscoped query's, so a workspace reuses them across scopes.
  for (const auto& id : {"variant/full_trace", "build/full_trace", "build/reference",
                         "build/mapping", "collect/p0"}) {
    ASSERT_NE(plan->plan.find(id), nullptr) << id;
    EXPECT_TRUE(plan->plan.find(id)->scope.empty()) << id;
  }
  // duration itself stays scoped: only the selected occurrences are recorded for it.
  EXPECT_NE(plan->plan.find("variant/scoped_trace[sm=0..15]"), nullptr);
}

TEST(Planner, RegionIdWorksLikeItsPath) {
  auto program = tmaGemm();
  auto q = runningExample();
  auto byPath = planQuery(q, catalog(), program);
  ASSERT_TRUE(byPath);
  q.region = byPath->regionId;
  auto byId = planQuery(q, catalog(), program);
  ASSERT_TRUE(byId) << byId.error().text();
  EXPECT_EQ(byId->regionPath, "mainloop");
  EXPECT_EQ(byId->plan, byPath->plan);
}

TEST(Planner, ScopedQueriesTraceOnlyTheirOccurrences) {
  auto q = runningExample();
  q.signals = {"duration"};
  q.scope = *query::parseScope("role=producer,iter=0..7");
  auto plan = planQuery(q, catalog(), tmaGemm());
  ASSERT_TRUE(plan) << plan.error().text();
  EXPECT_NE(plan->plan.find("build/scoped_trace[role=producer,iter=0..7]"), nullptr)
      << plan->plan.toText();
}

TEST(Planner, UnknownRolesAreErrorsListingTheKernelsRoles) {
  auto q = runningExample();
  q.signals = {"duration"};
  q.scope = *query::parseScope("role=producer|nosuchrole");
  auto r = planQuery(q, catalog(), tmaGemm());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("scope `role=nosuchrole`: kernel `tma_gemm` has no region "
                                   "marked with role `nosuchrole`; its roles are: consumer, "
                                   "producer"),
            std::string::npos)
      << r.error().message;
}

// Property: for every subset of signals, no partition holds two conflicting collections and
// every requested signal's answer is reachable from a collection or a discovery.
TEST(PlannerProperties, PartitionsAreConflictFreeAndSignalsReachable) {
  const std::vector<std::string> signals{
      "duration",   "occurrences",         "kernel_duration", "inst_executed",
      "inst_mix",   "barrier_inst",        "mem_inst",        "stall_reasons",
      "op_latency", "ncu_source_counters", "pc_region_map",   "op_sites"};
  auto program = tmaGemm();
  for (unsigned mask = 1; mask < (1u << signals.size()); mask += 37) {
    auto q = runningExample();
    q.signals.clear();
    for (size_t i = 0; i < signals.size(); ++i)
      if (mask & (1u << i)) q.signals.push_back(signals[i]);
    auto plan = planQuery(q, catalog(), program);
    ASSERT_TRUE(plan) << plan.error().text();
    for (const auto& a : plan->collections) {
      for (const auto& b : plan->collections) {
        if (&a == &b || a.partition != b.partition) continue;
        EXPECT_FALSE(separationRule(*catalog().find(a.recipe), a.variant, *catalog().find(b.recipe),
                                    b.variant))
            << a.key << " and " << b.key << " share partition " << a.partition;
      }
    }
    for (const auto& signal : q.signals) {
      ASSERT_TRUE(plan->answers.contains(signal)) << signal;
      // Walk upstream from the answer; it must reach evidence (a Collect or a Control task).
      std::vector<std::string> todo{plan->answers.at(signal)};
      std::set<std::string> seen;
      bool evidence = false;
      while (!todo.empty()) {
        auto id = todo.back();
        todo.pop_back();
        if (!seen.insert(id).second) continue;
        const auto* t = plan->plan.find(id);
        ASSERT_NE(t, nullptr) << id;
        evidence = evidence || t->type == runtime::TaskType::Collect ||
                   t->type == runtime::TaskType::Control;
        for (const auto& up : t->upstream()) todo.push_back(up);
      }
      EXPECT_TRUE(evidence) << signal;
    }
  }
}

/// The Triton TMA matmul (examples/triton_matmul), planned from its spec's region list: its PTX
/// exists only after a GPU run.
ProgramContext tritonMatmul() {
  auto spec = program::loadProgramSpec(std::string(ARGUS_SOURCE_DIR) +
                                       "/examples/triton_matmul/argus.yaml");
  EXPECT_TRUE(spec) << spec.error().text();
  auto regions = program::tritonPlanningRegions(*spec);
  EXPECT_TRUE(regions) << regions.error().text();
  return ProgramContext{"examples/triton_matmul/argus.yaml", "v-triton", std::move(*regions),
                        "triton"};
}

query::Query tritonQuery(std::vector<std::string> signals) {
  query::Query q;
  q.program = "examples/triton_matmul/argus.yaml";
  q.kernel = "matmul_tma_argus";
  q.region = "mainloop";
  q.signals = std::move(signals);
  return q;
}

TEST(Planner, TritonPlanMatchesTheGoldenPlan) {
  expectGoldenPlan(planQuery(tritonQuery({"duration", "op_latency"}), catalog(), tritonMatmul()),
                   "triton_matmul.txt");
}

TEST(Planner, TritonPtxComesFromADumpRunOnAGpu) {
  auto plan = planQuery(tritonQuery({"duration"}), catalog(), tritonMatmul());
  ASSERT_TRUE(plan) << plan.error().text();
  EXPECT_EQ(plan->kernel, "matmul_tma_argus");
  EXPECT_EQ(plan->regionId, ptx::regionId("matmul_tma_argus", "mainloop"));
  EXPECT_EQ(plan->subtree, (std::vector<std::string>{"mainloop", "mainloop/iteration"}));
  const auto* dump = plan->plan.find("ptx");
  ASSERT_NE(dump, nullptr);
  EXPECT_EQ(dump->executor, "triton_dump");
  EXPECT_TRUE(dump->needs(runtime::Requirement::Gpu));
  EXPECT_EQ(dump->outputs, (std::vector<std::string>{"ptx", "ttgir", "triton_dump"}));
  // The build is an override wrapper: it needs the dump's override key, and makes no cubin.
  const auto* build = plan->plan.find("build/full_trace");
  ASSERT_NE(build, nullptr);
  EXPECT_EQ(build->executor, "build_variant");
  EXPECT_TRUE(std::any_of(build->inputs.begin(), build->inputs.end(), [](const auto& b) {
    return b.name == "triton_dump" && b.task == "ptx" && b.output == "triton_dump";
  }));
  EXPECT_EQ(build->outputs, (std::vector<std::string>{"executable"}));
  const auto* collect = plan->plan.find("collect/p0");
  ASSERT_NE(collect, nullptr);
  EXPECT_EQ(collect->executor, "region_trace");
  // The JSON form parses back to the same plan.
  auto back = queryPlanFromJson(toJson(*plan));
  ASSERT_TRUE(back) << back.error().text();
  EXPECT_EQ(*back, *plan);
}

TEST(Planner, TritonProbeBuildsBindTheDump) {
  auto plan = planQuery(tritonQuery({"op_latency"}), catalog(), tritonMatmul());
  ASSERT_TRUE(plan) << plan.error().text();
  const auto* discover = plan->plan.find("discover/async_discovery");
  ASSERT_NE(discover, nullptr);
  EXPECT_EQ(discover->config.value("triton_dump", ""), "ptx");
  auto branches = probeBranches(*plan, {ProbeTarget{"op1", "tma_load", {0}, "", std::nullopt}});
  ASSERT_TRUE(branches) << branches.error().text();
  bool bound = false;
  for (const auto& t : *branches)
    if (t.executor == "build_variant")
      for (const auto& b : t.inputs) bound = bound || b.name == "triton_dump";
  EXPECT_TRUE(bound);
}

// Painted-PC signals on Triton: the painted variant's build declares the cubin (Argus assembles
// it and overrides Triton's), binds the dump's override key, and its collection reads that cubin.
TEST(Planner, TritonPaintedVariantBuildsItsOwnCubin) {
  auto plan = planQuery(tritonQuery({"inst_mix"}), catalog(), tritonMatmul());
  ASSERT_TRUE(plan) << plan.error().text();
  const runtime::TaskDescriptor* build = nullptr;
  for (const auto& t : plan->plan.tasks())
    if (t.executor == "build_variant") build = &t;
  ASSERT_NE(build, nullptr);
  EXPECT_NE(std::find(build->outputs.begin(), build->outputs.end(), "cubin"), build->outputs.end());
  EXPECT_NE(std::find(build->inputs.begin(), build->inputs.end(),
                      runtime::InputBinding{"triton_dump", "ptx", "triton_dump"}),
            build->inputs.end());
  bool readsCubin = false;
  for (const auto& t : plan->plan.tasks())
    for (const auto& b : t.inputs)
      readsCubin = readsCubin || (b.name == "cubin" && b.task == build->id);
  EXPECT_TRUE(readsCubin);
}

TEST(Planner, TritonUnknownRegionListsTheSpecsRegions) {
  auto q = tritonQuery({"duration"});
  q.region = "prologue";
  auto plan = planQuery(q, catalog(), tritonMatmul());
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("mainloop/iteration"), std::string::npos)
      << plan.error().message;
}

}  // namespace
}  // namespace argus::planner
