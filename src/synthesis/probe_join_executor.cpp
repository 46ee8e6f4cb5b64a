#include "argus/synthesis/probe_join_executor.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <set>
#include <span>

#include <fmt/format.h>

#include "argus/evidence/trace_bundle.h"
#include "argus/synthesis/probe_join.h"
#include "argus/trace/decode.h"

namespace argus::synthesis {
namespace {

using json = nlohmann::json;

/// The decoded launches of one kernel in a bundle; owns what TracedRun points to.
struct DecodedRuns {
  std::deque<trace::TraceMap> maps;
  std::deque<trace::DecodedTrace> traces;
  std::vector<TracedRun> runs;
  json run;  ///< The bundle's run record (exit code, output tails).
};

Result<std::unique_ptr<DecodedRuns>> decodeRuns(std::string_view bytes, const std::string& kernel,
                                                std::string_view what) {
  auto bundle = evidence::decodeBundle(bytes);
  if (!bundle) return std::unexpected(bundle.error());
  if (!bundle->traceMap.contains(kernel))
    return fail("synthesis",
                fmt::format("probe_join: the {} trace has no trace map for `{}`", what, kernel));
  auto out = std::make_unique<DecodedRuns>();
  out->run = bundle->run;
  auto map = trace::parseTraceMap(bundle->traceMap[kernel]);
  if (!map) return std::unexpected(map.error());
  out->maps.push_back(std::move(*map));
  for (const auto& launch : bundle->launches) {
    if (launch.buffer.empty() || launch.info.value("kernel", "") != kernel) continue;
    auto decoded = trace::decodeTrace(
        std::as_bytes(std::span(launch.buffer.data(), launch.buffer.size())), out->maps.front());
    if (!decoded) return std::unexpected(decoded.error());
    out->traces.push_back(std::move(*decoded));
    out->runs.push_back(TracedRun{&out->traces.back(), &out->maps.front()});
  }
  if (out->runs.empty())
    return fail("synthesis", fmt::format("probe_join: the {} trace holds no traced launch of `{}`",
                                         what, kernel));
  return out;
}

const runtime::Artifact* find(const std::map<std::string, runtime::Artifact>& evidence,
                              const std::string& key) {
  auto it = evidence.find(key);
  return it == evidence.end() ? nullptr : &it->second;
}

ProbeProcess probeProcess(const std::string& collect, const json& run) {
  ProbeProcess p{collect, run.value("device", ""), run.contains("gpu_turn"), {}, {0, 0}};
  if (const json& t = run.value("process_ns", json::array());
      t.is_array() && t.size() == 2 && t[0].is_number_unsigned() && t[1].is_number_unsigned())
    p.lifetime = {t[0].get<std::uint64_t>(), t[1].get<std::uint64_t>()};
  for (const auto& k : run.value("kernel_intervals", json::array()))
    if (k.is_array() && k.size() == 2 && k[0].is_number_unsigned() && k[1].is_number_unsigned())
      p.kernels.emplace_back(k[0].get<std::uint64_t>(), k[1].get<std::uint64_t>());
  for (const auto& e : run.value("turn_timeline", json::array())) {
    if (!e.is_object() || !e.value("event", json()).is_string() ||
        !e.value("cupti_ns", json()).is_number_unsigned() ||
        !e.value("epoch_ns", json()).is_number_integer())
      continue;
    const auto cupti = e["cupti_ns"].get<std::uint64_t>();
    p.turnEvents.emplace_back(e["event"].get<std::string>(), cupti);
    // The two clocks are read back to back: the first pair gives the offset.
    if (!p.epochMinusCupti && cupti != 0)
      p.epochMinusCupti = e["epoch_ns"].get<std::int64_t>() - static_cast<std::int64_t>(cupti);
  }
  std::stable_sort(p.turnEvents.begin(), p.turnEvents.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  return p;
}

}  // namespace

Result<json> joinProbes(const json& opSites, std::string_view referenceBundle,
                        const std::map<std::string, runtime::Artifact>& evidence) {
  if (!opSites.is_object() || !opSites.contains("probes") || !opSites.contains("kernel"))
    return fail("synthesis",
                "probe_join: op_sites lacks `kernel` or `probes` (is it discovery's "
                "output?)");
  const std::string kernel = opSites["kernel"].get<std::string>();
  auto reference = decodeRuns(referenceBundle, kernel, "reference");
  if (!reference) return std::unexpected(reference.error());
  const std::string referenceOut = (*reference)->run.value("stdout_tail", "");

  json ops = json::array(), failed = json::array();
  std::vector<ProbeProcess> processes;
  std::string unit;
  for (const json& probe : opSites["probes"]) {
    const std::string op = probe.value("op", "");
    const int64_t iteration = probe.value("iteration", int64_t{0});
    auto failure = [&](std::string error) {
      failed.push_back({{"op", op}, {"iteration", iteration}, {"error", std::move(error)}});
    };
    if (!probe.contains("collect") || probe["collect"].is_null()) continue;  // not collected
    const std::string variantTask = probe.value("variant", "");
    const std::string collectTask = probe["collect"].get<std::string>();
    const auto* description = find(evidence, variantTask + "/probe");
    const auto* bundle = find(evidence, collectTask + "/region_trace");
    if (description == nullptr || bundle == nullptr) {
      failure(fmt::format("no {} in the run's evidence", description == nullptr
                                                             ? variantTask + "/probe"
                                                             : collectTask + "/region_trace"));
      continue;
    }
    auto descriptionText = description->read();
    auto bundleBytes = bundle->read();
    if (!descriptionText || !bundleBytes) {
      failure("could not read the probe's evidence");
      continue;
    }
    json described = json::parse(*descriptionText, nullptr, false);
    auto runs = decodeRuns(*bundleBytes, kernel, "probe");
    if (!runs) {
      failure(runs.error().message);
      continue;
    }
    // Every probe that ran takes part in the isolation check, also one whose join fails.
    processes.push_back(probeProcess(collectTask, (*runs)->run));
    auto joined = probeJoin(ProbeJoinRequest{described, (*runs)->runs, (*reference)->runs});
    if (!joined) {
      failure(joined.error().message);
      continue;
    }
    json entry = std::move(*joined);
    unit = entry.value("unit", "ns");
    entry["kind"] = probe.value("kind", "");
    entry["launches"] = (*runs)->runs.size();
    if (probe.contains("instances")) entry["instances"] = probe["instances"];
    for (const char* key : {"shared_phase", "shared_phase_with", "note"})
      if (probe.contains(key)) entry[key] = probe[key];
    const std::string probeOut = (*runs)->run.value("stdout_tail", "");
    // The collection succeeds only when the program's own check (PASS against its CPU
    // reference) passed; equal output also shows the forced wait changed no result.
    entry["correctness"] = {{"check_passed", true},
                            {"exit_code", (*runs)->run.value("exit_code", -1)},
                            {"output_equal_to_reference", probeOut == referenceOut},
                            {"output", probeOut}};
    // The process's hardware work queues, the streams its kernels ran on, and what it did to the
    // L2 once it had the device's turn (backends/run.cpp).
    for (const char* key : {"work_queues", "kernel_streams", "gpu_turn_l2"})
      if ((*runs)->run.contains(key)) entry[key] = (*runs)->run[key];
    if (auto caution = workQueueCaution((*runs)->run)) entry["caution"] = std::move(*caution);
    entry["provenance"] = {{"variant_task", variantTask},
                           {"build_task", probe.value("build", "")},
                           {"collect_task", collectTask},
                           {"probe_trace", bundle->hash},
                           {"probe_description", description->hash}};
    ops.push_back(std::move(entry));
  }
  // Probes may share a device as concurrent processes that take turns (gpu_turn.h): a probe whose
  // kernels overlapped another's was not its own execution, so neither latency stands; nor does
  // one that ran beside another but cannot show it was alone (no turn taken or no kernel times).
  json isolation = probeIsolation(processes);
  std::map<std::string, std::string> notAlone;  // collect task -> why its latency does not stand
  const auto overlapError = [](const json& other) {
    return fmt::format(
        "its kernels overlapped those of `{}` on the same device, so the probe was not alone on "
        "the GPU; run the query again with --concurrent-probes 1",
        other.get<std::string>());
  };
  for (const auto& o : isolation["overlaps"]) {
    notAlone[o["first"]] = overlapError(o["second"]);
    notAlone[o["second"]] = overlapError(o["first"]);
  }
  for (const auto& u : isolation["unverified"])
    notAlone.emplace(u.get<std::string>(),
                     "it ran at the same time as other probes on its device but took no GPU turn "
                     "or recorded no kernel times, so it cannot show it ran alone (see the task "
                     "log's argus-inject lines); run the query again with --concurrent-probes 1");
  json kept = json::array();
  for (auto& entry : ops) {
    const std::string collect = entry["provenance"].value("collect_task", "");
    if (auto it = notAlone.find(collect); it != notAlone.end()) {
      failed.push_back({{"op", entry.value("op", "")},
                        {"iteration", entry.value("iteration", 0)},
                        {"error", it->second}});
    } else {
      kept.push_back(std::move(entry));
    }
  }
  ops = std::move(kept);
  return json{{"unit", unit.empty() ? "ns" : unit},
              {"qualification", "derived"},
              {"kernel", kernel},
              {"region", opSites.value("region", "")},
              {"ops", ops},
              {"failed", failed},
              {"not_probed", opSites.value("not_probed", json::array())},
              {"not_collected", opSites.value("not_collected", json::array())},
              {"reference_output", referenceOut},
              {"isolation", std::move(isolation)}};
}

Result<void> registerProbeJoinExecutor(runtime::ExecutorRegistry& registry) {
  return registry.add(runtime::ExecutorRecord{
      "probe_join",
      "joins forced-completion probe traces with the reference trace by iteration (op_latency)",
      std::make_shared<runtime::FunctionExecutor>(
          [](runtime::TaskContext& ctx) -> Result<runtime::TaskOutputs> {
            const runtime::Artifact* sites = nullptr;
            const runtime::Artifact* reference = nullptr;
            for (const auto& [name, artifact] : ctx.inputs) {
              if (name.ends_with(".op_sites")) sites = &artifact;
              if (name.ends_with(".evidence")) reference = &artifact;
            }
            if (sites == nullptr || reference == nullptr)
              return fail("synthesis",
                          fmt::format("probe_join: task `{}` needs inputs `*.op_sites` (discovery) "
                                      "and `*.evidence` (the reference trace)",
                                      ctx.task.id));
            auto sitesText = sites->read();
            if (!sitesText) return std::unexpected(sitesText.error());
            auto referenceBytes = reference->read();
            if (!referenceBytes) return std::unexpected(referenceBytes.error());
            json parsed = json::parse(*sitesText, nullptr, false);
            auto result = joinProbes(parsed, *referenceBytes, ctx.evidence);
            if (!result) return std::unexpected(result.error());
            runtime::TaskOutputs out;
            out.artifacts["op_latency"] = runtime::Artifact::fromData(result->dump());
            return out;
          })});
}

}  // namespace argus::synthesis
