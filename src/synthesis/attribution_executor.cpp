// ownership_weights and pc_attribution: PC bundles -> attributed per-region signals (see
// argus/synthesis/attribution_executor.h).
#include "argus/synthesis/attribution_executor.h"

#include <algorithm>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "argus/evidence/ncu_source.h"
#include "argus/evidence/pc_bundle.h"
#include "argus/sass/pcmap.h"
#include "argus/synthesis/region_timing.h"

namespace argus::synthesis {
namespace {

using json = nlohmann::json;
const std::string kInst(kInstExecuted);
constexpr std::string_view kThreadInst = "smsp__sass_thread_inst_executed";

/// The region a PC of `kernel` belongs to when it has exactly one owner there.
std::string soleOwner(const sass::PcEntry& e, const std::string& kernel) {
  std::set<std::string> owners;
  for (const auto& o : e.owners)
    if (o.kernel == kernel)
      owners.insert(o.region.empty() ? std::string(kOutsideRegions) : o.region);
  if (owners.empty()) return std::string(kNoPtxLine);
  if (owners.size() > 1) return "(several owners)";
  return *owners.begin();
}

/// Per-PC values of every launch of a bundle: metric totals, stall samples (and, for PC sampling,
/// all samples of a PC under kInstExecuted, so that shares and ambiguity weigh by samples), and
/// for ncu its instruction column under kInstExecuted too.
std::vector<PcMetrics> pcValues(const evidence::PcBundle& bundle) {
  std::vector<PcMetrics> out;
  const std::string ncuInst(evidence::ncu::sourceColumnFor(kInstExecuted));
  for (const auto& launch : bundle.launches) {
    for (const auto& f : launch.functions) {
      for (const auto& pc : f.pcs) {
        PcMetrics m{f.name, pc.pc, {}};
        for (const auto& [name, metric] : pc.metrics) {
          // ncu's per-instruction averages ("Avg. Threads Executed") do not add up over PCs.
          if (name.starts_with("Avg. ")) continue;
          m.values[name] = static_cast<double>(metric.total);
        }
        double samples = 0.0;
        for (const auto& [reason, n] : pc.stalls) {
          m.values[reason] = static_cast<double>(n);
          samples += static_cast<double>(n);
        }
        if (bundle.collector == "cupti_pc_sampling") m.values[kInst] = samples;
        if (bundle.collector == "ncu" && m.values.contains(ncuInst))
          m.values[kInst] = m.values[ncuInst];
        out.push_back(std::move(m));
      }
    }
  }
  return out;
}

double valueOf(const json& j) {
  return j.is_object() && j.contains("value") && j["value"].is_number() ? j["value"].get<double>()
                                                                        : 0.0;
}

json evidenceSummary(const evidence::PcBundle& b) {
  json launches = json::array();
  uint64_t instTotal = 0;
  for (const auto& l : b.launches) {
    instTotal += l.metricTotal(kInst);
    json one = {{"seq", l.seq}, {"grid", l.grid}, {"block", l.block}};
    if (l.durationNs) one["duration_ns"] = *l.durationNs;
    if (b.collector == "cupti_pc_sampling")
      one["sampling"] = {{"total_samples", l.sampling.totalSamples},
                         {"dropped_samples", l.sampling.droppedSamples},
                         {"non_user_samples", l.sampling.nonUserSamples},
                         {"hardware_buffer_full", l.sampling.hardwareBufferFull}};
    if (!l.note.empty()) one["note"] = l.note;
    launches.push_back(one);
  }
  json s = {
      {"collector", b.collector},    {"variant", b.variant},
      {"kernel", b.kernel},          {"cubin", {{"hash", b.cubinHash}, {"bytes", b.cubinBytes}}},
      {"cubin_check", b.cubinCheck}, {"sass_check", b.sassCheck},
      {"launches", launches}};
  if (b.collector == "cupti_sass" || b.collector == "pc_mapping")
    s["kernel_total_inst_executed"] = instTotal;  // CUPTI's sum over every PC of the launches
  if (b.collector == "ncu") s["kernel_totals"] = b.totals;
  return s;
}

/// One argus.pc_signal/1 document: `pick` gives a region's (or file's) value from its attribution
/// entry, `weight` the number its share is taken of.
json signalDocument(const std::string& signal, const std::string& unit, const json& report,
                    const json& evidence, const std::function<json(const json&)>& pick,
                    const std::function<double(const json&)>& weight) {
  const double total = weight(report["total"]);
  auto rows = [&](const json& entries, bool ambiguity) {
    json out = json::object();
    for (const auto& [name, entry] : entries.items()) {
      const double w = weight(entry);
      json row = {{"value", pick(entry)},
                  {"share", total > 0.0 ? json(w / total) : json(nullptr)},
                  {"qualification", "attributed"}};
      if (ambiguity && entry.contains("ambiguity")) row["ambiguity"] = entry["ambiguity"];
      out[name] = row;
    }
    return out;
  };
  json mapping = report["mapping"];
  json mappingSummary = nullptr;
  if (mapping.is_object() && mapping.value("method", "") == "callee_copies")
    mappingSummary = {{"method", "callee_copies"},
                      {"copies", mapping["copies"]},
                      {"check", mapping["check"]},
                      {"kernel_total_inst_executed", mapping["kernel_total_inst_executed"]}};
  else if (!mapping.is_null())
    mappingSummary = {{"joined_pcs", mapping.value("joined_pcs", 0)},
                      {"mismatches", mapping["mismatches"].size()}};
  return json{{"schema", "argus.pc_signal/1"},
              {"signal", signal},
              {"unit", unit},
              {"qualification", "attributed"},
              {"kernel", report["kernel"]},
              {"exact", report["exact"]},
              {"estimate", report["estimate"]},
              {"estimate_reasons", report["estimate_reasons"]},
              {"mapping", mappingSummary},
              {"regions", rows(report["regions"], true)},
              {"source_files", rows(report["source_files"], false)},
              {"total", {{"value", pick(report["total"])}, {"qualification", "attributed"}}},
              {"ambiguous_pcs", report["ambiguous_pcs"].size()},
              {"evidence", evidence}};
}

Result<runtime::TaskOutputs> runOwnershipWeights(runtime::TaskContext& ctx) {
  auto bytes = ctx.readInput("evidence", "synthesis");
  if (!bytes) return std::unexpected(bytes.error());
  auto doc = mappingRunDocument(*bytes);
  if (!doc) return std::unexpected(doc.error());
  runtime::TaskOutputs out;
  const std::string name = ctx.task.outputs.empty() ? "pc_region_map" : ctx.task.outputs.front();
  out.artifacts[name] = runtime::Artifact::fromData(doc->dump());
  return out;
}

Result<runtime::TaskOutputs> runPcAttribution(runtime::TaskContext& ctx) {
  auto bytes = ctx.readInput("evidence", "synthesis");
  if (!bytes) return std::unexpected(bytes.error());
  std::optional<json> mapping;
  for (const auto& [name, artifact] : ctx.inputs) {
    if (!name.starts_with("pc_region_map")) continue;
    auto text = artifact.read();
    if (!text) return std::unexpected(text.error());
    mapping = json::parse(*text, nullptr, false);
    if (mapping->is_discarded())
      return fail("synthesis", fmt::format("input `{}` is not JSON", name));
  }
  const std::string recipe = ctx.task.config.value("recipe", std::string());
  auto docs = attributeBundle(*bytes, mapping, recipe);
  if (!docs) return std::unexpected(docs.error());
  if (auto trace = ctx.inputs.find("scope_trace"); trace != ctx.inputs.end()) {
    auto scope = query::parseScope(ctx.task.scope);
    if (!scope) return std::unexpected(scope.error());
    auto traceBytes = trace->second.read();
    if (!traceBytes) return std::unexpected(traceBytes.error());
    auto shares = scopeShares(*traceBytes, *scope);
    if (!shares) return std::unexpected(shares.error());
    for (auto& [signal, doc] : docs->items()) doc = scopeSignal(doc, *shares);
  }
  runtime::TaskOutputs out;
  for (const auto& [signal, doc] : docs->items())
    out.artifacts[signal] = runtime::Artifact::fromData(doc.dump());
  for (const auto& name : ctx.task.outputs)
    if (!out.artifacts.contains(name))
      return fail("synthesis",
                  fmt::format("pc_attribution: recipe `{}` made no `{}` document", recipe, name));
  return out;
}

/// `value` with every number times `f` (a ratio's numerator and denominator, not its value).
json scaled(const json& value, double f) {
  if (value.is_number()) return value.get<double>() * f;
  if (!value.is_object()) return value;
  json out = value;
  const bool ratio = value.contains("numerator") && value.contains("denominator");
  for (auto& [k, v] : out.items())
    if (!(ratio && k == "value") && k != "share" && k != "ambiguity") v = scaled(v, f);
  if (ratio && f == 0.0) out["value"] = nullptr;  // 0 / 0: no ratio in the scope
  return out;
}

/// a + b, number by number (objects of numbers merge).
json added(const json& a, const json& b) {
  if (a.is_null()) return b;
  if (a.is_number() && b.is_number()) return a.get<double>() + b.get<double>();
  if (!a.is_object() || !b.is_object()) return a;
  json out = a;
  for (const auto& [k, v] : b.items()) out[k] = out.contains(k) ? added(out[k], v) : v;
  return out;
}

}  // namespace

Result<ScopeShares> scopeShares(std::string_view traceBundle, const query::Scope& scope) {
  auto all = regionSamples(traceBundle, "", query::Scope{});
  if (!all) return std::unexpected(all.error());
  auto in = regionSamples(traceBundle, "", scope);
  if (!in) return std::unexpected(in.error());
  ScopeShares out;
  out.scope = scope.canonical();
  out.lostRecords = all->dropped + all->invalidRecords;
  out.bySm = scope.clause(query::Coordinate::Sm) != nullptr;
  for (const auto& [path, d] : all->durations) {
    auto selected = in->durations.find(path);
    out.occurrences[path] = {selected == in->durations.end() ? 0 : selected->second.size(),
                             d.size()};
  }
  return out;
}

json scopeSignal(const json& document, const ScopeShares& shares) {
  json out = document;
  out["scope"] = shares.scope;
  json regions = json::object();
  json notScoped = json::array();
  json split = json::array();
  json missing = json::array();
  json total = nullptr;
  double shareSum = 0.0;
  const json none = json::object();
  const json& rows =
      document.contains("regions") && document["regions"].is_object() ? document["regions"] : none;
  for (const auto& [name, row] : rows.items()) {
    auto occ = shares.occurrences.find(name);
    if (occ == shares.occurrences.end() || occ->second.second == 0) {
      // Code outside every region has no occurrence by nature; a region without one is a gap.
      if (name != kOutsideRegions && name != kNoPtxLine) missing.push_back(name);
      notScoped.push_back({{"region", name},
                           {"value", row.value("value", json())},
                           {"reason",
                            "no occurrence of it in the trace holds this code, so the "
                            "scope it ran in is unknown"}});
      continue;
    }
    const auto [inScope, all] = occ->second;
    const double f = static_cast<double>(inScope) / static_cast<double>(all);
    json r = scaled(row, f);
    r["scope_share"] = {{"in_scope", inScope}, {"occurrences", all}, {"fraction", f}};
    if (row.contains("share") && row["share"].is_number()) {
      r["share"] = row["share"].get<double>() * f;
      shareSum += r["share"].get<double>();
    }
    if (inScope != 0 && inScope != all) split.push_back(name);
    total = added(total, r.value("value", json()));
    regions[name] = std::move(r);
  }
  for (auto& [name, r] : regions.items())
    if (r.contains("share") && r["share"].is_number())
      r["share"] = shareSum > 0.0 ? json(r["share"].get<double>() / shareSum) : json(nullptr);
  out["regions"] = std::move(regions);
  out["total"] = {{"value", total}, {"qualification", "attributed"}};
  if (document.contains("source_files") && !document["source_files"].empty())
    notScoped.push_back({{"region", "(source files)"},
                         {"reason",
                          "a file's PCs run in regions in and out of the scope; the "
                          "per-file view is unscoped only"}});
  out["source_files"] = json::object();
  out["not_scoped"] = std::move(notScoped);
  out["scope_method"] = {
      {"method", "occurrence_share"},
      {"basis",
       "a region's executions happen inside its occurrences: its value in the scope is "
       "its value times the share of its occurrences (in the unscoped trace run) that "
       "the scope selects; exact where that share is 0 or 1, for a kernel that gives "
       "regions to warps alike in every run"}};
  json reasons = out.contains("estimate_reasons") && out["estimate_reasons"].is_array()
                     ? out["estimate_reasons"]
                     : json::array();
  if (!split.empty())
    reasons.push_back({{"reason", fmt::format("scope {}: the scope selects only some occurrences "
                                              "of {}; their share of occurrences stands for "
                                              "their share of executions",
                                              shares.scope, split.dump())},
                       {"regions", split}});
  if (!missing.empty())
    reasons.push_back({{"reason", fmt::format("scope {}: the trace has no occurrence of {}, "
                                              "which hold instructions; they are left out",
                                              shares.scope, missing.dump())},
                       {"regions", missing}});
  if (shares.lostRecords > 0)
    reasons.push_back({{"reason", fmt::format("scope {}: the trace lost {} records, so the "
                                              "shares are of the occurrences it kept",
                                              shares.scope, shares.lostRecords)}});
  if (shares.bySm)
    reasons.push_back({{"reason", fmt::format("scope {}: which SM runs which CTA differs from run "
                                              "to run; the shares are the trace run's",
                                              shares.scope)}});
  if (!reasons.empty()) {
    out["exact"] = false;
    out["estimate"] = true;
  }
  out["estimate_reasons"] = std::move(reasons);
  return out;
}

Result<json> mappingRunDocument(std::string_view bundleText) {
  auto bundle = evidence::decodePcBundle(bundleText);
  if (!bundle) return std::unexpected(bundle.error());
  auto map = sass::parsePcMap(bundle->disassembly, bundle->paintMap);
  if (!map) return std::unexpected(map.error());
  std::map<std::pair<std::string, uint64_t>, double> counts;
  for (const auto& m : pcValues(*bundle))
    if (auto v = m.values.find(kInst); v != m.values.end()) counts[{m.function, m.pc}] += v->second;
  // Per-region counts of a PTX-cloned mapping build itself (each of its PCs has one owner).
  std::map<std::string, double> perRegion;
  double total = 0.0;
  std::map<std::pair<std::string, uint64_t>, const sass::PcEntry*> byPc;
  for (const auto& e : *map) byPc[{e.function, e.pc}] = &e;
  json countsJson = json::array();
  for (const auto& [key, n] : counts) {
    countsJson.push_back({key.first, key.second, n});
    total += n;
    auto it = byPc.find(key);
    perRegion[it == byPc.end() ? std::string("(PC not in the map)")
                               : soleOwner(*it->second, bundle->kernel)] += n;
  }
  json document{{"schema", "argus.mapping_run/1"},
                {"kernel", bundle->kernel},
                {"count_metric", kInst},
                {"counts", countsJson},
                {"mapping_build_regions", perRegion},
                {"mapping_build_total", total},
                {"disassembly", bundle->disassembly},
                {"paint_map", bundle->paintMap},
                {"evidence", evidenceSummary(*bundle)}};
  // A build with callee copies keeps the reference's many-owner PCs (the copies have no line of
  // their own): its per-region view is the attribution's, not the map's.
  if (!bundle->calleeCopies.is_null()) {
    document["callee_copies"] = bundle->calleeCopies;
    document.erase("mapping_build_regions");
  }
  return document;
}

Result<MappingRun> mappingRunFromDocument(const json& document) {
  if (!document.is_object() || document.value("schema", "") != "argus.mapping_run/1")
    return fail("synthesis", "the pc_region_map input is not an argus.mapping_run/1 document");
  MappingRun run;
  auto map = sass::parsePcMap(document.value("disassembly", ""), document["paint_map"]);
  if (!map) return std::unexpected(map.error());
  run.pcmap = std::move(*map);
  run.countMetric = document.value("count_metric", kInst);
  for (const auto& c : document["counts"])
    run.counts.push_back(
        {c[0].get<std::string>(), c[1].get<uint64_t>(), {{run.countMetric, c[2].get<double>()}}});
  if (document.contains("callee_copies")) {
    auto copies = sass::parseCalleeCopies(document["callee_copies"]);
    if (!copies)
      return fail("synthesis", "the mapping run's callee copies: " + copies.error().message);
    const std::string kernel = document.value("kernel", "");
    run.copies = copies->contains(kernel) ? copies->at(kernel) : std::vector<sass::CalleeCopy>{};
    run.copyCheck = document["callee_copies"].value("check", json());
    const json& refused = document["callee_copies"].contains("refused")
                              ? document["callee_copies"]["refused"]
                              : json::object();
    if (refused.is_object() && refused.contains(kernel) && refused[kernel].is_string())
      run.copyRefusal = refused[kernel].get<std::string>();
  }
  return run;
}

Result<json> attributeBundle(std::string_view bundleText, const std::optional<json>& mapping,
                             const std::string& recipe) {
  auto bundle = evidence::decodePcBundle(bundleText);
  if (!bundle) return std::unexpected(bundle.error());
  auto reference = sass::parsePcMap(bundle->disassembly, bundle->paintMap);
  if (!reference) return std::unexpected(reference.error());
  std::optional<MappingRun> run;
  if (mapping) {
    auto parsed = mappingRunFromDocument(*mapping);
    if (!parsed) return std::unexpected(parsed.error());
    if (mapping->value("kernel", "") != bundle->kernel)
      return fail("synthesis",
                  fmt::format("the mapping run is of kernel `{}`, the evidence of `{}`",
                              mapping->value("kernel", ""), bundle->kernel));
    run = std::move(*parsed);
  }
  AttributionOptions options;
  options.kernel = bundle->kernel;
  if (bundle->collector == "cupti_sass")
    options.ratios.push_back({"threads_per_inst", std::string(kThreadInst), kInst});
  options.countsInstructions = bundle->collector == "cupti_sass" || bundle->collector == "ncu";
  auto report = attribute(*reference, pcValues(*bundle), run, options);
  if (!report) return std::unexpected(report.error());
  // The copies are of the cubin ptxas made for the mapping build; the PCs they name are the
  // reference's only if that cubin is the reference build's.
  if (mapping && mapping->contains("callee_copies")) {
    const json& base = (*mapping)["callee_copies"];
    const std::string hash = base.contains("reference_cubin") && base["reference_cubin"].is_object()
                                 ? base["reference_cubin"].value("hash", "")
                                 : "";
    if (!hash.empty() && hash != bundle->cubinHash) {
      (*report)["exact"] = false;
      (*report)["estimate"] = true;
      (*report)["estimate_reasons"].push_back(
          {{"reason", fmt::format("the mapping build's cubin before its callee copies ({}) is not "
                                  "the reference build's ({}), so the copies' PCs need not be "
                                  "its PCs",
                                  hash.substr(0, 12), bundle->cubinHash.substr(0, 12))},
           {"pcs", 0},
           {"inst_executed", 0}});
    }
  }
  json evidence = evidenceSummary(*bundle);
  if (mapping) evidence["mapping_run"] = (*mapping)["evidence"];
  const auto instOf = [](const json& e) { return valueOf(e["inst_executed"]); };
  json docs = json::object();
  if (recipe == "sass_counters" || (recipe.empty() && bundle->collector == "cupti_sass")) {
    docs["inst_executed"] = signalDocument(
        "inst_executed", "warp instructions", *report, evidence,
        [](const json& e) {
          json v = e["inst_executed"]["value"];
          return v;
        },
        instOf);
    // Beside the warp instructions: threads per instruction (a ratio lifted as its parts).
    for (const auto& [name, region] : (*report)["regions"].items())
      if (region["ratios"].contains("threads_per_inst"))
        docs["inst_executed"]["regions"][name]["threads_per_inst"] =
            region["ratios"]["threads_per_inst"];
    docs["inst_mix"] = signalDocument(
        "inst_mix", "warp instructions per class", *report, evidence,
        [](const json& e) {
          json mix = json::object();
          for (const auto& [cls, v] : e["inst_mix"].items()) mix[cls] = valueOf(v);
          return mix;
        },
        instOf);
    docs["barrier_inst"] = signalDocument(
        "barrier_inst", "warp instructions", *report, evidence,
        [](const json& e) { return e["barrier_inst"]["value"]; },
        [](const json& e) { return valueOf(e["barrier_inst"]); });
    docs["mem_inst"] = signalDocument(
        "mem_inst", "warp instructions", *report, evidence,
        [](const json& e) {
          json v = {{"all", valueOf(e["mem_inst"])}};
          for (const auto& [name, m] : e["metrics"].items())
            if (name.starts_with("smsp__sass_inst_executed_op_"))
              v[name.substr(std::string_view("smsp__sass_inst_executed_op_").size())] = valueOf(m);
          return v;
        },
        [](const json& e) { return valueOf(e["mem_inst"]); });
  } else if (recipe == "pc_sampling" ||
             (recipe.empty() && bundle->collector == "cupti_pc_sampling")) {
    docs["stall_reasons"] = signalDocument(
        "stall_reasons", "samples per reason", *report, evidence,
        [](const json& e) {
          json v = json::object();
          for (const auto& [name, m] : e["metrics"].items()) {
            if (name == kInst || valueOf(m) == 0.0) continue;
            std::string reason = name;
            if (auto at = reason.find("warps_issue_stalled_"); at != std::string::npos)
              reason = reason.substr(at + std::string_view("warps_issue_stalled_").size());
            v[reason] = valueOf(m);
          }
          return v;
        },
        instOf);
  } else if (recipe == "ncu_source_counters" || (recipe.empty() && bundle->collector == "ncu")) {
    docs["ncu_source_counters"] = signalDocument(
        "ncu_source_counters", "per-PC counters", *report, evidence,
        [](const json& e) {
          json v = json::object();
          for (const auto& [name, m] : e["metrics"].items())
            if (name != kInst) v[name] = valueOf(m);
          return v;
        },
        instOf);
  } else {
    return fail("synthesis",
                fmt::format("pc_attribution: no signal documents for recipe `{}` (collector `{}`)",
                            recipe, bundle->collector));
  }
  return docs;
}

void registerAttributionExecutors(runtime::ExecutorRegistry& registry) {
  (void)registry.add(runtime::ExecutorRecord{
      "ownership_weights",
      "the mapping run's per-PC counts n(r,p) with the map of its cubin (argus.mapping_run/1)",
      std::make_shared<runtime::FunctionExecutor>(
          [](runtime::TaskContext& ctx) { return runOwnershipWeights(ctx); })});
  (void)registry.add(runtime::ExecutorRecord{
      "pc_attribution",
      "lifts per-PC evidence to regions: m(r) = sum_p alpha(r,p) m(p), with ambiguity and a "
      "per-source-file view",
      std::make_shared<runtime::FunctionExecutor>(
          [](runtime::TaskContext& ctx) { return runPcAttribution(ctx); })});
}

}  // namespace argus::synthesis
