// Regions of called functions, composed into the kernels that call them.
//
// analyzeRegions gives every function its own region tree. A `.func` with markers runs inside its
// caller: called from region `tile` of kernel K, its region `reduce` runs as `tile/reduce` of K.
// composeCalleeRegions appends to each kernel's tree the regions of every function the kernel
// reaches through direct calls, once per calling region (the calling context), under that region,
// with the composed path and that path's ID, so a query can name `tile/reduce` and a trace can
// record it. The callee's own tree and every function's `owners` stay as they were: a composed
// region's marker sites are statements of the callee, which CalleeInstance says.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "argus/ptx/ir.h"
#include "argus/ptx/regions.h"
#include "argus/support/status.h"

namespace argus::ptx {

/// `outer` + "/" + `inner`, where "" is the root on either side.
[[nodiscard]] std::string composePath(std::string_view outer, std::string_view inner);

/// The named target of a direct call (`call.uni (r), fn, (p);`); empty for other statements and
/// for indirect calls through a register.
[[nodiscard]] std::string directCallee(const Statement& statement);

/// Whether the statement is a call through a register (no static target).
[[nodiscard]] bool isIndirectCall(const Statement& statement);

/// One function's regions as they run in a kernel under one calling region.
struct CalleeInstance {
  std::string function;  ///< The `.func` (mangled).
  /// The calling region's path in the kernel's composed tree; "" = called outside every region.
  std::string context;
  std::optional<uint32_t> parent;  ///< That region's index in the composed tree.
  uint32_t first = 0;              ///< Index of the function's region 0 in the composed tree.
  uint32_t count = 0;              ///< How many regions it adds (the function's whole tree).
};

/// What composition found for one kernel.
struct ComposedKernel {
  std::vector<CalleeInstance> instances;  ///< In the order they were appended.
  /// Functions with regions the kernel reaches under several possible regions at one call site
  /// (the call is under a data-dependent marker branch) or only through recursion: their regions
  /// are not composed, and the kernel's FunctionRegions has a warning saying so.
  std::vector<std::string> skipped;
};

/// Appends to every entry of `analysis` the regions of the functions it calls (directly or
/// through other functions), as the header says; entries without such callees are unchanged.
/// Fails only past the region limits (kMaxRegionsPerFunction, kMaxRegionPathLength), naming the
/// kernel and the function. Returns each entry's instances by kernel name.
[[nodiscard]] Result<std::map<std::string, ComposedKernel>> composeCalleeRegions(
    const Module& module, std::vector<FunctionRegions>& analysis);

}  // namespace argus::ptx
