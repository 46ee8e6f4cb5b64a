// The TTGIR/TTIR reader: the region tree of every tt.func, from MLIR text.
#include "argus/ttgir/regions.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace argus;
  if (size > fuzz::kMaxInput) return -1;
  auto text = fuzz::text(data, size);
  (void)ttgir::looksLikeTtgir(text);
  auto regions = ttgir::analyzeRegions(text, "fuzz.ttgir");
  if (regions)
    for (const auto& function : *regions)
      for (size_t i = 0; i < function.regions.size(); ++i)
        fuzz::require(!function.regions[i].parent || *function.regions[i].parent < i,
                      "a parent precedes its children");
  return 0;
}
