// Where a kernel's warps may run without their lane 0: a divergence analysis of one PTX kernel.
//
// The trace pass's compact layout has lane 0 store every record of its warp. A marker that a
// warp runs while lane 0 is inactive (in one pass of a diverged warp, or after lane 0 left the
// kernel) therefore writes no record; the pass counts those occurrences at such markers so that
// they are reported as lost instead of missing silently. This analysis tells it which markers
// need the count: every other marker runs, whenever any lane of a warp runs it, with lane 0.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "argus/ptx/cfg.h"
#include "argus/ptx/ir.h"

namespace argus::ptx {

/// For each block of `cfg` (a kernel's control-flow graph): whether a warp may run it with
/// lane 0 inactive. Conservative: false only where every path to the block keeps the warp's
/// lanes together, that is, where the block is control-dependent (through post-dominators) on no
/// branch whose condition may differ between the lanes of a warp and follows no exit that only
/// some lanes may take. A condition is warp-uniform when it derives only from parameters,
/// constants, the launch geometry (%ctaid, %ntid, ...), per-warp special registers (%warpid,
/// %smid), loads from warp-uniform addresses, votes, and `%tid.x` divided by a multiple of 32
/// where the block is one-dimensional or its x extent a multiple of 32: by the kernel's
/// `.reqntid`, or by `block`, the shape the caller knows every launch uses (a program spec's
/// `kernels[].block`; `.maxntid` bounds only the thread count, so it does not count). Values
/// defined in blocks a warp may run diverged are divergent, and `bra.uni` is taken at its word.
/// Blocks that only lane 0 can reach (every path to them takes a branch edge whose guard holds
/// only in lane 0: %laneid == 0, or %tid.x masked to a multiple of 32 being 0 where %tid.x
/// numbers the warp's lanes) are false too: they run with lane 0 whenever they run.
/// [thread-safe]
[[nodiscard]] std::vector<bool> blocksWithoutLaneZero(
    const Function& kernel, const ControlFlowGraph& cfg,
    const std::optional<std::array<uint32_t, 3>>& block = std::nullopt);

/// Why no launch of `kernel` can have block shape `block`, or nothing: a `.reqntid` that names
/// another shape, or more threads than its `.maxntid` (`__launch_bounds__`) allows. [thread-safe]
[[nodiscard]] std::optional<std::string> blockShapeConflict(const Function& kernel,
                                                            const std::array<uint32_t, 3>& block);

}  // namespace argus::ptx
