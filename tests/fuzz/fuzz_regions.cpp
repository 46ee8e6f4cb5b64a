// Region analysis and async-op discovery over parsed PTX: markers, nesting, ownership, the
// source positions of every region, and the op sites of the whole module; then regions derived
// from its loops and ops (argus/ptx/derive.h), placed on its edges and checked again; and the
// kernels' trees with their callees' regions composed in (argus/ptx/callee_regions.h).
#include "argus/analysis/discover.h"
#include "argus/ptx/callee_regions.h"
#include "argus/ptx/derive.h"
#include "argus/ptx/parser.h"
#include "argus/ptx/regions.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace argus;
  if (size > fuzz::kMaxInput) return -1;
  auto module = ptx::parseModule(fuzz::text(data, size), "fuzz.ptx");
  if (!module) return 0;
  auto regions = ptx::analyzeRegions(*module);
  if (regions) {
    for (const auto& function : *regions)
      for (size_t i = 0; i < function.regions.size(); ++i) {
        const ptx::Region& region = function.regions[i];
        fuzz::require(!region.path.empty(), "a region has a path");
        fuzz::require(region.id == ptx::regionId(function.function, region.path),
                      "a region's ID is regionId(kernel, path)");
        fuzz::require(!region.parent || *region.parent < i, "a parent precedes its children");
      }
  }
  if (regions) {
    // Callee regions composed into each kernel's tree keep the tree's invariants.
    auto composed = *regions;
    if (ptx::composeCalleeRegions(*module, composed))
      for (const auto& function : composed)
        for (size_t i = 0; i < function.regions.size(); ++i) {
          const ptx::Region& region = function.regions[i];
          fuzz::require(region.id == ptx::regionId(function.function, region.path),
                        "a composed region's ID is regionId(kernel, path)");
          fuzz::require(!region.parent || *region.parent < i,
                        "a composed region's parent precedes it");
          for (uint32_t c : region.children)
            fuzz::require(c < function.regions.size() && function.regions[c].parent == i,
                          "a composed region's children name it as parent");
        }
  }
  auto sites = analysis::discoverAsyncOps(*module, "", "");
  if (sites) (void)analysis::toJson(*sites);
  if (regions) {
    static const auto everything = ptx::definitionsFromList("loops,ops,op:ld_global");
    (void)ptx::deriveRegions(*module, *everything);
  }
  return 0;
}
