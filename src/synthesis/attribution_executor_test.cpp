// ownership_weights and pc_attribution on real PC bundles (tests/data/pc_bundles/README.md): the
// four collections of one `argus query` on examples/shared_callee, made on the H200. No GPU and no
// CUDA tools needed: a bundle carries the disassembly and paint map of the cubin it measured.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "argus/evidence/pc_bundle.h"
#include "argus/evidence/trace_bundle.h"
#include "argus/runtime/executor.h"
#include "argus/support/process.h"
#include "argus/synthesis/attribution_executor.h"
#include "argus/trace/format.h"

namespace argus::synthesis {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string bundle(const std::string& collector) {
  auto text = readFile(fs::path(ARGUS_TEST_DATA_DIR) / "pc_bundles" / "shared_callee" /
                       (collector + ".bundle.json"));
  EXPECT_TRUE(text.has_value()) << text.error().text();
  return text ? *text : std::string();
}

/// Runs a registered executor on one task with the given inputs.
Result<runtime::TaskOutputs> runExecutor(const std::string& executor, const json& config,
                                         const std::vector<std::string>& outputs,
                                         const std::map<std::string, std::string>& inputs) {
  runtime::ExecutorRegistry registry;
  registerAttributionExecutors(registry);
  runtime::TaskDescriptor task;
  task.id = "synth/test";
  task.executor = executor;
  task.config = config;
  task.outputs = outputs;
  runtime::TaskContext ctx(task, fs::temp_directory_path() / "argus-attribution-executor-test");
  for (const auto& [name, bytes] : inputs) ctx.inputs[name] = runtime::Artifact::fromData(bytes);
  return registry.find(executor)->execute(ctx);
}

json output(const runtime::TaskOutputs& out, const std::string& name) {
  auto bytes = out.artifacts.at(name).read();
  return json::parse(*bytes);
}

double sumOfRegions(const json& doc, const std::string& key = "") {
  double sum = 0.0;
  for (const auto& [name, r] : doc["regions"].items())
    sum += key.empty() ? r["value"].get<double>() : r["value"][key].get<double>();
  return sum;
}

class SharedCalleeBundles : public ::testing::Test {
 protected:
  void SetUp() override {
    auto out = runExecutor("ownership_weights", json::object(), {"pc_region_map"},
                           {{"evidence", bundle("pc_mapping")}});
    ASSERT_TRUE(out.has_value()) << out.error().text();
    mapping_ = out->artifacts.at("pc_region_map").read().value();
  }
  std::string mapping_;
};

TEST_F(SharedCalleeBundles, BundlesReadBackUnchanged) {
  for (const char* c : {"pc_mapping", "cupti_sass", "cupti_pc_sampling", "ncu"}) {
    auto b = evidence::decodePcBundle(bundle(c));
    ASSERT_TRUE(b.has_value()) << c << ": " << b.error().text();
    EXPECT_EQ(b->kernel, "shared_callee");
    EXPECT_FALSE(b->launches.empty()) << c;
    EXPECT_EQ(evidence::encodePcBundle(*evidence::decodePcBundle(evidence::encodePcBundle(*b))),
              evidence::encodePcBundle(*b));
  }
  EXPECT_FALSE(evidence::decodePcBundle("{\"format\": \"argus_pc_bundle 0\"}").has_value());
}

TEST_F(SharedCalleeBundles, MappingRunCountsEveryPcOnce) {
  const json doc = json::parse(mapping_);
  EXPECT_EQ(doc["schema"], "argus.mapping_run/1");
  double regions = 0.0;
  for (const auto& [name, n] : doc["mapping_build_regions"].items()) regions += n.get<double>();
  EXPECT_EQ(regions, doc["mapping_build_total"].get<double>());
  // Each PC of the mapping build has one owner: no "(several owners)" bucket.
  EXPECT_FALSE(doc["mapping_build_regions"].contains("(several owners)"));
  EXPECT_EQ(doc["mapping_build_total"].get<double>(),
            doc["evidence"]["kernel_total_inst_executed"].get<double>());
}

TEST_F(SharedCalleeBundles, InstructionsAreExactAndAddUpToCuptisKernelTotal) {
  auto out =
      runExecutor("pc_attribution", {{"recipe", "sass_counters"}},
                  {"inst_executed", "inst_mix", "barrier_inst", "mem_inst"},
                  {{"evidence", bundle("cupti_sass")}, {"pc_region_map.pc_region_map", mapping_}});
  ASSERT_TRUE(out.has_value()) << out.error().text();
  const json inst = output(*out, "inst_executed");
  EXPECT_EQ(inst["schema"], "argus.pc_signal/1");
  EXPECT_EQ(inst["qualification"], "attributed");
  EXPECT_TRUE(inst["exact"].get<bool>()) << inst["estimate_reasons"].dump();
  const double total = inst["total"]["value"].get<double>();
  EXPECT_EQ(total, inst["evidence"]["kernel_total_inst_executed"].get<double>());
  EXPECT_DOUBLE_EQ(sumOfRegions(inst), total);
  double files = 0.0, shares = 0.0;
  for (const auto& [name, f] : inst["source_files"].items()) files += f["value"].get<double>();
  for (const auto& [name, r] : inst["regions"].items()) shares += r["share"].get<double>();
  EXPECT_DOUBLE_EQ(files, total);
  EXPECT_NEAR(shares, 1.0, 1e-12);
  // The helper's PCs have two owners (light, heavy); inline_work has none shared.
  EXPECT_GT(inst["regions"]["heavy"]["ambiguity"]["ambiguous_share"].get<double>(), 0.9);
  EXPECT_EQ(inst["regions"]["inline_work"]["ambiguity"]["ambiguous_share"].get<double>(), 0.0);
  // The warp-replay ground truth x 256 warps, which attribution_shared_callee_gpu checked on the
  // H200 for the same cubin (tests/data/pc_bundles/README.md).
  EXPECT_EQ(inst["regions"]["heavy"]["value"].get<double>(), 205568.0);
  EXPECT_EQ(inst["regions"]["light"]["value"].get<double>(), 54272.0);
  EXPECT_EQ(inst["regions"]["inline_work"]["value"].get<double>(), 10496.0);
  EXPECT_EQ(inst["regions"]["(outside every region)"]["value"].get<double>(), 3840.0);
  EXPECT_EQ(total, 274176.0);
  EXPECT_EQ(inst["evidence"]["cubin_check"]["method"], "identical bytes");
  EXPECT_TRUE(inst["evidence"]["sass_check"]["painted_equals_unpainted"].get<bool>());

  const json mix = output(*out, "inst_mix");
  double mixed = 0.0;
  for (const auto& [cls, v] : mix["total"]["value"].items()) mixed += v.get<double>();
  EXPECT_DOUBLE_EQ(mixed, total);
  const json barrier = output(*out, "barrier_inst");
  EXPECT_DOUBLE_EQ(sumOfRegions(barrier), barrier["total"]["value"].get<double>());
  const json mem = output(*out, "mem_inst");
  EXPECT_DOUBLE_EQ(sumOfRegions(mem, "all"), mem["total"]["value"]["all"].get<double>());
}

TEST_F(SharedCalleeBundles, NcuGivesTheSameRegionCountsAsCupti) {
  auto cupti =
      runExecutor("pc_attribution", {{"recipe", "sass_counters"}}, {"inst_executed"},
                  {{"evidence", bundle("cupti_sass")}, {"pc_region_map.pc_region_map", mapping_}});
  auto ncu =
      runExecutor("pc_attribution", {{"recipe", "ncu_source_counters"}}, {"ncu_source_counters"},
                  {{"evidence", bundle("ncu")}, {"pc_region_map.pc_region_map", mapping_}});
  ASSERT_TRUE(cupti.has_value()) << cupti.error().text();
  ASSERT_TRUE(ncu.has_value()) << ncu.error().text();
  const json a = output(*cupti, "inst_executed");
  const json b = output(*ncu, "ncu_source_counters");
  EXPECT_TRUE(b["exact"].get<bool>());
  for (const auto& [name, r] : a["regions"].items())
    EXPECT_EQ(b["regions"][name]["value"]["Instructions Executed"].get<double>(),
              r["value"].get<double>())
        << name;
  double ncuTotal = 0.0;
  for (const auto& l : b["evidence"]["kernel_totals"]["launches"])
    ncuTotal = l["smsp__inst_executed.sum"].get<double>();
  EXPECT_EQ(ncuTotal, a["total"]["value"].get<double>());
  EXPECT_EQ(b["evidence"]["cubin"]["hash"], a["evidence"]["cubin"]["hash"]);
}

TEST_F(SharedCalleeBundles, StallSamplesAreAttributedBySample) {
  auto out = runExecutor(
      "pc_attribution", {{"recipe", "pc_sampling"}}, {"stall_reasons"},
      {{"evidence", bundle("cupti_pc_sampling")}, {"pc_region_map.pc_region_map", mapping_}});
  ASSERT_TRUE(out.has_value()) << out.error().text();
  const json stalls = output(*out, "stall_reasons");
  double regions = 0.0, total = 0.0;
  for (const auto& [name, r] : stalls["regions"].items())
    for (const auto& [reason, n] : r["value"].items()) regions += n.get<double>();
  for (const auto& [reason, n] : stalls["total"]["value"].items()) total += n.get<double>();
  EXPECT_GT(total, 0.0);
  EXPECT_NEAR(regions, total, 1e-6 * total);
}

TEST_F(SharedCalleeBundles, WithoutTheMappingRunTheSplitIsAnEstimateAndSaysSo) {
  auto out = runExecutor("pc_attribution", {{"recipe", "sass_counters"}}, {"inst_executed"},
                         {{"evidence", bundle("cupti_sass")}});
  ASSERT_TRUE(out.has_value()) << out.error().text();
  const json inst = output(*out, "inst_executed");
  EXPECT_TRUE(inst["estimate"].get<bool>());
  EXPECT_FALSE(inst["estimate_reasons"].empty());
}

TEST_F(SharedCalleeBundles, EvidenceJoinsOnlyTheMapOfItsOwnCubin) {
  // The mapping run's counts (cloned helper copies past the reference's last PC) put on the
  // reference build's map: refused, not silently joined.
  auto mappingBundle = evidence::decodePcBundle(bundle("pc_mapping"));
  auto referenceBundle = evidence::decodePcBundle(bundle("cupti_sass"));
  ASSERT_TRUE(mappingBundle && referenceBundle);
  mappingBundle->collector = "cupti_sass";
  mappingBundle->disassembly = referenceBundle->disassembly;
  mappingBundle->paintMap = referenceBundle->paintMap;
  auto wrong =
      attributeBundle(evidence::encodePcBundle(*mappingBundle), std::nullopt, "sass_counters");
  ASSERT_FALSE(wrong.has_value());
  EXPECT_NE(wrong.error().message.find("same cubin"), std::string::npos) << wrong.error().text();
}

// Scoped attribution (scopeSignal): per region, its value times the share of its occurrences
// the scope selects; exact for shares 0 and 1, an estimate with its basis in between.
TEST(ScopeSignal, ARegionsValueInAScopeIsItsOccurrenceShareOfIt) {
  const json doc = json::parse(R"J({
    "schema": "argus.pc_signal/1", "signal": "inst_mix", "exact": true, "estimate": false,
    "estimate_reasons": [],
    "regions": {
      "producer": {"value": {"memory": 40, "int": 20}, "share": 0.2, "qualification": "attributed"},
      "consumer": {"value": {"tensor": 160, "int": 40}, "share": 0.6, "qualification": "attributed"},
      "epilogue": {"value": {"memory": 30, "int": 10}, "share": 0.1, "qualification": "attributed"},
      "(outside every region)": {"value": {"int": 20}, "share": 0.1, "qualification": "attributed"}},
    "source_files": {"k.cu": {"value": {"int": 330}}},
    "total": {"value": {"memory": 70, "int": 90, "tensor": 160}}})J");
  ScopeShares producer{"role=producer",
                       {{"producer", {4, 4}}, {"consumer", {0, 8}}, {"epilogue", {0, 8}}}};
  const json p = scopeSignal(doc, producer);
  EXPECT_TRUE(p["exact"].get<bool>()) << p.dump(2);
  EXPECT_EQ(p["scope"], "role=producer");
  EXPECT_EQ(p["regions"]["producer"]["value"]["memory"], 40.0);
  EXPECT_EQ(p["regions"]["consumer"]["value"]["tensor"], 0.0);
  EXPECT_EQ(p["regions"]["producer"]["share"], 1.0);
  EXPECT_EQ(p["total"]["value"]["memory"], 40.0);
  EXPECT_FALSE(p["regions"].contains("(outside every region)"));
  ASSERT_EQ(p["not_scoped"].size(), 2u) << p["not_scoped"].dump();
  EXPECT_EQ(p["not_scoped"][0]["region"], "(outside every region)");
  EXPECT_TRUE(p["source_files"].empty());
  EXPECT_EQ(p["scope_method"]["method"], "occurrence_share");

  // Half of the epilogue's occurrences: half its value, and an estimate that says why.
  ScopeShares half{"warpgroup=1",
                   {{"producer", {0, 4}}, {"consumer", {8, 8}}, {"epilogue", {4, 8}}}};
  const json h = scopeSignal(doc, half);
  EXPECT_FALSE(h["exact"].get<bool>());
  EXPECT_EQ(h["regions"]["epilogue"]["value"]["memory"], 15.0);
  EXPECT_EQ(h["regions"]["epilogue"]["scope_share"]["fraction"], 0.5);
  EXPECT_NE(h["estimate_reasons"].dump().find("epilogue"), std::string::npos);
  EXPECT_DOUBLE_EQ(h["regions"]["consumer"]["share"].get<double>(), 0.6 / 0.65);

  // What makes even 0/1 shares an estimate: a region with instructions but no occurrence, lost
  // records, an SM scope (another run's CTA placement).
  ScopeShares gap{"role=producer", {{"producer", {4, 4}}, {"consumer", {0, 8}}}};
  const json g = scopeSignal(doc, gap);
  EXPECT_FALSE(g["exact"].get<bool>());
  ASSERT_EQ(g["estimate_reasons"].size(), 1u) << g["estimate_reasons"].dump();
  EXPECT_NE(
      g["estimate_reasons"][0]["reason"].get<std::string>().find("no occurrence of [\"epilogue\"]"),
      std::string::npos)
      << g["estimate_reasons"].dump();
  ScopeShares lost = producer;
  lost.lostRecords = 3;
  EXPECT_NE(scopeSignal(doc, lost)["estimate_reasons"].dump().find("lost 3 records"),
            std::string::npos);
  ScopeShares sm = producer;
  sm.bySm = true;
  EXPECT_FALSE(scopeSignal(doc, sm)["exact"].get<bool>());
}

// Ratios keep their value where the scope keeps some occurrences, and have none where it keeps
// none (0 / 0); plain numbers scale like objects.
TEST(ScopeSignal, RatiosAndPlainNumbers) {
  const json doc = json::parse(R"J({"exact": true, "estimate_reasons": [],
    "regions": {"a": {"value": 100, "share": 0.5,
                      "threads_per_inst": {"value": 31.5, "numerator": 3150, "denominator": 100}},
                "b": {"value": 100, "share": 0.5,
                      "threads_per_inst": {"value": 16, "numerator": 1600, "denominator": 100}}},
    "total": {"value": 200}})J");
  const json s = scopeSignal(doc, {"warp=0", {{"a", {2, 4}}, {"b", {0, 4}}}});
  EXPECT_EQ(s["regions"]["a"]["value"], 50.0);
  EXPECT_EQ(s["regions"]["a"]["threads_per_inst"]["value"], 31.5);
  EXPECT_EQ(s["regions"]["a"]["threads_per_inst"]["denominator"], 50.0);
  EXPECT_TRUE(s["regions"]["b"]["threads_per_inst"]["value"].is_null());
  EXPECT_EQ(s["total"]["value"], 50.0);
  EXPECT_EQ(s["regions"]["a"]["share"], 1.0);
}

// A hand-made trace bundle: region `a` run by warps 0 and 1 of CTA 0, `b` by warp 1 only.
TEST(ScopeSignal, SharesComeFromTheTracesOccurrencesPerScope) {
  trace::TraceHeader header;
  header.capacityPerWarp = 2;
  header.warpSlots = 2;
  header.warpsPerCta = 2;
  trace::TraceRecord records[4];
  const std::uint32_t none = trace::kNoRole << 12;
  records[0] = {100, 200, trace::kValidBit | none | (0u << 16), 0, trace::kNoIteration, 0};
  records[2] = {100, 250, trace::kValidBit | none | (0u << 16), 0, trace::kNoIteration, 1};
  records[3] = {300, 350, trace::kValidBit | none | (1u << 16), 0, trace::kNoIteration, 1};
  std::string buffer(sizeof header + sizeof records, '\0');
  std::memcpy(buffer.data(), &header, sizeof header);
  std::memcpy(buffer.data() + sizeof header, records, sizeof records);
  evidence::TraceBundle bundle;
  bundle.traceMap["k"] = json::parse(R"({"argus_trace_map": 1, "kernel": "k",
      "time_base": "globaltimer", "overflow": "clamp",
      "regions": [{"index": 0, "path": "a", "parent": null},
                  {"index": 1, "path": "b", "parent": null}]})");
  bundle.launches.push_back({{{"seq", 0}, {"kernel", "k"}}, buffer});
  auto shares = scopeShares(evidence::encodeBundle(bundle), *query::parseScope("warp=1"));
  ASSERT_TRUE(shares.has_value()) << shares.error().text();
  EXPECT_EQ(shares->scope, "warp=1");
  EXPECT_EQ(shares->occurrences.at("a"), (std::pair<uint64_t, uint64_t>{1, 2}));
  EXPECT_EQ(shares->occurrences.at("b"), (std::pair<uint64_t, uint64_t>{1, 1}));
}

}  // namespace
}  // namespace argus::synthesis
