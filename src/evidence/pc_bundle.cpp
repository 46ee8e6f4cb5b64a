#include "argus/evidence/pc_bundle.h"
#include "argus/support/json_number.h"

#include <fmt/format.h>

namespace argus::evidence {

using json = nlohmann::json;

std::string encodePcBundle(const PcBundle& bundle) {
  json launches = json::array();
  for (const auto& l : bundle.launches) launches.push_back(json::parse(encodePcEvidence(l)));
  json out{{"format", kPcBundleFormat},
           {"collector", bundle.collector},
           {"variant", bundle.variant},
           {"kernel", bundle.kernel},
           {"cubin", {{"hash", bundle.cubinHash}, {"bytes", bundle.cubinBytes}}},
           {"cubin_check", bundle.cubinCheck},
           {"sass_check", bundle.sassCheck},
           {"disassembly", bundle.disassembly},
           {"paint_map", bundle.paintMap},
           {"launches", launches},
           {"totals", bundle.totals},
           {"run", bundle.run}};
  if (!bundle.calleeCopies.is_null()) out["callee_copies"] = bundle.calleeCopies;
  return out.dump();
}

Result<PcBundle> decodePcBundle(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail("pc_bundle", "not JSON; expected a PC bundle (argus_pc_bundle 1)");
  if (j.value("format", "") != kPcBundleFormat)
    return fail("pc_bundle", fmt::format("format is `{}`, expected `{}`", j.value("format", ""),
                                         kPcBundleFormat));
  PcBundle b;
  try {
    b.collector = j.at("collector").get<std::string>();
    b.variant = j.at("variant").get<std::string>();
    b.kernel = j.at("kernel").get<std::string>();
    b.cubinHash = j.at("cubin").at("hash").get<std::string>();
    b.cubinBytes = exactInteger<uint64_t>(j.at("cubin").at("bytes"), "`bytes`");
    b.cubinCheck = j.at("cubin_check");
    b.sassCheck = j.at("sass_check");
    b.disassembly = j.at("disassembly").get<std::string>();
    b.paintMap = j.at("paint_map");
    b.totals = j.value("totals", json::object());
    b.run = j.value("run", json::object());
    b.calleeCopies = j.value("callee_copies", json());
  } catch (const json::exception& e) {
    return fail("pc_bundle", fmt::format("missing or mistyped field: {}", e.what()));
  }
  if (!j.contains("launches") || !j["launches"].is_array())
    return fail("pc_bundle", "`launches` must be an array");
  for (size_t i = 0; i < j["launches"].size(); ++i) {
    auto launch = parsePcEvidence(j["launches"][i].dump());
    if (!launch)
      return fail("pc_bundle", fmt::format("launches[{}]: {}", i, launch.error().message));
    b.launches.push_back(std::move(*launch));
  }
  return b;
}

}  // namespace argus::evidence
