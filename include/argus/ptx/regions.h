// Region structure: which Argus regions own each PTX instruction, and the region tree per kernel.
//
// Regions are delimited by marker comments that `include/argus/region.cuh` emits:
//   // @argus begin NAME[ iter=OPERAND][ role=TAG][ derived=SELECTOR]
//   // @argus end NAME
// (`derived=` is written by deriveRegions, argus/ptx/derive.h, on the markers it places.)
// Markers must nest on every path. Ownership is computed by a forward data-flow over the CFG
// whose state is the set of region-tree nodes that can be open at a point (a node stands for the
// whole stack of open regions, since a node is identified by its path). Branches may enter one
// region from different places; markers under data-dependent branches make several nodes
// possible at once, and every possible owner is listed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "argus/ptx/ir.h"
#include "argus/support/status.h"

namespace argus::ptx {

/// Limits of the region analysis (docs/limits.md). Real kernels nest a few levels with short
/// names; the limits keep the tree, its paths and every output that lists them (`argus regions`
/// prints each region's path) bounded by the input, and past one analysis fails with the begin
/// marker's place.
inline constexpr uint32_t kMaxRegionDepth = 1024;        ///< Regions open at once on one path.
inline constexpr size_t kMaxRegionPathLength = 4096;     ///< Bytes of one region path.
inline constexpr size_t kMaxRegionsPerFunction = 16384;  ///< Region-tree nodes of one function.

/// One parsed marker comment.
struct Marker {
  enum class Kind : uint8_t { Begin, End };
  Kind kind = Kind::Begin;
  std::string name;
  std::string iteration;  ///< Operand text after `iter=` (a register such as `%r12`), or empty.
  std::string role;       ///< Tag after `role=`, or empty.
  std::string derived;    ///< Selector after `derived=` (a derived region's marker), or empty.
};

/// A loop-trip counter comment that deriveRegions writes (argus/ptx/derive.h):
///   // @argus trip REG reset     REG = -1 (before the loop is entered)
///   // @argus trip REG step      REG += 1 (at the top of the loop's header: each trip)
/// A derived region inside the loop names REG as its `iter=`. The comments are no code: the
/// passes that read iterations turn them into instructions (lowerTripCounters), the others drop
/// them with the markers, so the builds that record nothing keep the program's machine code.
struct TripCounterStep {
  std::string reg;     ///< `%argustrip_...`
  bool reset = false;  ///< reset, else step
};

/// Region-name characters: a name matches [A-Za-z_][A-Za-z0-9_.-]*.
[[nodiscard]] bool isRegionNameChar(char c);
[[nodiscard]] bool isValidRegionName(std::string_view name);

/// Parses a comment body (text after `//`). Returns nullopt when the comment is not an Argus
/// marker (a trip counter is none), and an error when it starts with `@argus` but is malformed.
[[nodiscard]] Result<std::optional<Marker>> parseMarker(std::string_view comment);

/// A trip-counter comment's step, or nullopt for any other comment (a malformed one included:
/// parseMarker reports it).
[[nodiscard]] std::optional<TripCounterStep> parseTripCounter(std::string_view comment);

/// Stable region identity: 16 hex digits of XXH3-64 over "kernel\0path". It depends only on the
/// (mangled) kernel name and the region path, never on PCs, lines or compile flags.
[[nodiscard]] std::string regionId(std::string_view kernel, std::string_view path);

/// A place in the original source, recovered from the nearest preceding `.loc`.
struct SourcePosition {
  std::string file;  ///< From the module's `.file` table; empty when there is no `.loc`.
  uint32_t line = 0;
};

/// One marker occurrence in the PTX.
struct MarkerSite {
  size_t statement = 0;  ///< Index into Function::body.
  Location ptx;          ///< Where in the PTX text.
  /// Where in the kernel's source: the marker's `.loc`, or the call of the inlined helper it
  /// comes from when that `.loc` names the helper's file (callSitePositions).
  SourcePosition source;
  std::string iteration;
  std::string role;
  std::string derived;  ///< The selector of a derived region's begin, else empty.
};

/// One node of a kernel's region tree.
struct Region {
  std::string id;    ///< regionId(kernel, path)
  std::string name;  ///< Last path component.
  std::string path;  ///< Names from the kernel root joined by '/', e.g. `main/body/consumer`.
  std::optional<uint32_t> parent;  ///< Index into FunctionRegions::regions; nullopt at top level.
  std::vector<uint32_t> children;
  std::vector<MarkerSite> begins;
  std::vector<MarkerSite> ends;
  uint32_t instructions = 0;  ///< PTX instructions this region can own directly (not children).
  /// The selector a derived region comes from (its begin markers'), empty for a marked region.
  std::string selector;
};

/// A problem that does not stop analysis, e.g. a marker whose effect differs between paths.
struct RegionWarning {
  Location ptx;
  SourcePosition source;
  std::string message;
};

/// The region structure of one function.
struct FunctionRegions {
  std::string function;  ///< Mangled name as in the PTX.
  bool isEntry = false;
  std::vector<Region> regions;  ///< Pre-order: a parent precedes its children.
  /// For every statement of the body: the regions that can own it directly (innermost open
  /// region on each possible path). Empty = outside every region (or not an instruction).
  std::vector<std::vector<uint32_t>> owners;
  std::vector<RegionWarning> warnings;
};

/// Analyzes every function with a body. Fails on unbalanced or crossing markers, an `end` with
/// no open region, a region re-opened inside itself, a region still open at `ret`/`exit`, or a
/// tree past the limits above;
/// the message names the PTX file, line and column, the source line when `.loc` is present,
/// and both regions involved. [thread-safe]
[[nodiscard]] Result<std::vector<FunctionRegions>> analyzeRegions(const Module& module);

/// Source position of every statement of a function, from its `.loc` directives and the
/// module's `.file` table.
[[nodiscard]] std::vector<SourcePosition> sourcePositions(const Module& module,
                                                          const Function& function);

/// For every statement of a function that comes from an inlined function, the call in the
/// function's own source: the outermost inlined call of the DWARF in `.debug_info` (label
/// bounds), else the `inlined_at` of its `.loc`. Empty (no file) for the other statements and
/// for PTX without that information. A region marker takes its source from here when its own
/// `.loc` names another file (a helper's): Argus's Triton markers are inlined helpers.
[[nodiscard]] std::vector<SourcePosition> callSitePositions(const Module& module,
                                                            const Function& function);

}  // namespace argus::ptx
