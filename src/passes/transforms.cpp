// The transform registry: name -> pass factory, and the public entry point that runs a recipe's
// transform list. The table is data; adding a pass adds one row.
#include <array>
#include <memory>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "argus/passes/transforms.h"
#include "pass.h"

namespace argus::passes {

namespace {

struct PassRecord {
  std::string_view name;
  std::unique_ptr<Pass> (*create)();
};

constexpr PassRecord kPasses[] = {
    {"strip_markers", &createStripMarkersPass},
    {"lower_markers_to_trace", &createLowerMarkersToTracePass},
    {"paint_ptx", &createPaintPtxPass},
    {"insert_forced_wait", &createInsertForcedWaitPass},
    {"clone_shared_callees", &createCloneSharedCalleesPass},
};

/// Transforms that recipes name but that later work adds; asking for one is a clear error.
struct PlannedTransform {
  std::string_view name;
  std::string_view addedBy;
};

// Empty now that issues 6 and 7 added their passes; kept for the next planned transform.
constexpr std::array<PlannedTransform, 0> kPlanned{};

}  // namespace

std::vector<std::string> availableTransforms() {
  std::vector<std::string> names;
  for (const auto& record : kPasses) names.emplace_back(record.name);
  return names;
}

Result<TransformResult> applyTransforms(ptx::Module& module, const std::vector<std::string>& names,
                                        const TransformOptions& options) {
  // Resolve every name before touching the module, so an unknown name changes nothing.
  std::vector<const PassRecord*> pipeline;
  for (const std::string& name : names) {
    const PassRecord* found = nullptr;
    for (const auto& record : kPasses) {
      if (record.name == name) found = &record;
    }
    if (found != nullptr) {
      pipeline.push_back(found);
      continue;
    }
    for (const auto& planned : kPlanned) {
      if (planned.name == name) {
        return fail("passes",
                    fmt::format("transform `{}` is not implemented yet; it is added by "
                                "{}. Available: {}",
                                name, planned.addedBy, fmt::join(availableTransforms(), ", ")));
      }
    }
    return fail("passes", fmt::format("unknown transform `{}`; available: {}", name,
                                      fmt::join(availableTransforms(), ", ")));
  }

  // Passes run on a copy, so a failure leaves the caller's module as it was.
  ptx::Module working = module;
  TransformResult result;
  for (const PassRecord* record : pipeline) {
    std::unique_ptr<Pass> pass = record->create();
    if (auto ok = pass->run(working, options, result); !ok) {
      Error error = ok.error();
      if (!error.message.starts_with(record->name)) {
        error.message = fmt::format("{}: {}", record->name, error.message);
      }
      return std::unexpected(std::move(error));
    }
    result.statistics[std::string(record->name)] = pass->statisticsJson();
  }
  module = std::move(working);
  return result;
}

}  // namespace argus::passes
