// Derived regions: regions made from the program itself instead of markers someone wrote.
//
// A selector names a part of a kernel's PTX: its natural loops, one loop by source line, a kind
// of operation (TMA loads, WGMMA, mbarrier waits, ...), the calls of a function, or a source line
// range through `.loc`. deriveRegions turns every selected part into ordinary marker comments
// (`// @argus begin NAME derived=SELECTOR` ... `// @argus end NAME`) placed on the part's entry
// and exit edges, so that every later pass (tracing, painting, discovery) treats a derived
// region like a marked one, and the region analysis checks that derived and marked regions nest.
// A region inside a loop begins once per trip: its begin markers carry `iter=` a trip counter of
// the innermost loop (the trip number since the loop was entered), written as comments that only
// the passes reading iterations turn into code (lowerTripCounters).
// A region's identity is regionId(kernel, path): the path comes from the selector's name, never
// from PCs, so it survives recompiles with other flags and edits elsewhere in the kernel.
// The language is documented in docs/regions-file.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "argus/ptx/ir.h"
#include "argus/support/status.h"

namespace argus::ptx {

/// One selector, parsed from its text form:
///   loops                  every natural loop of the kernel, nested as they nest
///   loop:[FILE:]LINE       the loop whose back edge is at LINE (of FILE)
///   op:KIND                every run of one kind of operation (opKinds())
///   op:call=NAME           every call of the function NAME (mangled, or a demangled prefix)
///   func:NAME              the same as op:call=NAME, named after the function
///   lines:[FILE:]A-B       the instructions whose `.loc` is in lines A..B (of FILE)
struct Selector {
  enum class Kind : uint8_t { Loops, Loop, Op, Call, Lines };
  Kind kind = Kind::Loops;
  std::string op;        ///< Op: the kind's name (`wgmma`).
  std::string function;  ///< Call: the callee.
  std::string file;      ///< Loop and Lines: a file name or path suffix; empty = any file.
  uint32_t first = 0;    ///< Loop: the line; Lines: the first line.
  uint32_t last = 0;     ///< Lines: the last line (inclusive).
  std::string text;      ///< The canonical text form, part of each derived marker.
};

/// The operation kinds `op:KIND` selects, with what each matches (for --help and messages).
struct OpKind {
  std::string_view name;
  std::string_view matches;
};
[[nodiscard]] const std::vector<OpKind>& opKinds();

/// Parses a selector; the error names the selector and the forms that exist.
[[nodiscard]] Result<Selector> parseSelector(std::string_view text);

/// One region to derive. Either `select` picks its instructions (inside the parent's, for a
/// child), or `refine` names a marked region whose instructions the children split.
struct RegionDefinition {
  std::string name;    ///< Region name; empty = the selector's default name.
  std::string select;  ///< Selector text; empty with `refine`.
  std::string refine;  ///< Path of an existing region (`mainloop`, `main/body`), top level only.
  std::vector<RegionDefinition> children;
  /// Skipped where it selects nothing (the `ops` shorthand's kinds) instead of an error.
  bool optional = false;
  std::string origin;  ///< Where it was written (`regions.yaml:12:5`, `--derive`), for messages.
};

/// What to derive, for every kernel or one.
struct RegionDefinitions {
  std::string kernel;  ///< Mangled name or demangled prefix; empty = every kernel.
  std::vector<RegionDefinition> regions;
};

/// A derived region as placed, for `argus regions` and logs.
struct DerivedRegion {
  std::string kernel;        ///< Mangled name.
  std::string name;          ///< Region name (its path comes from the region analysis).
  std::string selector;      ///< Canonical selector text.
  uint32_t occurrences = 0;  ///< Separate parts of the kernel it covers (op runs, loops, ...).
};

/// Inserts the markers of every definition into the module's kernels. Fails, naming the
/// definition's origin and selector, when a selector selects nothing in a kernel it must apply
/// to (naming what exists instead), when a line range has more than one entry, when an edge
/// cannot carry markers, or when the derived regions do not nest with the marked ones.
/// [thread-safe]
[[nodiscard]] Result<std::vector<DerivedRegion>> deriveRegions(Module& module,
                                                               const RegionDefinitions& defs);

/// Turns the trip-counter comments (TripCounterStep, argus/ptx/regions.h) of a function into
/// code: a `.reg .b32` per counter, `mov.b32 R, -1` for a reset and `add.s32 R, R, 1` for a
/// step. The passes that read iteration operands call it on the kernels they instrument; no
/// other build has the counters. Returns the comments lowered. [thread-safe]
size_t lowerTripCounters(Function& f);
/// The same for every kernel of the module, or only the one named (mangled) when not empty.
size_t lowerTripCounters(Module& module, std::string_view kernel);

/// Definitions from a `--derive` list: comma-separated selectors, where `loops` is every loop
/// and `ops` every operation kind present in a kernel (absent kinds are skipped).
[[nodiscard]] Result<RegionDefinitions> definitionsFromList(std::string_view list);

}  // namespace argus::ptx
