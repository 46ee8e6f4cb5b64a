#include "argus/backends/ptx_analysis.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "argus/analysis/discover.h"
#include "argus/evidence/trace_bundle.h"
#include "argus/passes/transforms.h"
#include "argus/probe/branches.h"
#include "argus/ptx/parser.h"
#include "argus/trace/decode.h"

namespace argus::backends {
namespace {

using json = nlohmann::json;

/// Most iterations one query may ask to probe without a reference run to bound them.
constexpr int64_t kMaxUnboundedIterations = 4096;

/// Occurrences per (region path, iteration) of `kernel` over every traced launch of a bundle.
struct ReferenceCounts {
  size_t launches = 0;
  std::map<std::string, std::map<int64_t, uint64_t>> byRegion;
};

Result<ReferenceCounts> countReference(std::string_view bundleBytes, const std::string& kernel) {
  auto bundle = evidence::decodeBundle(bundleBytes);
  if (!bundle) return std::unexpected(bundle.error());
  if (!bundle->traceMap.contains(kernel))
    return fail("ptx_analysis",
                fmt::format("the reference trace has no trace map for kernel `{}`", kernel));
  auto map = trace::parseTraceMap(bundle->traceMap[kernel]);
  if (!map) return std::unexpected(map.error());
  ReferenceCounts counts;
  for (const auto& launch : bundle->launches) {
    if (launch.buffer.empty() || launch.info.value("kernel", "") != kernel) continue;
    auto decoded = trace::decodeTrace(
        std::as_bytes(std::span(launch.buffer.data(), launch.buffer.size())), *map);
    if (!decoded) return std::unexpected(decoded.error());
    ++counts.launches;
    for (const auto& o : decoded->occurrences)
      if (o.iteration && o.region < map->regions.size())
        ++counts.byRegion[map->regions[o.region].path][static_cast<int64_t>(*o.iteration)];
  }
  if (counts.launches == 0)
    return fail("ptx_analysis",
                fmt::format("the reference trace holds no traced launch of `{}`", kernel));
  return counts;
}

/// Iterations the scope's `iter` clause names, when it has no open end worth expanding.
Result<std::vector<int64_t>> clauseIterations(const query::Clause& clause) {
  std::set<int64_t> out;
  for (const auto& r : clause.ranges) {
    if (r.hi - r.lo >= kMaxUnboundedIterations)
      return fail("ptx_analysis", fmt::format("iter={}..{} names more than {} iterations; narrow "
                                              "it, or let the reference run bound it",
                                              r.lo, r.hi, kMaxUnboundedIterations));
    for (int64_t i = r.lo; i <= r.hi; ++i) out.insert(i);
  }
  return std::vector<int64_t>(out.begin(), out.end());
}

/// Runs insert_forced_wait alone on a copy of the module: whether the pass accepts the site,
/// and its probe description when it does.
Result<json> tryProbe(const ptx::Module& module, const std::string& kernel,
                      const analysis::OpSite& site, int64_t iteration,
                      const std::string& sharedPhase) {
  ptx::Module copy = module;
  passes::TransformOptions options;
  options.kernel = kernel;
  options.config = {{"op", site.opId}, {"iteration", iteration}};
  if (!sharedPhase.empty()) options.config["shared_phase"] = sharedPhase;
  auto result = passes::applyTransforms(copy, {"insert_forced_wait"}, options);
  if (!result) return std::unexpected(result.error());
  return result->statistics.value("probe", json::object());
}

bool usesBarrier(const analysis::OpSite& site) {
  return site.completion.kind == analysis::Completion::Kind::Barrier;
}

}  // namespace

Result<ProbeDiscovery> discoverProbes(const ProbeDiscoveryInput& in) {
  auto module = ptx::parseModule(in.ptx, "program.ptx");
  if (!module) return std::unexpected(module.error());
  auto sites = analysis::discoverAsyncOps(*module, in.kernel, in.region);
  if (!sites) return std::unexpected(sites.error());
  if (!in.ops.empty()) {
    std::vector<std::string> known;
    for (const auto& s : *sites) known.push_back(s.opId);
    for (const auto& op : in.ops)
      if (std::find(known.begin(), known.end(), op) == known.end())
        return fail(
            "ptx_analysis",
            fmt::format("op `{}` is not an async op site of {}; its sites are: {}", op,
                        in.region.empty() ? "the kernel" : "region `" + in.region + "`",
                        known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
    std::erase_if(*sites, [&](const analysis::OpSite& s) {
      return std::find(in.ops.begin(), in.ops.end(), s.opId) == in.ops.end();
    });
  }

  std::optional<ReferenceCounts> reference;
  if (in.referenceBundle) {
    auto counts = countReference(*in.referenceBundle, in.kernel);
    if (!counts) return std::unexpected(counts.error());
    reference = std::move(*counts);
  }
  const query::Clause* iterClause = in.scope.clause(query::Coordinate::Iteration);
  std::optional<std::vector<int64_t>> requested;
  if (iterClause != nullptr) {
    auto iterations = clauseIterations(*iterClause);
    if (!iterations) return std::unexpected(iterations.error());
    requested = std::move(*iterations);
  }
  std::optional<int64_t> cta;
  if (const query::Clause* c = in.scope.clause(query::Coordinate::Cta);
      c != nullptr && c->ranges.size() == 1 && c->ranges[0].lo == c->ranges[0].hi)
    cta = c->ranges[0].lo;

  ProbeDiscovery out;
  json probes = json::array(), notProbed = json::array(), instances = json::object();
  std::vector<probe::ProbeTarget> targets;
  for (const analysis::OpSite& site : *sites) {
    const std::string kind(analysis::toString(site.kind));
    auto skip = [&](std::string reason) {
      notProbed.push_back(
          {{"op", site.opId}, {"kind", kind}, {"line", site.where.line}, {"reason", reason}});
    };
    if (site.regions.size() != 1) {
      skip(site.regions.empty() ? "the site is outside every region"
                                : "the site has several possible owning regions");
      continue;
    }
    if (!site.completion.resolved) {
      skip("completion not recovered: " + site.completion.reason);
      continue;
    }
    // The dynamic instances: occurrences of the owning region per iteration in the reference.
    // A site that follows its loop trip's iteration region (Triton's pipelined loads, in the
    // owner but after `mainloop/iteration` ends) has one instance per occurrence of that region:
    // insert_forced_wait says which region it takes the iteration from.
    std::vector<int64_t> iterations;
    std::map<int64_t, uint64_t> seen;
    if (reference) {
      auto occurrences = [&](const std::string& path) {
        auto it = reference->byRegion.find(path);
        return it == reference->byRegion.end() ? std::map<int64_t, uint64_t>{} : it->second;
      };
      seen = occurrences(site.regions.front());
      std::string counted = site.regions.front();
      if (seen.empty()) {
        auto trip = tryProbe(*module, site.kernel, site, 0, "");
        if (!trip && usesBarrier(site))
          trip = tryProbe(*module, site.kernel, site, 0, "wait_after_last");
        if (!trip) {  // e.g. a prologue load before the loop: no iteration to select it by
          skip("insert_forced_wait refuses it: " + trip.error().message);
          continue;
        }
        if (trip->value("iteration_source", "") == "loop_trip") {
          counted = (*trip)["iteration_region"].value("path", "");
          seen = occurrences(counted);
        }
      }
      json perIteration = json::object();
      for (const auto& [i, n] : seen) perIteration[std::to_string(i)] = n;
      instances[site.opId] = perIteration;
      if (seen.empty()) {
        skip(
            fmt::format("the reference run recorded no occurrence of `{}` with an iteration "
                        "coordinate (is it inside an ARGUS_REGION_ITER loop?)",
                        counted));
        continue;
      }
      if (requested) {
        for (int64_t i : *requested) {
          if (seen.contains(i)) {
            iterations.push_back(i);
          } else {
            notProbed.push_back(
                {{"op", site.opId},
                 {"kind", kind},
                 {"line", site.where.line},
                 {"iteration", i},
                 {"reason", "the reference run has no instance in this iteration"}});
          }
        }
      } else {
        for (const auto& [i, n] : seen) iterations.push_back(i);
      }
    } else if (requested) {
      iterations = *requested;  // unverified: said in the output
    } else {
      skip(
          "which iterations exist comes from the reference run, which did not run here; give "
          "--scope iter=A..B to build probe variants without it");
      continue;
    }
    if (iterations.empty()) continue;

    // Whether the pass accepts the site; a TMA load whose expect_tx phase later loads share is
    // probed with the wait after the last of them (its latency is then the whole phase's).
    std::string sharedPhase;
    auto description = tryProbe(*module, site.kernel, site, iterations.front(), "");
    std::string firstRefusal;
    if (!description && usesBarrier(site) &&
        description.error().message.find("shared_phase") != std::string::npos) {
      firstRefusal = description.error().message;
      description = tryProbe(*module, site.kernel, site, iterations.front(), "wait_after_last");
      if (description) sharedPhase = "wait_after_last";
    }
    if (!description) {
      skip("insert_forced_wait refuses it: " + description.error().message);
      continue;
    }
    json sharedWith = description->value("shared_phase_with", json());
    std::string note;
    if (!sharedPhase.empty())
      note = fmt::format(
          "its expect_tx phase is shared with {}; the wait follows the last of them, so this "
          "latency is the whole phase's (issue of this op to completion of every load of the "
          "phase)",
          sharedWith.is_null() ? "later loads" : sharedWith.dump());
    probe::ProbeTarget target{site.opId, kind, iterations, sharedPhase, cta};
    for (int64_t i : iterations) {
      const std::string key = fmt::format("probe[{}@{}]", site.opId, i);
      json probe{{"op", site.opId},
                 {"kind", kind},
                 {"line", site.where.line},
                 {"region", site.regions.front()},
                 {"iteration", i},
                 {"variant", "variant/" + key},
                 {"build", "build/" + key},
                 {"collect", in.collect ? json("collect/" + key) : json(nullptr)},
                 {"completion_method", description->value("completion_method", "")}};
      if (reference) probe["instances"] = seen.contains(i) ? seen.at(i) : 0;
      if (!sharedPhase.empty()) {
        probe["shared_phase"] = sharedPhase;
        probe["shared_phase_with"] = sharedWith;
        probe["note"] = note;
      }
      probes.push_back(std::move(probe));
    }
    targets.push_back(std::move(target));
  }

  auto branches = probe::probeBranches(probe::ProbeOrigin{.programVersion = in.programVersion,
                                                          .kernel = in.kernel,
                                                          .regionPath = in.region,
                                                          .scope = in.scope,
                                                          .ptxTask = in.ptxTask,
                                                          .tritonDumpTask = in.tritonDumpTask,
                                                          .traceConfig = in.traceConfig},
                                       targets);
  if (!branches) return std::unexpected(branches.error());
  json notCollected = json::array();
  for (auto& b : *branches) {
    if (b.type == runtime::TaskType::Collect && !in.collect) {
      notCollected.push_back({{"task", b.id}, {"reason", "needs a GPU, and " + in.noGpu}});
      continue;
    }
    out.branches.push_back(std::move(b));
  }
  json iterationsRequested =
      requested ? json(*requested) : json("every iteration in the reference");
  out.opSites = {{"kernel", in.kernel},
                 {"region", in.region},
                 {"sites", analysis::toJson(*sites)},
                 {"reference",
                  {{"available", reference.has_value()},
                   {"launches", reference ? reference->launches : 0},
                   {"instances", instances}}},
                 {"iterations_requested", iterationsRequested},
                 {"probes", probes},
                 {"not_probed", notProbed},
                 {"not_collected", notCollected}};
  if (!reference && requested)
    out.opSites["reference"]["note"] =
        "no reference run: the requested iterations are not checked against what the kernel "
        "executes";
  return out;
}

Result<void> registerPtxAnalysisExecutor(runtime::ExecutorRegistry& registry, bool collectProbes,
                                         std::string noGpu) {
  return registry.add(runtime::ExecutorRecord{
      "ptx_analysis",
      "discovers async op sites on PTX and materializes one forced-completion probe branch per "
      "selected op and iteration",
      std::make_shared<runtime::FunctionExecutor>(
          [collectProbes, noGpu](runtime::TaskContext& ctx) -> Result<runtime::TaskOutputs> {
            auto ptxInput = ctx.inputs.find("ptx");
            if (ptxInput == ctx.inputs.end())
              return fail("ptx_analysis", fmt::format("task `{}` has no `ptx` input", ctx.task.id));
            ProbeDiscoveryInput in;
            auto text = ptxInput->second.read();
            if (!text) return std::unexpected(text.error());
            in.ptx = std::move(*text);
            for (const auto& b : ctx.task.inputs)
              if (b.name == "ptx") in.ptxTask = b.task;
            in.programVersion = ctx.task.programVersion;
            in.kernel = ctx.task.config.value("kernel", "");
            if (auto ops = ctx.task.config.find("ops");
                ops != ctx.task.config.end() && ops->is_array())
              for (const auto& op : *ops) in.ops.push_back(op.get<std::string>());
            in.tritonDumpTask = ctx.task.config.value("triton_dump", "");
            if (auto trace = ctx.task.config.find("trace_config");
                trace != ctx.task.config.end() && trace->is_object())
              in.traceConfig = *trace;
            in.region = ctx.task.region;
            auto scope = query::parseScope(ctx.task.scope);
            if (!scope) return std::unexpected(scope.error());
            in.scope = std::move(*scope);
            in.collect = collectProbes;
            in.noGpu = noGpu;
            for (const auto& [name, artifact] : ctx.inputs) {
              if (!name.ends_with(".evidence")) continue;
              auto bytes = artifact.read();
              if (!bytes) return std::unexpected(bytes.error());
              in.referenceBundle = std::move(*bytes);
            }
            auto found = discoverProbes(in);
            if (!found) return std::unexpected(found.error());
            ctx.log +=
                fmt::format("ptx_analysis: {} probe branches, {} sites not probed\n",
                            found->opSites["probes"].size(), found->opSites["not_probed"].size());
            runtime::TaskOutputs out;
            out.artifacts["op_sites"] = runtime::Artifact::fromData(found->opSites.dump());
            out.branches = std::move(found->branches);
            return out;
          })});
}

}  // namespace argus::backends
