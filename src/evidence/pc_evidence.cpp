// argus_pc_evidence 1: writer and reader (format in argus/evidence/pc_evidence.h). Kept free of
// fmt so that the injection library can link it without more dependencies.
#include "argus/evidence/pc_evidence.h"
#include "argus/support/json_number.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace argus::evidence {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kComponent = "pc_evidence";

Result<std::string> slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(kComponent, "cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Reads `object[key]` as T into `out`; a missing key keeps `out`. Throws json errors, which
/// parsePcEvidence turns into messages naming `where`.
template <class T>
void optionalField(const json& object, const char* key, T& out) {
  if (auto it = object.find(key); it != object.end() && !it->is_null()) out = it->get<T>();
}

}  // namespace

const PcRecord* PcFunction::at(std::uint64_t pc) const {
  auto it = std::lower_bound(pcs.begin(), pcs.end(), pc,
                             [](const PcRecord& r, std::uint64_t value) { return r.pc < value; });
  return it != pcs.end() && it->pc == pc ? &*it : nullptr;
}

const PcFunction* PcEvidence::function(std::string_view name) const {
  for (const auto& f : functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::uint64_t PcEvidence::metricTotal(std::string_view metric) const {
  std::uint64_t sum = 0;
  for (const auto& f : functions) {
    for (const auto& p : f.pcs) {
      if (auto it = p.metrics.find(std::string(metric)); it != p.metrics.end()) {
        sum += it->second.total;
      }
    }
  }
  return sum;
}

std::string encodePcEvidence(const PcEvidence& e) {
  json functions = json::array();
  for (const auto& f : e.functions) {
    json pcs = json::array();
    for (const auto& p : f.pcs) {
      json record = {{"pc", p.pc}};
      if (!p.sass.empty()) record["sass"] = p.sass;
      if (!p.metrics.empty()) {
        json metrics = json::object();
        for (const auto& [name, value] : p.metrics) {
          json m = {{"total", value.total}};
          if (!value.perInstance.empty()) m["per_instance"] = value.perInstance;
          metrics[name] = std::move(m);
        }
        record["metrics"] = std::move(metrics);
      }
      if (!p.stalls.empty()) record["stalls"] = p.stalls;
      if (!p.fractional.empty()) record["fractional"] = p.fractional;
      pcs.push_back(std::move(record));
    }
    functions.push_back({{"name", f.name},
                         {"cubin_crc", f.cubinCrc},
                         {"cubin_file", f.cubinFile},
                         {"function_index", f.functionIndex},
                         {"pcs", std::move(pcs)}});
  }
  json out = {{"format", kPcEvidenceFormat},
              {"collector", e.collector},
              {"seq", e.seq},
              {"correlation", e.correlation},
              {"kernel", e.kernel}};
  if (!e.api.empty()) {
    out["api"] = e.api;
    out["grid"] = {e.grid[0], e.grid[1], e.grid[2]};
    out["block"] = {e.block[0], e.block[1], e.block[2]};
  }
  out["device"] = e.device;
  out["granularity"] = e.granularity;
  out["instances"] = e.instances;
  out["metrics"] = e.metrics;
  out["stall_reasons"] = e.stallReasons;
  if (e.collector == "cupti_pc_sampling") {
    out["sampling"] = {{"period_log2", e.sampling.periodLog2},
                       {"total_samples", e.sampling.totalSamples},
                       {"dropped_samples", e.sampling.droppedSamples},
                       {"non_user_samples", e.sampling.nonUserSamples},
                       {"hardware_buffer_full", e.sampling.hardwareBufferFull}};
  }
  out["dropped_records"] = e.droppedRecords;
  out["duration_ns"] = e.durationNs ? json(*e.durationNs) : json(nullptr);
  out["note"] = e.note;
  out["functions"] = std::move(functions);
  return out.dump(1) + "\n";
}

Result<PcEvidence> parsePcEvidence(std::string_view text) {
  const json root = json::parse(text, nullptr, false);
  if (root.is_discarded() || !root.is_object()) {
    return fail(kComponent, "not JSON (expected one argus_pc_evidence object)");
  }
  if (root.value("format", "") != kPcEvidenceFormat) {
    return fail(kComponent, "format is `" + root.value("format", "") + "`, expected `" +
                                std::string(kPcEvidenceFormat) + "`");
  }
  PcEvidence e;
  std::string where = "";
  try {
    where = "collector";
    e.collector = root.at("collector").get<std::string>();
    where = "seq";
    e.seq = exactInteger<std::uint64_t>(root.at("seq"), "`seq`");
    where = "correlation";
    optionalField(root, "correlation", e.correlation);
    where = "kernel";
    e.kernel = root.at("kernel").get<std::string>();
    where = "api";
    optionalField(root, "api", e.api);
    for (const char* key : {"grid", "block"}) {
      where = key;
      if (auto it = root.find(key); it != root.end()) {
        if (!it->is_array() || it->size() != 3) {
          return fail(kComponent, std::string(key) + ": expected [x, y, z]");
        }
        auto& dims = std::string_view(key) == "grid" ? e.grid : e.block;
        for (size_t i = 0; i < 3; ++i) dims[i] = (*it)[i].get<std::uint32_t>();
      }
    }
    where = "device";
    optionalField(root, "device", e.device);
    where = "granularity";
    optionalField(root, "granularity", e.granularity);
    where = "instances";
    optionalField(root, "instances", e.instances);
    if (e.instances == 0) return fail(kComponent, "instances: must be at least 1");
    where = "metrics";
    optionalField(root, "metrics", e.metrics);
    where = "stall_reasons";
    optionalField(root, "stall_reasons", e.stallReasons);
    if (auto it = root.find("sampling"); it != root.end() && it->is_object()) {
      where = "sampling";
      optionalField(*it, "period_log2", e.sampling.periodLog2);
      optionalField(*it, "total_samples", e.sampling.totalSamples);
      optionalField(*it, "dropped_samples", e.sampling.droppedSamples);
      optionalField(*it, "non_user_samples", e.sampling.nonUserSamples);
      optionalField(*it, "hardware_buffer_full", e.sampling.hardwareBufferFull);
    }
    where = "dropped_records";
    optionalField(root, "dropped_records", e.droppedRecords);
    where = "duration_ns";
    if (auto it = root.find("duration_ns"); it != root.end() && !it->is_null()) {
      e.durationNs = it->get<std::uint64_t>();
    }
    where = "note";
    optionalField(root, "note", e.note);
    where = "functions";
    const json& functions = root.at("functions");
    if (!functions.is_array()) return fail(kComponent, "functions: expected an array");
    for (size_t fi = 0; fi < functions.size(); ++fi) {
      const json& fj = functions[fi];
      const std::string fwhere = "functions[" + std::to_string(fi) + "]";
      PcFunction f;
      where = fwhere + ".name";
      f.name = fj.at("name").get<std::string>();
      where = fwhere + ".cubin_crc";
      optionalField(fj, "cubin_crc", f.cubinCrc);
      where = fwhere + ".cubin_file";
      optionalField(fj, "cubin_file", f.cubinFile);
      where = fwhere + ".function_index";
      optionalField(fj, "function_index", f.functionIndex);
      where = fwhere + ".pcs";
      const json& pcs = fj.at("pcs");
      if (!pcs.is_array()) return fail(kComponent, where + ": expected an array");
      for (size_t pi = 0; pi < pcs.size(); ++pi) {
        const json& pj = pcs[pi];
        const std::string pwhere = fwhere + ".pcs[" + std::to_string(pi) + "]";
        PcRecord r;
        where = pwhere + ".pc";
        r.pc = exactInteger<std::uint64_t>(pj.at("pc"), "`pc`");
        if (!f.pcs.empty() && f.pcs.back().pc >= r.pc) {
          return fail(kComponent, where + ": PCs must be sorted and unique (" +
                                      std::to_string(r.pc) + " after " +
                                      std::to_string(f.pcs.back().pc) + ")");
        }
        where = pwhere + ".sass";
        optionalField(pj, "sass", r.sass);
        if (auto it = pj.find("metrics"); it != pj.end()) {
          for (const auto& [name, mj] : it->items()) {
            where = pwhere + ".metrics." + name;
            PcMetric m;
            m.total = exactInteger<std::uint64_t>(mj.at("total"), "`total`");
            optionalField(mj, "per_instance", m.perInstance);
            if (!m.perInstance.empty()) {
              if (m.perInstance.size() != e.instances) {
                return fail(kComponent, where + ": " + std::to_string(m.perInstance.size()) +
                                            " per-instance values, expected " +
                                            std::to_string(e.instances));
              }
              std::uint64_t sum = 0;
              for (auto v : m.perInstance) sum += v;
              if (sum != m.total) {
                return fail(kComponent, where + ": per-instance values sum to " +
                                            std::to_string(sum) + ", total says " +
                                            std::to_string(m.total));
              }
            }
            r.metrics.emplace(name, std::move(m));
          }
        }
        where = pwhere + ".stalls";
        optionalField(pj, "stalls", r.stalls);
        where = pwhere + ".fractional";
        optionalField(pj, "fractional", r.fractional);
        f.pcs.push_back(std::move(r));
      }
      e.functions.push_back(std::move(f));
    }
  } catch (const nlohmann::json::exception& ex) {
    return fail(kComponent, where + ": " + ex.what());
  }
  return e;
}

std::string pcEvidenceFileName(std::uint64_t seq) {
  return "pc-" + std::to_string(seq) + ".json";
}

std::string cubinFileName(std::uint64_t crc) {
  return "cubin-" + std::to_string(crc) + ".cubin";
}

Result<std::vector<PcEvidence>> readPcEvidenceDir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return fail(kComponent, dir.string() + " is not a collection directory");
  }
  std::vector<std::pair<std::uint64_t, std::filesystem::path>> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 9 || !name.starts_with("pc-") || !name.ends_with(".json")) continue;
    const std::string digits = name.substr(3, name.size() - 8);
    if (digits.empty() ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    files.emplace_back(std::stoull(digits), entry.path());
  }
  std::sort(files.begin(), files.end());
  std::map<std::uint64_t, std::uint64_t> durations;
  if (auto kernels = slurp(dir / "kernels.jsonl")) {
    std::istringstream lines(*kernels);
    for (std::string line; std::getline(lines, line);) {
      const json k = json::parse(line, nullptr, false);
      if (k.is_discarded() || !k.is_object()) continue;
      const auto seq = integerOr(k, "seq", std::int64_t{-1});
      if (seq >= 0 && k.contains("duration_ns")) {
        durations[static_cast<std::uint64_t>(seq)] =
            exactInteger<std::uint64_t>(k["duration_ns"], "`duration_ns`");
      }
    }
  }
  std::vector<PcEvidence> out;
  for (const auto& [seq, path] : files) {
    auto text = slurp(path);
    if (!text) return std::unexpected(text.error());
    auto evidence = parsePcEvidence(*text);
    if (!evidence) {
      return fail(kComponent, path.filename().string() + ": " + evidence.error().message);
    }
    if (!evidence->durationNs) {
      if (auto it = durations.find(evidence->seq); it != durations.end()) {
        evidence->durationNs = it->second;
      }
    }
    out.push_back(std::move(*evidence));
  }
  return out;
}

}  // namespace argus::evidence
