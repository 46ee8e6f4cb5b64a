// Recipes: data files that say how a signal is obtained (recipes/*.yaml).
//
// A recipe names the evidence a backend collects, the program variant and transforms the
// collection needs, prerequisite analyses (other recipes), the scope coordinates its evidence
// keeps, what the collection does to a run (effects) and which effects of a co-scheduled
// collection would spoil its outputs (invalidated_by). The planner binds recipes to a query and
// uses effects to keep apart collections that would disturb each other.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "argus/query/scope.h"
#include "argus/support/status.h"

namespace argus::planner {

/// How numbers are obtained (docs/architecture.md, "Words": qualification).
enum class Qualification : uint8_t { Observed, Attributed, Derived };
[[nodiscard]] std::string_view qualificationName(Qualification q);

/// How a signal combines over occurrences or PCs.
enum class Aggregation : uint8_t {
  Additive,      ///< sums over PCs/occurrences (instruction counts, time)
  Ratio,         ///< numerator and denominator lifted separately
  Distribution,  ///< per-occurrence values kept (latencies)
  Mapping,       ///< structural evidence (maps, op-site lists), not a number
};
[[nodiscard]] std::string_view aggregationName(Aggregation a);

/// One signal a recipe produces.
struct SignalSpec {
  std::string name;
  std::string unit;
  Aggregation aggregation = Aggregation::Additive;
  std::string description;
};

/// The kind of plan work a recipe contributes (the runtime's task types).
enum class RecipeKind : uint8_t {
  Collect,    ///< runs the program on a device and yields evidence
  Analysis,   ///< CPU-only transform/synthesis on artifacts (no run)
  Discovery,  ///< a Control task whose result materializes branches
};
[[nodiscard]] std::string_view recipeKindName(RecipeKind k);

/// The vocabulary of collection effects. Each names what a collection does to the run it is in.
inline constexpr std::string_view kEffects[] = {
    "perturbs_timing",    // adds work or instrumentation: durations in the same run are off
    "perturbs_overlap",   // forces asynchronous work to complete: changes later latencies
    "patches_binary",     // rewrites the SASS being executed
    "replays_kernel",     // runs the kernel several times (counter passes)
    "exclusive_device",   // needs the device to itself (counters, clocks)
    "hardware_counters",  // programs the performance monitors
    "system_tracing",     // records host/driver activity
};

/// Backend requirements a worker must satisfy.
inline constexpr std::string_view kRequirements[] = {"gpu", "hardware_counters", "binary_patching",
                                                     "system_tracing"};

/// Program variants a collection can run.
inline constexpr std::string_view kVariants[] = {
    "none",          // analysis on artifacts, no run
    "reference",     // the program as built, markers stripped (trace-free)
    "full_trace",    // every marker recorded
    "scoped_trace",  // markers recorded only in occurrences the scope selects
    "painted",       // PTX-painted for the PC-to-region map (same SASS as reference)
    "mapping",       // each call path of a callee runs its own copy, for exact ownership counts
    "probe",         // a forced-completion wait after one op site in one dynamic instance
};

/// Edits of the cubin ptxas made for a variant (after the PTX transforms, before linking).
inline constexpr std::string_view kCubinEdits[] = {
    "copy_callees",  // every call path of a non-inlined callee sent to a copy of its machine code
};

/// One recipe file.
struct Recipe {
  std::filesystem::path file;
  std::string name;
  std::string description;
  RecipeKind kind = RecipeKind::Collect;
  std::vector<SignalSpec> signals;
  Qualification qualification = Qualification::Observed;
  std::string backend;   ///< adapter that executes it (`region_trace`, `cupti_sass`, `ncu`, ...)
  std::string evidence;  ///< artifact kind of its raw output
  std::string variant;   ///< one of kVariants
  std::vector<std::string> transforms;     ///< program transforms producing the variant
  std::vector<std::string> cubinEdits;     ///< subset of kCubinEdits (YAML `cubin_edits`)
  std::vector<std::string> prerequisites;  ///< recipes whose outputs it needs
  std::vector<query::Coordinate> retainedScope;
  /// A recipe whose occurrences restrict this one's per-region values by scope coordinates it
  /// does not retain itself (YAML `scope_through`; e.g. per-PC counters through the trace's
  /// occurrences), or empty.
  std::string scopeThrough;
  std::vector<std::string> effects;        ///< subset of kEffects
  std::vector<std::string> invalidatedBy;  ///< effects of a co-run collection that spoil it
  std::vector<std::string> exclusions;     ///< recipes it never shares a run with
  std::vector<std::string> requirements;   ///< subset of kRequirements (YAML `requires`)
  bool isolated = false;                   ///< every instance runs alone (forced waits)
  std::string synthesis;                   ///< synthesis rule name
};

/// All recipes of a directory, by name.
class RecipeCatalog {
 public:
  /// Loads every `*.yaml` file of `dir`. A malformed file is an error naming the file and the
  /// field; so are duplicate names and prerequisites or exclusions naming unknown recipes.
  [[nodiscard]] static Result<RecipeCatalog> load(const std::filesystem::path& dir);
  /// The directory Argus's own recipes live in: $ARGUS_RECIPES, else the source tree's.
  [[nodiscard]] static std::filesystem::path defaultDirectory();

  [[nodiscard]] const std::vector<Recipe>& recipes() const { return recipes_; }
  /// The recipe with this name, or nullptr.
  [[nodiscard]] const Recipe* find(std::string_view name) const;
  /// The recipe producing a signal, or nullptr.
  [[nodiscard]] const Recipe* producing(std::string_view signal) const;
  /// Every signal name, sorted, for error messages.
  [[nodiscard]] std::vector<std::string> signalNames() const;

 private:
  std::vector<Recipe> recipes_;
};

/// Parses one recipe file's text; `file` is for messages.
[[nodiscard]] Result<Recipe> parseRecipe(std::string_view yaml, const std::filesystem::path& file);

/// The catalog as Markdown (docs/recipes.md is generated from it).
[[nodiscard]] std::string recipesMarkdown(const RecipeCatalog& catalog);

}  // namespace argus::planner
