// Call contexts: which (kernel, region path) can own the instructions of each function when
// regions are composed through call sites. A `.func` has its own region tree (markers inside it);
// called from region `main/body` of kernel K, its region `transform` runs as
// `main/body/transform` of K. Shared by paint_ptx (every possible owner of a callee's PCs) and
// clone_shared_callees (one copy per calling context).
#pragma once

#include <compare>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "argus/ptx/callee_regions.h"
#include "argus/ptx/ir.h"
#include "argus/ptx/regions.h"
#include "argus/support/status.h"

namespace argus::passes {

/// One possible owner: a region path of a kernel's tree; "" = outside every region of `kernel`.
struct Owner {
  std::string kernel;
  std::string region;
  auto operator<=>(const Owner&) const = default;
};
using OwnerSet = std::set<Owner>;

// Shared with the region analysis, which composes callee regions into kernels' trees.
using ptx::composePath;
using ptx::directCallee;
using ptx::isIndirectCall;

/// Per statement of a function, its function-local owner paths ({""} outside every region).
[[nodiscard]] std::vector<std::vector<std::string>> localOwnerPaths(
    const ptx::Function& function, const ptx::FunctionRegions* regions);

/// The analysis result: contexts per function (name -> owners its body runs under).
struct CallContexts {
  std::map<std::string, OwnerSet> contexts;
  /// Functions whose contexts were cut off because region paths kept growing through a recursive
  /// call cycle with regions in it (the set is then incomplete).
  std::set<std::string> truncated;
};

/// Every (kernel, path) context each function with a body is reached under from the module's
/// entries. Entries have the context {kernel, ""}. Functions no entry reaches are absent.
[[nodiscard]] CallContexts analyzeCallContexts(
    const ptx::Module& module, const std::map<std::string, const ptx::FunctionRegions*>& regions);

/// For each statement of `function`, the owners it can run under: every function context
/// composed with the statement's local owners. Empty for functions no entry reaches.
[[nodiscard]] std::vector<OwnerSet> statementOwners(const ptx::Function& function,
                                                    const ptx::FunctionRegions* regions,
                                                    const OwnerSet& contexts);

}  // namespace argus::passes
