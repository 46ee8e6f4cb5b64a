// argus_overlap: the issue-9 client on evidence Argus collected. For each GEMM shape it takes
// T_main / T_epilogue per tile from an `argus query --signals duration --json` report of
// examples/tma_gemm at that shape, t_comm per chunk from a system trace of the communication
// (bench/overlap/nccl_pipeline.cu's NCCL all-gather on W GPUs, or pipeline.cu's single-GPU
// stand-in), evaluates the overlap model over
// the (S, R, P) grid, ranks the candidates and, given measurements of the pipeline (pipeline.cu
// `grid`), validates the top few against them, against the exhaustive best and against a
// baseline (torch_baseline.py: all-gather, then one matmul).
//
// argus_overlap --trace T.jsonl --regions M,N,K=R.json [--regions ...] [--grid G.jsonl]
//               [--source nccl|copy_kernel] [--ranks W] [--comm-sms 2,4,8]
//               [--alone M,N,K=R1.json] [--baseline B.jsonl] [--sms 132] [--top 3]
//               [--json OUT]
// --comm-report Q.json instead of --trace: the communication groups from an `argus query --json
// --signals comm_chunk_time,launch_overhead` report (the system_trace recipe on nccl_comm.yaml).
// --alone gives tile times at one CTA per SM (a report of a GEMM whose tiles fit one wave); the
// grid file's `occupancy` line gives CTAs per SM. With both, t_comp follows co-residency.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "argus/evidence/system_trace.h"
#include "argus/synthesis/comm_signals.h"
#include "argus/synthesis/overlap_model.h"

namespace {

using json = nlohmann::json;
using namespace argus;

struct Shape {
  int64_t m, n, k;
  std::string regions;
  std::string alone;  ///< report of a one-wave GEMM with this N and K (one CTA per SM)
};

int usage(const char* why) {
  std::fprintf(stderr,
               "argus_overlap: %s\nusage: argus_overlap --trace T.jsonl --regions M,N,K=R.json "
               "[--regions ...] [--grid G.jsonl] [--source nccl|copy_kernel] [--ranks W] "
               "[--comm-sms 8,16,32] [--alone M,N,K=R1.json] [--baseline B.jsonl] [--sms 132] "
               "[--top 3] [--json OUT]\n"
               "  --comm-report Q.json: t_comm from an argus query report instead of --trace\n"
               "  --source nccl --ranks W: the trace holds NCCL all-gathers over W GPUs\n"
               "  (nccl_pipeline.cu); copy_kernel: pipeline.cu's one-GPU stand-in\n",
               why);
  return 2;
}

/// T_main and T_epilogue per tile from a duration report (consumer warps' mainloop occurrences
/// are one k-step each).
Result<synthesis::TileTiming> tileTiming(const std::string& file, int64_t k) {
  std::ifstream in(file);
  json report = json::parse(in, nullptr, false);
  if (report.is_discarded())
    return fail("overlap", fmt::format("{}: not JSON (an argus query --json report?)", file));
  const json* value = nullptr;
  try {
    value = &report.at("signals").at("duration").at("value");
  } catch (const json::exception&) {
    return fail("overlap",
                fmt::format("{}: no signals.duration.value; was `duration` queried?", file));
  }
  if (value->value("unit", "ns") != "ns")
    return fail("overlap",
                fmt::format("{}: region times are in {}, not ns", file, value->value("unit", "")));
  synthesis::TileTiming t;
  bool main = false, epi = false;
  for (const auto& r : value->at("regions")) {
    const std::string path = r.value("path", "");
    const json& d = r.at("duration");
    double mean = d.value("mean", 0.0);
    if (r.contains("by_role") && r["by_role"].contains("consumer"))
      mean = r["by_role"]["consumer"].value("mean", mean);
    if (path == "mainloop") {
      t.mainNs = mean * static_cast<double>(k / 64);
      main = true;
    } else if (path == "epilogue") {
      t.epilogueNs = mean;
      epi = true;
    }
  }
  if (!main || !epi)
    return fail("overlap", fmt::format("{}: needs regions mainloop and epilogue", file));
  return t;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> idx(v.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size(); ++i) r[idx[i]] = static_cast<double>(i);
    return r;
  };
  auto ra = ranks(a), rb = ranks(b);
  double d2 = 0;
  for (size_t i = 0; i < ra.size(); ++i) d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  const double n = static_cast<double>(ra.size());
  return n > 1 ? 1.0 - 6.0 * d2 / (n * (n * n - 1.0)) : 1.0;
}

/// A whole decimal integer, or nothing.
std::optional<int> toInt(const std::string& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  std::string traceFile, commReport, gridFile, jsonOut;
  std::vector<Shape> shapes;
  std::string source = "copy_kernel", baselineFile;
  std::vector<int> commSms{8, 16, 32, 64};
  int sms = 132, top = 3, ranks = 1, ctasPerSm = 1;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::string> alone;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage(("missing value after " + a).c_str());
    const std::string v = argv[++i];
    if (a == "--trace") {
      traceFile = v;
    } else if (a == "--comm-report") {
      commReport = v;
    } else if (a == "--grid") {
      gridFile = v;
    } else if (a == "--json") {
      jsonOut = v;
    } else if (a == "--sms") {
      const auto n = toInt(v);
      if (!n || *n < 1) return usage("--sms wants a positive count");
      sms = *n;
    } else if (a == "--top") {
      const auto n = toInt(v);
      if (!n || *n < 1) return usage("--top wants a positive count");
      top = *n;
    } else if (a == "--source") {
      source = v;
      if (source != "nccl" && source != "copy_kernel")
        return usage("--source is nccl or copy_kernel");
    } else if (a == "--ranks") {
      const auto n = toInt(v);
      if (!n || *n < 1) return usage("--ranks wants a positive count");
      ranks = *n;
    } else if (a == "--baseline") {
      baselineFile = v;
    } else if (a == "--comm-sms") {
      commSms.clear();
      std::stringstream list(v);
      for (std::string item; std::getline(list, item, ',');) {
        const auto n = toInt(item);
        if (!n || *n < 0) return usage("--comm-sms wants counts like 2,4,8");
        commSms.push_back(*n);
      }
    } else if (a == "--regions" || a == "--alone") {
      Shape s{};
      if (std::sscanf(v.c_str(), "%ld,%ld,%ld=", &s.m, &s.n, &s.k) != 3 ||
          v.find('=') == std::string::npos)
        return usage((a + " wants M,N,K=FILE").c_str());
      const std::string file = v.substr(v.find('=') + 1);
      if (a == "--regions") {
        s.regions = file;
        shapes.push_back(s);
      } else {
        alone[{s.m, s.n, s.k}] = file;
      }
    } else {
      return usage(("unknown option " + a).c_str());
    }
  }
  if ((traceFile.empty() == commReport.empty()) || shapes.empty())
    return usage("one of --trace and --comm-report, and --regions, are required");
  synthesis::CommSignals signals;
  if (!traceFile.empty()) {
    auto trace = evidence::readSystemTrace(traceFile);
    if (!trace) {
      std::fprintf(stderr, "%s\n", trace.error().message.c_str());
      return 1;
    }
    signals = synthesis::commSignals(*trace);
  } else {
    std::ifstream in(commReport);
    json report = json::parse(in, nullptr, false);
    const auto value = [&](const char* name) -> json {
      if (report.is_discarded() || !report.contains("signals") || !report["signals"].contains(name))
        return json();
      return report["signals"][name].value("value", json());
    };
    auto groups = synthesis::commGroupsFromJson(value("comm_chunk_time"), value("launch_overhead"));
    if (!groups) {
      std::fprintf(stderr, "%s: %s\n", commReport.c_str(), groups.error().message.c_str());
      return 1;
    }
    signals.groups = std::move(*groups);
  }
  const synthesis::CommTable table(signals.groups, source);
  const bool allGather = source == "nccl";
  if (allGather && ranks < 2) return usage("--source nccl needs --ranks W (2 or more)");
  // An all-gather over W ranks brings (W-1)/W of each chunk to a rank; the stand-in copies it all.
  const double gather = allGather ? static_cast<double>(ranks - 1) / ranks : 1.0;

  // Measurements of the pipeline, keyed (M, N, K, S, R, P), and of one chunk's GEMM alone.
  std::map<std::tuple<int64_t, int64_t, int64_t, int, int, int>, double> measured;
  std::map<std::tuple<int64_t, int64_t, int64_t, int>, double> gemmAlone;
  std::map<std::tuple<int64_t, int64_t, int64_t>, json> baseline;
  for (const auto& file : {gridFile, baselineFile}) {
    if (file.empty()) continue;
    std::ifstream in(file);
    if (!in) {
      std::fprintf(stderr, "argus_overlap: cannot read %s\n", file.c_str());
      return 1;
    }
    std::string line;
    while (std::getline(in, line)) {
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      const auto key = std::tuple{j.value("M", int64_t{0}), j.value("N", int64_t{0}),
                                  j.value("K", int64_t{0}), j.value("S", 0)};
      if (j.value("kind", "") == "occupancy") {
        ctasPerSm = std::max(1, j.value("ctas_per_sm", 1));
      } else if (j.value("kind", "") == "torch_baseline") {
        baseline[{std::get<0>(key), std::get<1>(key), std::get<2>(key)}] = j;
      } else if (j.value("kind", "") == "gemm_chunk") {
        gemmAlone[key] = j.value("median_ns", 0.0);
      } else if (j.value("kind", "") == "pipeline") {
        measured[{std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key),
                  j.value("R", 0), j.value("P", 1)}] = j.value("median_ns", 0.0);
      }
    }
  }

  const std::string what =
      allGather ? fmt::format("NCCL all-gather over {} GPUs, R = NCCL CTAs", ranks)
                : "ONE GPU, stand-in communication (D2D copy kernel with R CTAs), NOT an "
                  "all-gather";
  json out = {{"what", "issue-9 overlap client: " + what},
              {"ranks", ranks},
              {"source", source},
              {"trace", traceFile.empty() ? commReport : traceFile},
              {"comm", synthesis::commSignalsJson(signals)},
              {"shapes", json::array()}};
  std::printf("%s\n", what.c_str());
  int status = 0;
  for (const auto& s : shapes) {
    auto tile = tileTiming(s.regions, s.k);
    if (!tile) {
      std::fprintf(stderr, "%s\n", tile.error().message.c_str());
      status = 1;
      continue;
    }
    synthesis::GemmProblem problem{.m = s.m, .n = s.n, .k = s.k, .tileM = 64, .tileN = 128};
    problem.totalSms = sms;
    problem.ctasPerSm = ctasPerSm;
    // The region run computed the whole shape on every SM: that many CTAs shared an SM.
    const int64_t tiles = (s.m / problem.tileM) * (s.n / problem.tileN);
    tile->coResident = static_cast<int>(std::min<int64_t>(ctasPerSm, (tiles + sms - 1) / sms));
    if (auto it = alone.find({s.m, s.n, s.k}); it != alone.end()) {
      auto one = tileTiming(it->second, s.k);
      if (!one) {
        std::fprintf(stderr, "%s\n", one.error().message.c_str());
        status = 1;
        continue;
      }
      tile->aloneNs = one->mainNs + one->epilogueNs;
    }
    problem.gatherFraction = gather;
    synthesis::OverlapOptions options;
    options.commSms = commSms;
    options.stepsPerBarrier = {1, 2};
    auto ranked = synthesis::rankOverlap(problem, *tile, table, options);
    if (!ranked) {
      std::fprintf(stderr, "%s\n", ranked.error().message.c_str());
      status = 1;
      continue;
    }
    for (auto& c : *ranked)
      if (auto it = measured.find({s.m, s.n, s.k, c.s, c.r, c.p}); it != measured.end())
        c.measuredNs = it->second;
    std::printf(
        "\nGEMM %ldx%ldx%ld  T_main/tile %.0f ns  T_epilogue/tile %.0f ns (%d CTAs/SM); "
        "tile alone %.0f ns; occupancy %d CTAs/SM\n",
        s.m, s.n, s.k, tile->mainNs, tile->epilogueNs, tile->coResident, tile->aloneNs, ctasPerSm);
    std::printf("%4s %3s %3s %2s %10s %10s %10s %12s %12s\n", "rank", "S", "R", "P", "chunk_KiB",
                "t_comm", "t_comp", "predicted", "measured");
    json shape = {{"M", s.m},
                  {"N", s.n},
                  {"K", s.k},
                  {"t_main_tile_ns", tile->mainNs},
                  {"t_epilogue_tile_ns", tile->epilogueNs},
                  {"t_tile_alone_ns", tile->aloneNs},
                  {"co_resident", tile->coResident},
                  {"ctas_per_sm", ctasPerSm},
                  {"candidates", json::array()}};
    std::vector<double> predicted, actual;
    const synthesis::OverlapCandidate* bestMeasured = nullptr;
    for (size_t i = 0; i < ranked->size(); ++i) {
      const auto& c = (*ranked)[i];
      std::printf("%4zu %3d %3d %2d %10.0f %10.0f %10.0f %12.0f %12s\n", i + 1, c.s, c.r, c.p,
                  static_cast<double>(c.chunkBytes) / 1024.0, c.tCommNs, c.tCompNs, c.predictedNs,
                  c.measuredNs ? fmt::format("{:.0f}", *c.measuredNs).c_str() : "-");
      shape["candidates"].push_back(synthesis::candidateJson(c));
      if (c.measuredNs) {
        predicted.push_back(c.predictedNs);
        actual.push_back(*c.measuredNs);
        if (bestMeasured == nullptr || *c.measuredNs < *bestMeasured->measuredNs) bestMeasured = &c;
      }
    }
    json compute = json::array();
    for (int split : options.splits)
      if (auto it = gemmAlone.find({s.m, s.n, s.k, split}); it != gemmAlone.end())
        compute.push_back({{"S", split},
                           {"t_comp_model_ns", synthesis::chunkComputeNs(problem, *tile, split, 0)},
                           {"gemm_chunk_measured_ns", it->second}});
    shape["t_comp_check"] = compute;
    if (bestMeasured != nullptr) {
      double bestTop = 1e300;
      for (int i = 0; i < top && i < static_cast<int>(ranked->size()); ++i)
        if ((*ranked)[i].measuredNs) bestTop = std::min(bestTop, *(*ranked)[i].measuredNs);
      // Serial: one all-gather, then the GEMM (S = 1) at the fastest R measured.
      double serial = 0;
      for (int r : commSms)
        if (auto it = measured.find({s.m, s.n, s.k, 1, r, 1}); it != measured.end())
          serial = serial > 0 ? std::min(serial, it->second) : it->second;
      const auto* pick = &ranked->front();
      json validation = {
          {"top", top},
          {"model_pick", {{"S", pick->s}, {"R", pick->r}, {"P", pick->p}}},
          {"model_pick_measured_ns", pick->measuredNs ? json(*pick->measuredNs) : json()},
          {"best_of_top_measured_ns", bestTop},
          {"exhaustive_best_measured_ns", *bestMeasured->measuredNs},
          {"exhaustive_best",
           {{"S", bestMeasured->s}, {"R", bestMeasured->r}, {"P", bestMeasured->p}}},
          {"top_vs_exhaustive_gap", bestTop / *bestMeasured->measuredNs - 1.0},
          {"spearman_predicted_vs_measured", spearman(predicted, actual)},
          {"serial_S1_measured_ns", serial},
          {"gain_over_serial", serial > 0 ? serial / bestTop - 1.0 : 0.0}};
      std::printf(
          "top-%d best measured %.0f ns; exhaustive best %.0f ns (S=%d R=%d P=%d): gap "
          "%.1f %%; Spearman(pred, meas) %.2f; vs serial S=1 %.0f ns: %+.1f %%\n",
          top, bestTop, *bestMeasured->measuredNs, bestMeasured->s, bestMeasured->r,
          bestMeasured->p, 100.0 * (bestTop / *bestMeasured->measuredNs - 1.0),
          spearman(predicted, actual), serial, serial > 0 ? 100.0 * (serial / bestTop - 1.0) : 0.0);
      if (auto it = baseline.find({s.m, s.n, s.k}); it != baseline.end()) {
        const double torch = it->second.value("median_ns", 0.0);
        validation["torch_baseline_ns"] = torch;
        validation["torch_allgather_ns"] = it->second.value("allgather_ns", 0.0);
        validation["torch_matmul_ns"] = it->second.value("matmul_ns", 0.0);
        validation["gain_over_torch"] = torch / bestTop - 1.0;
        std::printf(
            "PyTorch all-gather then matmul: %.0f ns (all-gather %.0f, matmul %.0f); "
            "model's top-%d best vs it: %+.1f %% throughput\n",
            torch, it->second.value("allgather_ns", 0.0), it->second.value("matmul_ns", 0.0), top,
            100.0 * (torch / bestTop - 1.0));
      }
      shape["validation"] = validation;
    }
    out["shapes"].push_back(shape);
  }
  if (!jsonOut.empty()) std::ofstream(jsonOut) << out.dump(2) << "\n";
  return status;
}
