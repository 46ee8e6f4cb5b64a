// GPU check of issue 31's exactness claim where per-caller clones would compile differently
// (label `gpu`; exits 77 = skipped without a GPU). examples/specialized_callee calls one helper
// with constant trip counts 8, 3 and 5 from three regions and with 6 from inside another callee,
// so each caller runs different PCs of the helper's one body. `argus query ... inst_executed`
// must be exact, with its mapping run made on the reference's own code (callee copies), and give:
//   - per region, the ground truth by construction: the region's own kernel PCs in a run of the
//     reference build, plus the callee PCs' counts in a run of the same reference build with only
//     that region's calls enabled (`--only REGION`, a run-time mask: same machine code);
//   - a total equal to CUPTI's kernel total of the reference run and of the mapping run.
// Also checked: the masked runs' callee counts add up to the full run's, PC by PC, so the ground
// truth is complete. $ARGUS_PC_FIXTURE_OUT keeps the query's JSON and the truth there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "argus/evidence/pc_evidence.h"
#include "argus/passes/transforms.h"
#include "argus/program/build.h"
#include "argus/program/program.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/printer.h"
#include "argus/runtime/task.h"
#include "argus/sass/pcmap.h"
#include "argus/support/process.h"
#include "argus/synthesis/attribution.h"

namespace argus::synthesis {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kKernel = "specialized_callee";
const std::vector<std::string> kRegions = {"eight", "three", "five", "nested"};

bool haveGpu() {
  auto smi = runProcess(
      {"nvidia-smi", "-L"},
      {.workingDirectory = std::nullopt, .timeout = std::chrono::seconds(20), .environment = {}});
  return smi && smi->exitCode == 0 && smi->out.find("GPU ") != std::string::npos;
}

/// Runs `exe ARGS` under libargus_cupti_sass.so with smsp__sass_inst_executed and returns its
/// first launch's counts by offset in the kernel's text (callee-keyed records moved by their
/// body's start in `map`).
std::map<uint64_t, double> countsOf(const fs::path& exe, const std::vector<std::string>& args,
                                    const fs::path& dir, const std::vector<sass::PcEntry>& map) {
  fs::create_directories(dir);
  std::vector<std::string> argv = {exe.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto run = runProcess(argv, {.workingDirectory = std::nullopt,
                               .timeout = std::chrono::seconds(120),
                               .environment = {{"CUDA_INJECTION64_PATH", ARGUS_CUPTI_SASS_LIB},
                                               {"ARGUS_OUT_DIR", dir.string()},
                                               {"ARGUS_PC_KERNELS", kKernel},
                                               {"ARGUS_PC_MAX_LAUNCHES", "1"},
                                               {"CUDA_MODULE_LOADING", "EAGER"},
                                               {"ARGUS_SASS_METRICS", std::string(kInstExecuted)},
                                               {"ARGUS_SASS_GRANULARITY", "gpu"}}});
  std::map<uint64_t, double> out;
  EXPECT_TRUE(run && run->exitCode == 0) << (run ? run->out + run->err : run.error().text());
  auto evidence = evidence::readPcEvidenceDir(dir);
  EXPECT_TRUE(evidence.has_value()) << evidence.error().text();
  if (!evidence || evidence->empty()) return out;
  std::map<std::string, uint64_t> bodyStart;
  for (const auto& e : map)
    if (e.function == kKernel && !bodyStart.contains(e.body)) bodyStart[e.body] = e.pc;
  for (const auto& f : evidence->front().functions) {
    std::string body = f.name;
    if (body.starts_with('$') && body.find('$', 1) != std::string::npos)
      body = body.substr(body.find('$', 1) + 1);
    const uint64_t start = f.name == kKernel ? 0 : bodyStart.at(body);
    for (const auto& pc : f.pcs)
      if (auto m = pc.metrics.find(std::string(kInstExecuted)); m != pc.metrics.end())
        out[start + pc.pc] += static_cast<double>(m->second.total);
  }
  return out;
}

TEST(SpecializedCalleeOnGpu, CopiesGiveEveryRegionTheReferenceBuildsOwnCounts) {
  if (!haveGpu()) {
    std::cout << "no GPU (nvidia-smi lists none)\n";
    std::exit(77);
  }
  const fs::path root = ARGUS_SOURCE_DIR;
  const fs::path spec = root / "examples/specialized_callee/argus.yaml";
  auto tmp = makeTempDir("argus-copies-gpu");
  ASSERT_TRUE(tmp.has_value());
  auto query = runProcess(
      {ARGUS_BIN, "query", "--program", spec.string(), "--kernel", kKernel, "--signals",
       "inst_executed", "--json", "--workspace", (*tmp / "ws").string()},
      {.workingDirectory = root, .timeout = std::chrono::seconds(300), .environment = {}});
  ASSERT_TRUE(query.has_value()) << query.error().text();
  ASSERT_EQ(query->exitCode, 0) << query->out << query->err;
  const json report = json::parse(query->out);
  const json& inst = report["signals"]["inst_executed"]["value"];
  ASSERT_EQ(inst.value("schema", ""), "argus.pc_signal/1") << report.dump(2);
  EXPECT_TRUE(inst["exact"].get<bool>()) << inst["estimate_reasons"].dump();
  ASSERT_EQ(inst["mapping"].value("method", ""), "callee_copies") << inst["mapping"].dump();
  EXPECT_TRUE(inst["mapping"]["check"]["equal"].get<bool>()) << inst["mapping"].dump();

  // The reference build, rebuilt here the way the query built it.
  auto loaded = program::loadProgramSpec(spec);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().text();
  auto ptx = program::frontEndPtx(*loaded);
  ASSERT_TRUE(ptx.has_value()) << ptx.error().text();
  auto module = ptx::parseModule(*ptx, "specialized_callee.ptx");
  ASSERT_TRUE(module.has_value());
  auto painted = passes::applyTransforms(*module, {"paint_ptx"}, {.scope = {}, .kernel = kKernel});
  ASSERT_TRUE(painted.has_value()) << painted.error().text();
  auto built = program::buildWithPtx(*loaded, ptx::printModule(*module), *tmp / "reference");
  ASSERT_TRUE(built.has_value()) << built.error().text();
  auto cubinBytes = readFile(built->cubin);
  ASSERT_TRUE(cubinBytes.has_value());
  EXPECT_EQ(inst["evidence"]["cubin"]["hash"].get<std::string>(), runtime::contentHash(*cubinBytes))
      << "the query measured another cubin than this rebuild";
  auto map = sass::readPcMap(built->cubin, painted->paintMap);
  ASSERT_TRUE(map.has_value()) << map.error().text();
  std::map<uint64_t, const sass::PcEntry*> at;
  for (const auto& e : *map)
    if (e.function == kKernel) at[e.pc] = &e;

  // Ground truth: the kernel's own PCs from the full run, the callees' from one run per region.
  const auto full = countsOf(built->executable, {}, *tmp / "full", *map);
  std::map<std::string, double> truth;
  double fullTotal = 0.0;
  std::map<uint64_t, double> calleeSum;
  for (const auto& [pc, n] : full) {
    fullTotal += n;
    ASSERT_TRUE(at.contains(pc)) << pc;
    const sass::PcEntry& e = *at.at(pc);
    if (e.body != e.function) continue;
    ASSERT_LE(e.owners.size(), 1u) << "kernel PC " << pc << " has several owners";
    const std::string owner = e.owners.empty()                  ? std::string(kNoPtxLine)
                              : e.owners.front().region.empty() ? std::string(kOutsideRegions)
                                                                : e.owners.front().region;
    truth[owner] += n;
  }
  for (const auto& region : kRegions) {
    for (const auto& [pc, n] :
         countsOf(built->executable, {"--only", region}, *tmp / region, *map)) {
      const sass::PcEntry& e = *at.at(pc);
      if (e.body == e.function) continue;
      truth[region] += n;
      calleeSum[pc] += n;
    }
  }
  for (const auto& [pc, n] : full) {
    if (at.at(pc)->body != at.at(pc)->function) {
      EXPECT_EQ(calleeSum[pc], n) << "callee PC " << pc << ": the masked runs do not add up";
    }
  }

  json out = {{"truth", truth}, {"attributed", json::object()}};
  for (const auto& [region, value] : truth) {
    ASSERT_TRUE(inst["regions"].contains(region)) << region << " in " << inst["regions"].dump();
    const double attributed = inst["regions"][region]["value"].get<double>();
    EXPECT_EQ(attributed, value) << region;
    out["attributed"][region] = attributed;
    std::cout << "region " << region << ": truth " << value << ", attributed " << attributed
              << "\n";
  }
  EXPECT_EQ(inst["total"]["value"].get<double>(), fullTotal);
  EXPECT_EQ(inst["evidence"]["kernel_total_inst_executed"].get<double>(), fullTotal);
  const json& totals = inst["mapping"]["kernel_total_inst_executed"];
  EXPECT_EQ(totals["mapping"].get<double>(), fullTotal) << totals.dump();
  EXPECT_TRUE(totals["equal"].get<bool>()) << totals.dump();
  std::cout << "total: truth " << fullTotal << ", mapping run " << totals["mapping"] << "\n";
  if (const char* keep = std::getenv("ARGUS_PC_FIXTURE_OUT"); keep && *keep) {
    fs::create_directories(keep);
    (void)writeFile(fs::path(keep) / "specialized_callee.query.json", report.dump(2));
    (void)writeFile(fs::path(keep) / "specialized_callee.truth.json", out.dump(2));
  }
  std::error_code ec;
  fs::remove_all(*tmp, ec);
}

}  // namespace
}  // namespace argus::synthesis
