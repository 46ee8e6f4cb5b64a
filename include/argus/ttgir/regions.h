// Region structure of Triton kernels, read from TTGIR (Triton's GPU dialect, the representation
// that optimizers edit).
//
// Regions are Proton named scopes: `with pl.scope("mainloop"):` in the kernel becomes
//   proton.record start "mainloop" loc(#loc18)
//   ...
//   proton.record end "mainloop" loc(#loc23)
// in TTIR and TTGIR. A scope must start and end in the same MLIR block (an `scf.for` body or the
// function body), and scopes nest like Argus markers. Region IDs are ptx::regionId(kernel, path),
// the same function as for CUDA C++ kernels, so a region keeps its ID in every representation
// that names it by the same path.
#pragma once

#include <string_view>
#include <vector>

#include "argus/ptx/regions.h"
#include "argus/support/status.h"

namespace argus::ttgir {

/// The region tree of every `tt.func` in a TTGIR (or TTIR) module. Reuses ptx::FunctionRegions:
/// MarkerSite::ptx holds the TTGIR line, MarkerSite::source the Python line that `loc(...)`
/// resolves to, Region::instructions the operations a region owns directly, `isEntry` is true
/// for `tt.func public`. `owners` is left empty (TTGIR has no instruction indices). Errors name
/// the file and line: an `end` without a matching open scope, scopes that cross, a scope closed
/// in another block, a scope still open at the end of its function. [thread-safe]
[[nodiscard]] Result<std::vector<ptx::FunctionRegions>> analyzeRegions(std::string_view text,
                                                                       std::string_view fileName);

/// True when `text` looks like an MLIR module of Triton's dialects (TTIR or TTGIR).
[[nodiscard]] bool looksLikeTtgir(std::string_view text);

}  // namespace argus::ttgir
