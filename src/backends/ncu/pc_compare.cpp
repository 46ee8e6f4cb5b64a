// argus_pc_compare: cross-checks per-PC evidence of one kernel from two collectors on a GPU
// machine (scripts/gpu/sass-check.sh): the CUPTI SASS metrics collection directory against ncu's
// source page (per PC, must be equal) and raw page (kernel totals), and summarizes a PC sampling
// directory. Prints a text report, writes JSON with --out, exits 0 only when every compared PC and
// total agrees.
//
// usage: argus_pc_compare --cupti DIR --ncu-source CSV [--ncu-raw CSV] [--sampling DIR]
//                         [--kernel NAME] [--out FILE]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "argus/evidence/ncu_source.h"
#include "argus/evidence/pc_evidence.h"

namespace {

namespace fs = std::filesystem;
namespace be = argus::evidence;
using json = nlohmann::ordered_json;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const be::PcEvidence* pick(const std::vector<be::PcEvidence>& launches, const std::string& kernel) {
  for (const auto& e : launches) {
    if (kernel.empty() || e.kernel == kernel) return &e;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i + 1 < argc; i += 2) args[argv[i]] = argv[i + 1];
  if (!args.contains("--cupti") || !args.contains("--ncu-source")) {
    std::fprintf(stderr,
                 "usage: %s --cupti DIR --ncu-source CSV [--ncu-raw CSV] [--sampling DIR] "
                 "[--kernel NAME] [--out FILE]\n",
                 argv[0]);
    return 2;
  }
  const std::string kernel = args.contains("--kernel") ? args["--kernel"] : "";
  json report = {{"kernel", kernel}};
  bool ok = true;

  auto cupti = be::readPcEvidenceDir(args["--cupti"]);
  if (!cupti) {
    std::cerr << cupti.error().text() << "\n";
    return 1;
  }
  const be::PcEvidence* c = pick(*cupti, kernel);
  if (c == nullptr) {
    std::cerr << "no CUPTI launch of `" << kernel << "` in " << args["--cupti"] << "\n";
    return 1;
  }
  auto ncuLaunches = be::ncu::parseNcuSourceCsv(slurp(args["--ncu-source"]));
  if (!ncuLaunches) {
    std::cerr << ncuLaunches.error().text() << "\n";
    return 1;
  }
  const be::PcEvidence* n = pick(*ncuLaunches, kernel.empty() ? c->kernel : kernel);
  if (n == nullptr) {
    std::cerr << "no ncu launch of `" << c->kernel << "` (ncu launches: " << ncuLaunches->size()
              << ")\n";
    return 1;
  }
  std::cout << fmt::format(
      "CUPTI launch seq {} `{}`: {} functions, granularity {} x{}, "
      "duration {} ns\n",
      c->seq, c->kernel, c->functions.size(), c->granularity, c->instances,
      c->durationNs ? std::to_string(*c->durationNs) : "?");
  std::cout << fmt::format("ncu launch {} `{}`: {} functions, columns: {}\n", n->seq, n->kernel,
                           n->functions.size(), fmt::join(n->metrics, " | "));
  report["cupti"] = {{"seq", c->seq},
                     {"duration_ns", c->durationNs ? json(*c->durationNs) : json(nullptr)},
                     {"instances", c->instances},
                     {"functions", json::array()}};
  for (const auto& f : c->functions) {
    const bool cubin = !f.cubinFile.empty() && fs::exists(fs::path(args["--cupti"]) / f.cubinFile);
    report["cupti"]["functions"].push_back({{"name", f.name},
                                            {"cubin_crc", f.cubinCrc},
                                            {"cubin_saved", cubin},
                                            {"pcs", f.pcs.size()}});
    std::cout << fmt::format("  CUPTI function `{}`: {} PCs, cubin {} {}\n", f.name, f.pcs.size(),
                             f.cubinCrc, cubin ? "saved" : "NOT SAVED");
    ok = ok && cubin;
  }
  report["ncu_note"] = n->note;

  // Per PC: the kernel function of each side (ncu's table covers the launched function).
  const be::PcFunction* cf = c->function(c->kernel);
  const be::PcFunction* nf = n->functions.empty() ? nullptr : &n->functions.front();
  json metrics = json::array();
  for (const auto& metric : c->metrics) {
    const std::string column(be::ncu::sourceColumnFor(metric));
    if (column.empty() || cf == nullptr || nf == nullptr) continue;
    size_t equal = 0, compared = 0, onlyCupti = 0, onlyNcu = 0;
    std::uint64_t onlyNcuSum = 0;
    json mismatches = json::array();
    std::set<std::uint64_t> pcs;
    for (const auto& p : cf->pcs) pcs.insert(p.pc);
    for (const auto& p : nf->pcs) pcs.insert(p.pc);
    for (auto pc : pcs) {
      const be::PcRecord* a = cf->at(pc);
      const be::PcRecord* b = nf->at(pc);
      const auto av = a && a->metrics.contains(metric) ? a->metrics.at(metric).total : 0;
      const auto bv = b && b->metrics.contains(column) ? b->metrics.at(column).total : 0;
      if (a == nullptr) {
        ++onlyNcu;
        onlyNcuSum += bv;
        if (bv == 0) continue;
      } else if (b == nullptr) {
        ++onlyCupti;
        if (av == 0) continue;
      }
      ++compared;
      if (av == bv) {
        ++equal;
      } else if (mismatches.size() < 40) {
        mismatches.push_back(
            {{"pc", pc}, {"cupti", av}, {"ncu", bv}, {"sass", b ? b->sass : std::string()}});
      }
    }
    const bool same = equal == compared;
    ok = ok && same;
    std::cout << fmt::format(
        "{} vs ncu `{}` in `{}`: {}/{} PCs equal ({} PCs only in CUPTI, {} "
        "only in ncu with {} executions) -> {}\n",
        metric, column, cf->name, equal, compared, onlyCupti, onlyNcu, onlyNcuSum,
        same ? "EQUAL" : "DIFFERENT");
    for (const auto& m : mismatches) std::cout << "    mismatch " << m.dump() << "\n";
    metrics.push_back({{"cupti_metric", metric},
                       {"ncu_column", column},
                       {"compared_pcs", compared},
                       {"equal_pcs", equal},
                       {"only_cupti_pcs", onlyCupti},
                       {"only_ncu_pcs", onlyNcu},
                       {"only_ncu_sum", onlyNcuSum},
                       {"mismatches", mismatches}});
  }
  report["per_pc"] = metrics;

  // Totals: every function of the CUPTI launch vs. every row of ncu's table vs. ncu's raw page.
  json totals = json::array();
  std::vector<be::ncu::NcuRawLaunch> raw;
  if (args.contains("--ncu-raw")) {
    if (auto parsed = be::ncu::parseNcuRawCsv(slurp(args["--ncu-raw"]))) {
      raw = std::move(*parsed);
    } else {
      std::cout << "ncu raw page: " << parsed.error().text() << "\n";
      ok = false;
    }
  }
  const be::ncu::NcuRawLaunch* rawLaunch = nullptr;
  for (const auto& r : raw) {
    if (r.kernel == n->kernel) {
      rawLaunch = &r;
      break;
    }
  }
  const std::map<std::string, std::string> rawColumn = {
      {"smsp__sass_inst_executed", "smsp__inst_executed.sum"},
      {"smsp__sass_thread_inst_executed", "smsp__thread_inst_executed.sum"}};
  for (const auto& metric : c->metrics) {
    const std::string column(be::ncu::sourceColumnFor(metric));
    const std::uint64_t cuptiTotal = c->metricTotal(metric);
    const std::uint64_t ncuTotal = column.empty() ? 0 : n->metricTotal(column);
    json t = {
        {"cupti_metric", metric}, {"cupti_total", cuptiTotal}, {"ncu_source_total", ncuTotal}};
    bool same = column.empty() || cuptiTotal == ncuTotal;
    std::string rawText = "no raw value";
    if (rawLaunch != nullptr && rawColumn.contains(metric)) {
      if (auto v = rawLaunch->number(rawColumn.at(metric))) {
        t["ncu_raw_total"] = *v;
        rawText = fmt::format("ncu raw {} = {:.0f}", rawColumn.at(metric), *v);
        same = same && static_cast<double>(cuptiTotal) == *v;
      }
    }
    ok = ok && same;
    t["equal"] = same;
    totals.push_back(t);
    std::cout << fmt::format("total {}: CUPTI {} (all functions), ncu source table {}, {} -> {}\n",
                             metric, cuptiTotal, ncuTotal, rawText, same ? "EQUAL" : "DIFFERENT");
  }
  report["totals"] = totals;

  if (args.contains("--sampling")) {
    auto sampled = be::readPcEvidenceDir(args["--sampling"]);
    if (!sampled) {
      std::cout << "PC sampling: " << sampled.error().text() << "\n";
      ok = false;
    } else if (const be::PcEvidence* s = pick(*sampled, kernel)) {
      std::map<std::string, std::uint64_t> reasons;
      std::uint64_t samples = 0;
      size_t pcCount = 0;
      for (const auto& f : s->functions) {
        pcCount += f.pcs.size();
        for (const auto& p : f.pcs) {
          for (const auto& [reason, count] : p.stalls) {
            reasons[reason] += count;
            // `..._not_issued` reasons count a subset of the samples of their base reason.
            if (!reason.ends_with("_not_issued")) samples += count;
          }
        }
      }
      std::vector<std::pair<std::uint64_t, std::string>> top;
      for (const auto& [reason, count] : reasons) top.emplace_back(count, reason);
      std::sort(top.rbegin(), top.rend());
      json topJson = json::array();
      for (size_t i = 0; i < top.size() && i < 8; ++i) {
        topJson.push_back({{"reason", top[i].second}, {"samples", top[i].first}});
      }
      report["sampling"] = {{"seq", s->seq},
                            {"functions", s->functions.size()},
                            {"pcs", pcCount},
                            {"samples", samples},
                            {"cupti_total_samples", s->sampling.totalSamples},
                            {"dropped_samples", s->sampling.droppedSamples},
                            {"stall_reasons_known", s->stallReasons.size()},
                            {"duration_ns", s->durationNs ? json(*s->durationNs) : json(nullptr)},
                            {"top", topJson}};
      std::cout << fmt::format(
          "PC sampling launch seq {}: {} functions, {} PCs, {} samples over "
          "issued-or-not reasons "
          "(CUPTI total {}, dropped {}), {} stall reasons known\n",
          s->seq, s->functions.size(), pcCount, samples, s->sampling.totalSamples,
          s->sampling.droppedSamples, s->stallReasons.size());
      for (const auto& t : topJson) std::cout << "    " << t.dump() << "\n";
      ok = ok && samples > 0;
    } else {
      std::cout << "PC sampling: no launch of the kernel\n";
      ok = false;
    }
  }
  report["ok"] = ok;
  if (args.contains("--out")) std::ofstream(args["--out"]) << report.dump(1) << "\n";
  std::cout << (ok ? "PC evidence check: PASS\n" : "PC evidence check: FAIL\n");
  return ok ? 0 : 1;
}
