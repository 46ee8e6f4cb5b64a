// Planner speed: plan the seed's running example on the TMA GEMM and materialize probe branches
// for N discovered op-iteration candidates (default 10,000: 1,250 op sites x 8 iterations), add
// them to the plan and validate it, as the discovery Control task does at run time.
// Usage: argus_bench_planner [candidates]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "argus/planner/planner.h"
#include "argus/ptx/parser.h"
#include "argus/support/process.h"

using namespace argus;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const long candidates = argc > 1 ? std::atol(argv[1]) : 10000;
  const long iterationsPerOp = 8;
  auto text = readFile(std::string(ARGUS_TEST_DATA_DIR) + "/ptx/examples_tma_gemm.ptx");
  auto catalog = planner::RecipeCatalog::load(ARGUS_RECIPE_DIR);
  if (!text || !catalog) return 1;

  auto start = Clock::now();
  auto module = ptx::parseModule(*text, "examples_tma_gemm.ptx");
  auto regions = module ? ptx::analyzeRegions(*module) : std::unexpected(module.error());
  if (!regions) return 1;
  planner::ProgramContext program{"examples/tma_gemm/argus.yaml", "bench", std::move(*regions)};
  query::Query q;
  q.program = program.target;
  q.region = "mainloop";
  q.signals = {"duration", "inst_mix", "barrier_inst", "op_latency"};
  auto plan = planner::planQuery(q, *catalog, program);
  if (!plan) {
    std::fprintf(stderr, "%s\n", plan.error().text().c_str());
    return 1;
  }
  const double planMs = msSince(start);

  std::vector<planner::ProbeTarget> targets;
  std::vector<int64_t> iterations;
  for (long i = 0; i < iterationsPerOp; ++i) iterations.push_back(i);
  for (long op = 0; op * iterationsPerOp < candidates; ++op)
    targets.push_back(
        {"op.tma_load." + std::to_string(op), "tma_load", iterations, "", std::nullopt});

  start = Clock::now();
  auto branches = planner::probeBranches(*plan, targets);
  if (!branches) return 1;
  runtime::Plan all = plan->plan;
  for (auto& t : *branches)
    if (!all.add(std::move(t))) return 1;
  if (auto ok = all.validate(); !ok) {
    std::fprintf(stderr, "%s\n", ok.error().text().c_str());
    return 1;
  }
  const double expandMs = msSince(start);

  std::printf("%-44s %12s\n", "step", "time");
  std::printf("%-44s %9.2f ms\n", "parse PTX + regions + plan the query", planMs);
  std::printf("%-44s %9.2f ms\n",
              (std::to_string(targets.size() * iterations.size()) +
               " probe candidates: branches + add + validate")
                  .c_str(),
              expandMs);
  std::printf("%-44s %12zu\n", "tasks in the final plan", all.size());
  return 0;
}
