#include "argus/planner/planner.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "argus/program/program.h"

namespace argus::planner {
namespace {

using runtime::InputBinding;
using runtime::Requirement;
using runtime::TaskDescriptor;
using runtime::TaskType;

std::string joinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

/// The variant key a recipe runs under for this scope: full traces become scoped traces when
/// the scope restricts occurrences, so only the selected ones are recorded.
std::string variantKey(const Recipe& recipe, const query::Scope& scope) {
  if (recipe.variant == "full_trace" && !scope.all())
    return fmt::format("scoped_trace[{}]", scope.canonical());
  return recipe.variant;
}

/// Whether a variant's transforms lower markers to trace records (and so yield a trace map).
bool tracesMarkers(const std::vector<std::string>& transforms) {
  return std::find(transforms.begin(), transforms.end(), "lower_markers_to_trace") !=
         transforms.end();
}

/// A painted variant's collections join per-PC evidence with the map of the cubin they measured.
bool paintsPcs(const std::vector<std::string>& transforms) {
  return std::find(transforms.begin(), transforms.end(), "paint_ptx") != transforms.end();
}

/// Clones change the SASS on purpose; only uncloned painted variants are checked against the
/// unpainted PTX.
bool clonesCallees(const std::vector<std::string>& transforms) {
  return std::find(transforms.begin(), transforms.end(), "clone_shared_callees") !=
         transforms.end();
}

/// Whether a variant's build copies callees per call path (sass::copyCalleesInFile).
bool copiesCallees(const Recipe& recipe) {
  return std::ranges::find(recipe.cubinEdits, "copy_callees") != recipe.cubinEdits.end();
}

std::vector<Requirement> requirementsOf(const Recipe& recipe) {
  std::vector<Requirement> out;
  for (const auto& name : recipe.requirements)
    if (auto r = runtime::parseRequirement(name)) out.push_back(*r);
  return out;
}

/// Resolves the query's region (path or ID) in the kernel; empty region = whole kernel.
Result<const ptx::Region*> findRegion(const ptx::FunctionRegions& kernel,
                                      const std::string& region) {
  if (region.empty()) return nullptr;
  for (const auto& r : kernel.regions)
    if (r.path == region || r.id == region) return &r;
  std::vector<std::string> paths;
  for (const auto& r : kernel.regions) paths.push_back(r.path);
  return fail("planner",
              fmt::format("kernel `{}` has no region `{}`; its regions are: {} (`argus regions "
                          "TARGET` prints the tree with IDs)",
                          program::demangle(kernel.function), region, joinNames(paths)));
}

class Builder {
 public:
  Builder(const query::Query& query, const RecipeCatalog& catalog, QueryPlan& out,
          const ProgramContext& program)
      : query_(query),
        catalog_(catalog),
        out_(out),
        triton_(program.language == "triton"),
        gpus_(program.gpus),
        blocks_(program.blocks),
        derive_(program.derive) {}

  /// Adds the tasks for `recipe` and its prerequisites once; returns its synthesis task id.
  Result<std::string> require(const Recipe& recipe, std::vector<std::string>& stack) {
    const std::string synthId = "synth/" + recipe.name;
    if (auto it = done_.find(recipe.name); it != done_.end()) return it->second;
    if (contains(stack, recipe.name))
      return fail("planner", fmt::format("recipes form a prerequisite cycle: {} -> {}",
                                         joinNames(stack), recipe.name));
    stack.push_back(recipe.name);
    std::vector<InputBinding> prereqInputs;
    for (const auto& name : recipe.prerequisites) {
      const Recipe* prereq = catalog_.find(name);
      auto id = require(*prereq, stack);
      if (!id) return id;
      for (const auto& s : prereq->signals)
        prereqInputs.push_back(InputBinding{name + "." + s.name, *id, s.name});
    }
    stack.pop_back();

    std::vector<std::string> outputs;
    for (const auto& s : recipe.signals) outputs.push_back(s.name);

    TaskDescriptor synth = base(synthId);
    synth.executor = recipe.synthesis;
    synth.outputs = outputs;
    synth.config = {{"recipe", recipe.name},
                    {"qualification", qualificationName(recipe.qualification)}};

    if (recipe.kind == RecipeKind::Collect && recipe.isolated) {
      // Probes are materialized by the discovery Control task; the join depends on it (and so
      // waits for every branch it adds) and on the prerequisites' evidence.
      synth.type = TaskType::Synthesize;
      synth.inputs = prereqInputs;
      // One failed probe must not cost the others' answers: the join runs with the branches
      // that succeeded and lists the missing ones as failed.
      synth.config["partial_branches"] = true;
      collectionsIsolated_.push_back(recipe.name);
    } else if (recipe.kind == RecipeKind::Collect) {
      const std::string variant = variantKey(recipe, query_.scope);
      const std::string build = buildVariant(recipe, variant);
      pendingCollections_.push_back(PendingCollection{&recipe, variant, build, synthId});
      synth.type = TaskType::Synthesize;
      synth.inputs = prereqInputs;  // the evidence input is bound after partitioning
      if (!recipe.scopeThrough.empty() && !query_.scope.all())
        requireScopeOccurrences(*catalog_.find(recipe.scopeThrough), synthId);
    } else {
      // Analysis and discovery run on the program's PTX plus their prerequisites' outputs.
      synth.type = recipe.kind == RecipeKind::Discovery ? TaskType::Control : TaskType::Transform;
      synth.id = (recipe.kind == RecipeKind::Discovery ? "discover/" : "analyze/") + recipe.name;
      synth.executor = recipe.backend;
      synth.inputs = prereqInputs;
      synth.inputs.insert(synth.inputs.begin(), InputBinding{"ptx", ensurePtx(), "ptx"});
      synth.config["subtree"] = out_.subtree;
      if (recipe.kind == RecipeKind::Discovery) {
        synth.config["probe_recipe"] = probeRecipeFor(recipe);
        synth.config["kernel"] = out_.kernel;
        if (!query_.ops.empty()) synth.config["ops"] = query_.ops;
        if (triton_) synth.config["triton_dump"] = ensurePtx();
        if (const nlohmann::json trace = traceConfig(); !trace.empty())
          synth.config["trace_config"] = trace;
        // Discovery still lists the sites and builds probe variants when the reference run
        // cannot happen here (no GPU); only the reference's instance counts are then missing.
        nlohmann::json optional = nlohmann::json::array();
        for (const auto& in : prereqInputs) optional.push_back(in.name);
        for (const auto& name : recipe.prerequisites)
          if (const Recipe* p = catalog_.find(name); p != nullptr && p->kind == RecipeKind::Collect)
            optional.push_back(name + ".evidence");
        synth.config["optional_inputs"] = optional;
        // Added after partitioning: it also binds the reference collection's raw evidence.
        deferredSynth_.push_back(synth);
      } else if (auto ok = out_.plan.add(synth); !ok) {
        return std::unexpected(ok.error());
      }
      done_[recipe.name] = synth.id;
      return synth.id;
    }
    deferredSynth_.push_back(std::move(synth));
    done_[recipe.name] = synthId;
    return synthId;
  }

  /// Partitions the collections, adds one Collect task per partition, binds evidence to the
  /// synthesis tasks and adds them.
  Result<void> finish() {
    std::vector<std::vector<size_t>> partitions;
    for (size_t i = 0; i < pendingCollections_.size(); ++i) {
      const auto& c = pendingCollections_[i];
      bool placed = false;
      for (auto& members : partitions) {
        bool fits = std::all_of(members.begin(), members.end(), [&](size_t m) {
          const auto& o = pendingCollections_[m];
          return !separationRule(*c.recipe, c.variant, *o.recipe, o.variant);
        });
        if (fits) {
          members.push_back(i);
          placed = true;
          break;
        }
      }
      if (!placed) partitions.push_back({i});
    }
    for (size_t p = 0; p < partitions.size(); ++p) {
      const auto& first = pendingCollections_[partitions[p].front()];
      TaskDescriptor collect = base(fmt::format("collect/p{}", p));
      collect.type = TaskType::Collect;
      nlohmann::json recipes = nlohmann::json::array();
      std::set<Requirement> requirements;
      bool exclusive = false;
      for (size_t m : partitions[p]) {
        const auto& c = pendingCollections_[m];
        recipes.push_back({{"recipe", c.recipe->name},
                           {"backend", c.recipe->backend},
                           {"evidence", c.recipe->evidence}});
        collect.outputs.push_back(c.recipe->evidence);
        for (auto r : requirementsOf(*c.recipe)) requirements.insert(r);
        exclusive = exclusive || timingSensitive(*c.recipe);
      }
      // A run measures the same thing whatever the query's scope, but for a scoped trace: the
      // scope is the synthesis's, so scoped queries of one workspace reuse each other's runs
      // (and per-PC values in two scopes come from one run and add up).
      if (!first.variant.starts_with("scoped_trace[")) collect.scope.clear();
      collect.executor = partitions[p].size() == 1 ? first.recipe->backend : "multi_backend";
      collect.config = {{"variant", first.variant}, {"collections", recipes}};
      collect.inputs = {InputBinding{"executable", first.build, "executable"}};
      if (tracesMarkers(first.recipe->transforms))
        collect.inputs.push_back(
            InputBinding{"trace_map", "variant/" + first.variant, "trace_map"});
      if (paintsPcs(first.recipe->transforms)) {
        collect.config["kernel"] = out_.kernel;
        collect.inputs.push_back(InputBinding{"cubin", first.build, "cubin"});
        collect.inputs.push_back(
            InputBinding{"paint_map", "variant/" + first.variant, "paint_map"});
        if (copiesCallees(*first.recipe))
          collect.inputs.push_back(InputBinding{"callee_copies", first.build, "callee_copies"});
        // A variant whose SASS differs on purpose is not checked against the unpainted PTX (the
        // callee copies have a check of their own, made where they are made).
        if (!clonesCallees(first.recipe->transforms) && first.recipe->cubinEdits.empty()) {
          collect.inputs.push_back(InputBinding{"ptx", "variant/" + first.variant, "ptx"});
          collect.inputs.push_back(InputBinding{"unpainted_ptx", ensurePtx(), "ptx"});
        }
      }
      collect.requirements.assign(requirements.begin(), requirements.end());
      collect.isolation.exclusiveDevice = exclusive;
      collect.gpus = gpus_;
      collect.isolation.group = collect.id;
      if (auto ok = out_.plan.add(collect); !ok) return ok;
      for (size_t m : partitions[p]) {
        const auto& c = pendingCollections_[m];
        out_.collections.push_back(Collection{c.recipe->name + "@" + c.variant, c.recipe->name,
                                              c.variant, collect.id, static_cast<int>(p)});
        for (auto& synth : deferredSynth_) {
          if (c.scopeFor.contains(synth.id))
            synth.inputs.push_back(InputBinding{"scope_trace", collect.id, c.recipe->evidence});
          if (synth.id == c.synth)
            synth.inputs.insert(synth.inputs.begin(),
                                InputBinding{"evidence", collect.id, c.recipe->evidence});
          else if (joinsExactly(synth, c.synth))
            // Discovery counts instances and the probe join joins occurrences on the reference
            // run's raw trace, not on its statistics.
            synth.inputs.push_back(
                InputBinding{c.recipe->name + ".evidence", collect.id, c.recipe->evidence});
        }
      }
    }
    // The probe join's input from discovery makes it wait for every branch discovery adds.
    for (auto& synth : deferredSynth_)
      if (auto ok = out_.plan.add(std::move(synth)); !ok) return ok;
    // Explain every pair of collections that ended up in different runs.
    for (size_t i = 0; i < out_.collections.size(); ++i)
      for (size_t j = i + 1; j < out_.collections.size(); ++j) {
        const auto& a = out_.collections[i];
        const auto& b = out_.collections[j];
        if (a.partition == b.partition) continue;
        auto rule = separationRule(*catalog_.find(a.recipe), a.variant, *catalog_.find(b.recipe),
                                   b.variant);
        out_.separations.push_back(
            Separation{a.key, b.key, rule ? rule->rule : "placement",
                       rule ? rule->reason : "placed apart by partition order"});
      }
    for (const auto& name : collectionsIsolated_) {
      const Recipe* r = catalog_.find(name);
      out_.separations.push_back(
          Separation{name + "@probe", "*", "isolated",
                     fmt::format("every `{}` probe runs alone: a forced wait changes overlap and "
                                 "hence later latencies",
                                 r->name)});
    }
    return out_.plan.validate();
  }

 private:
  struct PendingCollection {
    const Recipe* recipe;
    std::string variant;
    std::string build;
    std::string synth;
    /// Synthesis tasks that scope their per-region values through this collection's
    /// occurrences (Recipe::scopeThrough); its own `synth` is then empty.
    std::set<std::string> scopeFor = {};
  };

  /// An unscoped collection of `through` (every occurrence, in and out of the query's scope),
  /// whose evidence `synthId` reads as `scope_trace`: once per query.
  void requireScopeOccurrences(const Recipe& through, const std::string& synthId) {
    const std::string variant = variantKey(through, query::Scope{});
    for (auto& c : pendingCollections_)
      if (c.recipe == &through && c.variant == variant && c.synth.empty()) {
        c.scopeFor.insert(synthId);
        return;
      }
    pendingCollections_.push_back(
        PendingCollection{&through, variant, buildVariant(through, variant), "", {synthId}});
  }

  TaskDescriptor base(std::string id) const {
    TaskDescriptor t;
    t.id = std::move(id);
    t.programVersion = out_.programVersion;
    t.region = out_.regionPath;
    t.scope = query_.scope.canonical();
    return t;
  }

  /// Whether `task` (discovery, or the join of isolated probes) reads the raw evidence behind
  /// the prerequisite synthesis `prereqSynth` it is bound to.
  bool joinsExactly(const TaskDescriptor& task, const std::string& prereqSynth) const {
    const bool bound = std::any_of(task.inputs.begin(), task.inputs.end(),
                                   [&](const InputBinding& b) { return b.task == prereqSynth; });
    if (!bound) return false;
    if (task.type == TaskType::Control) return true;
    const Recipe* r = catalog_.find(task.config.value("recipe", std::string()));
    return r != nullptr && r->isolated;
  }

  static bool timingSensitive(const Recipe& r) {
    return r.isolated || contains(r.invalidatedBy, "perturbs_timing") ||
           contains(r.effects, "exclusive_device");
  }

  std::string ensurePtx() {
    const std::string id = "ptx";
    if (out_.plan.find(id) != nullptr) return id;
    TaskDescriptor t = base(id);
    t.region.clear();
    t.scope.clear();
    t.type = TaskType::Transform;
    t.executor = "nvcc_ptx";
    t.config = {{"target", query_.program}, {"kernel", out_.kernel}};
    if (derive_.is_object()) t.config.update(derive_);
    t.outputs = {"ptx"};
    if (triton_) {
      // Triton compiles at launch: the script runs once on a GPU with the dump knobs.
      t.executor = "triton_dump";
      t.outputs = {"ptx", "ttgir", "triton_dump"};
      t.requirements = {Requirement::Gpu};
    }
    (void)out_.plan.add(std::move(t));
    return id;
  }

  /// variant/<key> (PTX passes) and build/<key> (ptxas + link) for a variant, once.
  std::string buildVariant(const Recipe& recipe, const std::string& variant) {
    const std::string buildId = "build/" + variant;
    if (out_.plan.find(buildId) != nullptr) return buildId;
    const std::string ptx = ensurePtx();
    TaskDescriptor v = base("variant/" + variant);
    v.type = TaskType::Transform;
    v.executor = "ptx_pass";
    v.config = {{"variant", variant}, {"transforms", recipe.transforms}, {"kernel", out_.kernel}};
    v.inputs = {InputBinding{"ptx", ptx, "ptx"}};
    v.outputs = {"ptx"};
    // Only a scoped trace records by scope; every other variant is the whole program's (a
    // scoped query's unscoped trace, Recipe::scopeThrough, records every occurrence), and its
    // builds are the same for every scope, so that scoped queries reuse them.
    if (!variant.starts_with("scoped_trace[")) v.scope.clear();
    if (tracesMarkers(recipe.transforms)) {
      v.outputs.push_back("trace_map");
      v.config.update(traceConfig());
    }
    if (paintsPcs(recipe.transforms)) v.outputs.push_back("paint_map");
    (void)out_.plan.add(std::move(v));
    TaskDescriptor b = base(buildId);
    b.type = TaskType::Transform;
    b.executor = "build_variant";
    b.config = {{"variant", variant}};
    b.inputs = {InputBinding{"ptx", "variant/" + variant, "ptx"}};
    b.outputs = {"executable"};
    if (triton_) b.inputs.push_back(InputBinding{"triton_dump", ptx, "triton_dump"});
    if (paintsPcs(recipe.transforms)) b.outputs.push_back("cubin");
    if (!variant.starts_with("scoped_trace[")) b.scope.clear();
    if (!recipe.cubinEdits.empty()) b.config["cubin_edits"] = recipe.cubinEdits;
    if (copiesCallees(recipe)) b.outputs.push_back("callee_copies");
    (void)out_.plan.add(std::move(b));
    return buildId;
  }

  /// The isolated collect recipe whose probes this discovery materializes (one that lists it
  /// as a prerequisite), or empty.
  std::string probeRecipeFor(const Recipe& discovery) const {
    for (const auto& r : catalog_.recipes())
      if (r.isolated && contains(r.prerequisites, discovery.name)) return r.name;
    return "";
  }

  const query::Query& query_;
  const RecipeCatalog& catalog_;
  QueryPlan& out_;
  std::map<std::string, std::string> done_;  // recipe -> task that yields its outputs
  std::vector<PendingCollection> pendingCollections_;
  std::vector<TaskDescriptor> deferredSynth_;
  std::vector<std::string> collectionsIsolated_;
  bool triton_ = false;
  unsigned gpus_ = 1;
  std::map<std::string, std::array<uint32_t, 3>> blocks_;
  nlohmann::json derive_;
  // ProgramContext::blocks

  /// What every trace lowering of the query gets beside its own options: the spec's block
  /// shapes and the query's trace options.
  nlohmann::json traceConfig() const {
    nlohmann::json config = nlohmann::json::object();
    if (!blocks_.empty()) config["blocks"] = blocks_;
    for (const auto& [key, value] : query_.traceOptions) config[key] = value;
    return config;
  }
};

nlohmann::json collectionJson(const Collection& c) {
  return {{"key", c.key},
          {"recipe", c.recipe},
          {"variant", c.variant},
          {"task", c.task},
          {"partition", c.partition}};
}

}  // namespace

std::optional<SeparationRule> separationRule(const Recipe& a, const std::string& variantA,
                                             const Recipe& b, const std::string& variantB) {
  if (a.isolated || b.isolated) {
    const Recipe& r = a.isolated ? a : b;
    return SeparationRule{"isolated", fmt::format("`{}` runs alone: a forced wait changes overlap "
                                                  "and hence later latencies",
                                                  r.name)};
  }
  if (contains(a.exclusions, b.name) || contains(b.exclusions, a.name))
    return SeparationRule{
        "exclusion",
        fmt::format("`{}` excludes `{}`", contains(a.exclusions, b.name) ? a.name : b.name,
                    contains(a.exclusions, b.name) ? b.name : a.name)};
  for (const auto& [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}})
    for (const auto& effect : x->effects)
      if (contains(y->invalidatedBy, effect))
        return SeparationRule{
            "effect", fmt::format("`{}` has effect `{}`, which invalidates `{}`'s outputs", x->name,
                                  effect, y->name)};
  if (variantA != variantB)
    return SeparationRule{"variant", fmt::format("they need different program variants (`{}` "
                                                 "vs `{}`)",
                                                 variantA, variantB)};
  return std::nullopt;
}

Result<QueryPlan> planQuery(const query::Query& query, const RecipeCatalog& catalog,
                            const ProgramContext& program) {
  QueryPlan out;
  out.query = query;
  out.programVersion = program.version;
  auto kernel = program::findKernel(program.functions, query.kernel);
  if (!kernel) return std::unexpected(Error{"planner", kernel.error().message});
  out.kernel = (*kernel)->function;
  auto region = findRegion(**kernel, query.region);
  if (!region) return std::unexpected(region.error());
  if (*region != nullptr) {
    out.regionPath = (*region)->path;
    out.regionId = (*region)->id;
    for (const auto& r : (*kernel)->regions)
      if (r.path == out.regionPath || r.path.starts_with(out.regionPath + "/"))
        out.subtree.push_back(r.path);
  }
  if (const query::Clause* roles = query.scope.clause(query::Coordinate::Role)) {
    // Roles are the tags the kernel's markers give (`role=TAG`); another would select nothing.
    std::set<std::string> known;
    for (const auto& r : (*kernel)->regions)
      for (const auto& b : r.begins)
        if (!b.role.empty()) known.insert(b.role);
    const std::string list =
        known.empty()
            ? std::string("its markers name no roles")
            : "its roles are: " + joinNames(std::vector<std::string>(known.begin(), known.end()));
    for (const auto& name : roles->names)
      if (!known.contains(name))
        return fail("planner",
                    fmt::format("scope `role={}`: kernel `{}` has no region marked with role "
                                "`{}`; {} (a marker's `role=TAG`; `argus regions TARGET` shows "
                                "them)",
                                name, program::demangle((*kernel)->function), name, list));
  }
  if (query.signals.empty()) return fail("planner", "the query names no signals");

  std::vector<const Recipe*> requested;
  for (const auto& signal : query.signals) {
    const Recipe* recipe = catalog.producing(signal);
    if (recipe == nullptr)
      return fail("planner", fmt::format("unknown signal `{}`; signals are: {} (`argus recipes` "
                                         "explains each)",
                                         signal, joinNames(catalog.signalNames())));
    const Recipe* through =
        recipe->scopeThrough.empty() ? nullptr : catalog.find(recipe->scopeThrough);
    for (auto c : query.scope.coordinates())
      if (std::find(recipe->retainedScope.begin(), recipe->retainedScope.end(), c) ==
              recipe->retainedScope.end() &&
          !(through != nullptr && c != query::Coordinate::Launch &&
            std::ranges::find(through->retainedScope, c) != through->retainedScope.end())) {
        std::vector<std::string> kept;
        for (auto k : recipe->retainedScope) kept.emplace_back(query::coordinateName(k));
        const std::string keeps = kept.empty()
                                      ? std::string("its evidence sums over the whole launch")
                                      : fmt::format("its evidence keeps only {}", joinNames(kept));
        return fail("planner",
                    fmt::format("signal `{}` (recipe `{}`) cannot be restricted by scope "
                                "coordinate `{}`: {}; drop `{}` from the scope or ask for that "
                                "signal in a separate query",
                                signal, recipe->name, query::coordinateName(c), keeps,
                                query::coordinateName(c)));
      }
    requested.push_back(recipe);
  }

  if (program.language != "cuda" && program.language != "triton")
    return fail("planner",
                fmt::format("program language `{}` is not `cuda` or `triton`", program.language));
  Builder builder(query, catalog, out, program);
  for (size_t i = 0; i < requested.size(); ++i) {
    std::vector<std::string> stack;
    auto synth = builder.require(*requested[i], stack);
    if (!synth) return std::unexpected(synth.error());
    out.answers[query.signals[i]] = *synth;
  }
  if (auto ok = builder.finish(); !ok) return std::unexpected(ok.error());
  return out;
}

/// GPUs the plan's collections run with (the program's run.gpus).
unsigned plannedGpus(const QueryPlan& plan) {
  for (const auto& t : plan.plan.tasks())
    if (t.type == TaskType::Collect) return t.gpus;
  return 1;
}

/// The discovery task's trace_config (ProbeOrigin::traceConfig), if the plan has one.
nlohmann::json plannedTraceConfig(const QueryPlan& plan) {
  for (const auto& t : plan.plan.tasks())
    if (t.config.is_object() && t.config.contains("trace_config")) return t.config["trace_config"];
  return nlohmann::json::object();
}

Result<std::vector<TaskDescriptor>> probeBranches(const QueryPlan& plan,
                                                  const std::vector<ProbeTarget>& targets) {
  const auto* ptx = plan.plan.find("ptx");
  if (ptx == nullptr) return fail("planner", "the plan has no `ptx` task to derive probes from");
  return probeBranches(ProbeOrigin{.programVersion = plan.programVersion,
                                   .kernel = plan.kernel,
                                   .regionPath = plan.regionPath,
                                   .scope = plan.query.scope,
                                   .ptxTask = "ptx",
                                   .tritonDumpTask = ptx->executor == "triton_dump" ? "ptx" : "",
                                   .gpus = plannedGpus(plan),
                                   .traceConfig = plannedTraceConfig(plan)},
                       targets);
}

nlohmann::json toJson(const QueryPlan& p) {
  nlohmann::json collections = nlohmann::json::array(), separations = nlohmann::json::array();
  for (const auto& c : p.collections) collections.push_back(collectionJson(c));
  for (const auto& s : p.separations)
    separations.push_back(
        {{"first", s.first}, {"second", s.second}, {"rule", s.rule}, {"reason", s.reason}});
  return {{"argus_query_plan", 1},
          {"query", query::toJson(p.query)},
          {"program_version", p.programVersion},
          {"kernel", p.kernel},
          {"region", p.regionPath},
          {"region_id", p.regionId},
          {"subtree", p.subtree},
          {"plan", p.plan.toJson()},
          {"collections", collections},
          {"separations", separations},
          {"answers", p.answers}};
}

Result<QueryPlan> queryPlanFromJson(const nlohmann::json& json) {
  if (!json.is_object() || json.value("argus_query_plan", 0) != 1)
    return fail("planner", "not an Argus query plan (missing \"argus_query_plan\": 1)");
  try {
    QueryPlan p;
    auto q = query::queryFromJson(json.at("query"));
    if (!q) return std::unexpected(q.error());
    p.query = std::move(*q);
    p.programVersion = json.at("program_version").get<std::string>();
    p.kernel = json.at("kernel").get<std::string>();
    p.regionPath = json.at("region").get<std::string>();
    p.regionId = json.at("region_id").get<std::string>();
    p.subtree = json.at("subtree").get<std::vector<std::string>>();
    auto plan = runtime::Plan::fromJson(json.at("plan"));
    if (!plan) return std::unexpected(plan.error());
    p.plan = std::move(*plan);
    for (const auto& c : json.at("collections"))
      p.collections.push_back(Collection{c.at("key"), c.at("recipe"), c.at("variant"), c.at("task"),
                                         c.at("partition").get<int>()});
    for (const auto& s : json.at("separations"))
      p.separations.push_back(
          Separation{s.at("first"), s.at("second"), s.at("rule"), s.at("reason")});
    p.answers = json.at("answers").get<std::map<std::string, std::string>>();
    return p;
  } catch (const nlohmann::json::exception& e) {
    return fail("planner", fmt::format("malformed query plan JSON: {}", e.what()));
  }
}

std::string toText(const QueryPlan& p, bool explain) {
  std::string out = fmt::format(
      "query: kernel {} region {} scope {} signals {}\n", program::demangle(p.kernel),
      p.regionPath.empty() ? "(whole kernel)" : p.regionPath,
      p.query.scope.all() ? "all" : p.query.scope.canonical(), joinNames(p.query.signals));
  if (p.subtree.size() > 1) out += fmt::format("covers: {}\n", joinNames(p.subtree));
  out += fmt::format("\n{} tasks:\n{}", p.plan.size(), p.plan.toText());
  int partitions = 0;
  for (const auto& c : p.collections) partitions = std::max(partitions, c.partition + 1);
  out += fmt::format("\n{} run partitions:\n", partitions);
  for (int i = 0; i < partitions; ++i) {
    std::vector<std::string> members;
    std::string task;
    for (const auto& c : p.collections)
      if (c.partition == i) {
        members.push_back(c.key);
        task = c.task;
      }
    out += fmt::format("  p{} ({}): {}\n", i, task, joinNames(members));
  }
  for (const auto& s : p.separations)
    if (s.rule == "isolated")
      out += fmt::format("  probes: one run per discovered op and iteration ({})\n",
                         s.first.substr(0, s.first.find('@')));
  out += "\nanswers:\n";
  for (const auto& [signal, task] : p.answers) out += fmt::format("  {} <- {}\n", signal, task);
  if (explain && !p.separations.empty()) {
    out += "\nwhy collections are in separate runs:\n";
    for (const auto& s : p.separations)
      out += fmt::format("  {} | {}: {} ({})\n", s.first, s.second, s.reason, s.rule);
  }
  return out;
}

}  // namespace argus::planner
