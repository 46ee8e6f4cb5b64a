// GPU check of issue 6's exactness claim (label `gpu`; exits 77 = skipped without a GPU):
// `argus query` on examples/shared_callee with inst_executed and ncu_source_counters must give
//   - per region, exactly the executed warp instructions the warp replay of the reference build
//     predicts (fixed trip counts, warp_replay_test_util.h) times the number of warps,
//   - a total equal to CUPTI's kernel total (sum over every PC) and to ncu's
//   smsp__inst_executed.sum,
//   - evidence measured on the very cubin the test rebuilds here (same content hash).
// With $ARGUS_PC_FIXTURE_OUT set it also writes the query's PC bundles there (test fixtures), with
// $ARGUS_PC_WORKSPACE it keeps the query's workspace there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "argus/passes/transforms.h"
#include "argus/program/build.h"
#include "argus/program/program.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/runtime/task.h"
#include "argus/sass/pcmap.h"
#include "argus/support/process.h"
#include "argus/synthesis/attribution.h"
#include "argus/workspace/workspace.h"
#include "shared_callee_truth.h"
#include "warp_replay_test_util.h"

namespace argus::synthesis {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using testing::kKernel;
using testing::kWarps;

bool haveGpu() {
  auto smi = runProcess(
      {"nvidia-smi", "-L"},
      {.workingDirectory = std::nullopt, .timeout = std::chrono::seconds(20), .environment = {}});
  return smi && smi->exitCode == 0 && smi->out.find("GPU ") != std::string::npos;
}

/// Writes the PC bundles the query's collections published into `dir`.
void dumpBundles(const fs::path& workspace, const fs::path& dir) {
  auto ws = workspace::Workspace::open(workspace);
  ASSERT_TRUE(ws.has_value()) << ws.error().text();
  auto tasks = ws->tasks();
  ASSERT_TRUE(tasks.has_value());
  fs::create_directories(dir);
  for (const auto& t : *tasks) {
    json d = json::parse(t.descriptorJson, nullptr, false);
    const std::string executor = d.is_object() ? d.value("executor", "") : "";
    if (executor != "pc_mapping" && executor != "cupti_sass" && executor != "cupti_pc_sampling" &&
        executor != "ncu")
      continue;
    for (const auto& a : t.outputs) {
      auto bytes = ws->readArtifact(a.id);
      if (bytes) (void)writeFile(dir / (executor + ".bundle.json"), *bytes);
    }
  }
}

TEST(SharedCalleeOnGpu, AttributedInstructionsEqualTheGroundTruthAndTheKernelTotals) {
  if (!haveGpu()) {
    std::cout << "no GPU (nvidia-smi lists none)\n";
    std::exit(77);
  }
  const fs::path root = ARGUS_SOURCE_DIR;
  auto tmp = makeTempDir("argus-pc-gpu");
  ASSERT_TRUE(tmp.has_value());
  // $ARGUS_PC_WORKSPACE keeps the query's workspace (scripts/gpu/pc-check.sh reuses it).
  const char* keep = std::getenv("ARGUS_PC_WORKSPACE");
  const fs::path wsDir = keep && *keep ? fs::path(keep) : *tmp / "ws";
  auto query = runProcess(
      {ARGUS_BIN, "query", "--program", (root / "examples/shared_callee/argus.yaml").string(),
       "--kernel", kKernel, "--signals", "inst_executed,ncu_source_counters", "--json",
       "--workspace", wsDir.string()},
      {.workingDirectory = root, .timeout = std::chrono::seconds(300), .environment = {}});
  ASSERT_TRUE(query.has_value()) << query.error().text();
  ASSERT_EQ(query->exitCode, 0) << query->out << query->err;
  json report = json::parse(query->out);
  if (const char* out = std::getenv("ARGUS_PC_FIXTURE_OUT"); out && *out) {
    ASSERT_NO_FATAL_FAILURE(dumpBundles(wsDir, out));
  }
  const json& inst = report["signals"]["inst_executed"]["value"];
  const json& ncu = report["signals"]["ncu_source_counters"]["value"];
  ASSERT_EQ(inst.value("schema", ""), "argus.pc_signal/1") << report.dump(2);
  EXPECT_TRUE(inst["exact"].get<bool>()) << inst["estimate_reasons"].dump();

  // The reference build, rebuilt here the way the query built it: same bytes, same SASS.
  auto spec = program::loadProgramSpec(root / "examples/shared_callee/argus.yaml");
  ASSERT_TRUE(spec.has_value()) << spec.error().text();
  auto ptx = program::frontEndPtx(*spec);
  ASSERT_TRUE(ptx.has_value()) << ptx.error().text();
  auto module = ptx::parseModule(*ptx, "shared_callee.ptx");
  ASSERT_TRUE(module.has_value());
  auto painted = passes::applyTransforms(*module, {"paint_ptx"}, {.scope = {}, .kernel = kKernel});
  ASSERT_TRUE(painted.has_value()) << painted.error().text();
  auto built = program::buildWithPtx(*spec, ptx::printModule(*module), *tmp / "reference");
  ASSERT_TRUE(built.has_value()) << built.error().text();
  auto cubinBytes = readFile(built->cubin);
  ASSERT_TRUE(cubinBytes.has_value());
  EXPECT_EQ(inst["evidence"]["cubin"]["hash"].get<std::string>(), runtime::contentHash(*cubinBytes))
      << "the query measured another cubin than this rebuild";
  EXPECT_EQ(inst["evidence"]["cubin_check"]["method"], "identical bytes");
  EXPECT_TRUE(inst["evidence"]["sass_check"]["painted_equals_unpainted"].get<bool>());

  // Ground truth: one warp replayed through the reference SASS, times the warps.
  auto pcmap = sass::readPcMap(built->cubin, painted->paintMap);
  ASSERT_TRUE(pcmap.has_value()) << pcmap.error().text();
  auto text = sass::disassemble(built->cubin, false);
  ASSERT_TRUE(text.has_value());
  const auto functions = testing::parseSass(*text);
  ASSERT_TRUE(functions.contains(kKernel));
  auto ownerAt = [&](uint64_t pc) -> std::string {
    for (const auto& e : *pcmap)
      if (e.function == kKernel && e.pc == pc && e.owners.size() == 1)
        return e.owners[0].region.empty() ? std::string(kOutsideRegions) : e.owners[0].region;
    return "?";
  };
  auto replay = testing::replayWarp(functions.at(kKernel), testing::sharedCalleeTrips(ownerAt));
  ASSERT_TRUE(replay.has_value()) << replay.error().text();
  std::map<std::string, double> truth;
  double truthTotal = 0.0;
  for (const auto& [key, n] : replay->byCallSite) {
    const auto [pc, call] = key;
    const double executed = static_cast<double>(n * kWarps);
    truth[ownerAt(call == testing::kNoCall ? pc : call)] += executed;
    truthTotal += executed;
  }
  for (const auto& [region, value] : truth) {
    ASSERT_TRUE(inst["regions"].contains(region)) << region << " in " << inst["regions"].dump();
    EXPECT_EQ(inst["regions"][region]["value"].get<double>(), value) << region;
    std::cout << "region " << region << ": truth " << value << ", attributed "
              << inst["regions"][region]["value"].get<double>() << "\n";
  }
  EXPECT_EQ(inst["total"]["value"].get<double>(), truthTotal);
  EXPECT_EQ(inst["evidence"]["kernel_total_inst_executed"].get<double>(), truthTotal);
  // ncu: same per-region counts from its own per-PC table, and its kernel total.
  ASSERT_EQ(ncu.value("schema", ""), "argus.pc_signal/1") << report.dump(2);
  double ncuTotal = -1;
  for (const auto& l : ncu["evidence"]["kernel_totals"]["launches"])
    ncuTotal = l.value("smsp__inst_executed.sum", -1.0);
  EXPECT_EQ(ncuTotal, truthTotal);
  for (const auto& [region, value] : truth)
    EXPECT_EQ(ncu["regions"][region]["value"]["Instructions Executed"].get<double>(), value)
        << region;
  std::cout << "total: truth " << truthTotal << ", CUPTI "
            << inst["evidence"]["kernel_total_inst_executed"] << ", ncu " << ncuTotal << "\n";
  std::error_code ec;
  fs::remove_all(*tmp, ec);
}

}  // namespace
}  // namespace argus::synthesis
