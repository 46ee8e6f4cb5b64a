#include "argus/planner/recipe.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "argus/support/process.h"

namespace argus::planner {
namespace {

namespace fs = std::filesystem;

template <size_t N>
bool inVocabulary(const std::string_view (&vocabulary)[N], std::string_view word) {
  return std::find(std::begin(vocabulary), std::end(vocabulary), word) != std::end(vocabulary);
}

template <size_t N>
std::string join(const std::string_view (&words)[N]) {
  std::string out;
  for (auto w : words) out += (out.empty() ? "" : ", ") + std::string(w);
  return out;
}

/// Reads fields of one YAML mapping and reports errors as `FILE: field `x`: problem`.
class FieldReader {
 public:
  FieldReader(const YAML::Node& node, const fs::path& file, std::string prefix)
      : node_(node), file_(file), prefix_(std::move(prefix)) {}

  Error error(std::string_view field, std::string_view problem) const {
    return Error{"recipes",
                 fmt::format("{}: field `{}{}`: {}", file_.string(), prefix_, field, problem)};
  }

  Result<std::string> text(const char* field, bool required) {
    seen_.insert(field);
    const YAML::Node value = node_[field];
    if (!value) {
      if (required) return std::unexpected(error(field, "is required"));
      return std::string();
    }
    if (!value.IsScalar()) return std::unexpected(error(field, "must be a string"));
    return value.as<std::string>();
  }

  Result<std::vector<std::string>> list(const char* field) {
    seen_.insert(field);
    const YAML::Node value = node_[field];
    std::vector<std::string> out;
    if (!value || value.IsNull()) return out;
    if (!value.IsSequence()) return std::unexpected(error(field, "must be a list"));
    for (const auto& item : value) {
      if (!item.IsScalar()) return std::unexpected(error(field, "entries must be strings"));
      out.push_back(item.as<std::string>());
    }
    return out;
  }

  Result<bool> flag(const char* field) {
    seen_.insert(field);
    const YAML::Node value = node_[field];
    if (!value) return false;
    if (!value.IsScalar() || (value.Scalar() != "true" && value.Scalar() != "false"))
      return std::unexpected(error(field, "must be true or false"));
    return value.Scalar() == "true";
  }

  void markRead(const char* field) { seen_.insert(field); }

  /// Fails on any field that was not read: a typo must not be ignored silently.
  Result<void> noOthers(std::string_view allowed) const {
    for (const auto& entry : node_) {
      const std::string key = entry.first.as<std::string>();
      if (!seen_.contains(key))
        return std::unexpected(
            error(key, fmt::format("is not a recipe field; fields are {}", allowed)));
    }
    return {};
  }

 private:
  const YAML::Node& node_;
  const fs::path& file_;
  std::string prefix_;
  std::set<std::string, std::less<>> seen_;
};

#define ARGUS_TRY_ASSIGN(target, expr)                               \
  do {                                                               \
    auto argus_value_ = (expr);                                      \
    if (!argus_value_) return std::unexpected(argus_value_.error()); \
    target = std::move(*argus_value_);                               \
  } while (false)

constexpr std::string_view kRecipeFields =
    "name, description, kind, signals, qualification, backend, evidence, variant, transforms, "
    "cubin_edits, prerequisites, retained_scope, scope_through, effects, invalidated_by, "
    "exclusions, requires, "
    "isolated, "
    "synthesis";

Result<SignalSpec> parseSignal(const YAML::Node& node, const fs::path& file, size_t index) {
  FieldReader r(node, file, fmt::format("signals[{}].", index));
  SignalSpec signal;
  std::string aggregation;
  ARGUS_TRY_ASSIGN(signal.name, r.text("name", true));
  ARGUS_TRY_ASSIGN(signal.unit, r.text("unit", true));
  ARGUS_TRY_ASSIGN(aggregation, r.text("aggregation", true));
  ARGUS_TRY_ASSIGN(signal.description, r.text("description", false));
  if (auto ok = r.noOthers("name, unit, aggregation, description"); !ok)
    return std::unexpected(ok.error());
  static const std::pair<std::string_view, Aggregation> kinds[] = {
      {"additive", Aggregation::Additive},
      {"ratio", Aggregation::Ratio},
      {"distribution", Aggregation::Distribution},
      {"mapping", Aggregation::Mapping}};
  auto it = std::find_if(std::begin(kinds), std::end(kinds),
                         [&](const auto& k) { return k.first == aggregation; });
  if (it == std::end(kinds))
    return std::unexpected(
        r.error("aggregation", fmt::format("`{}` is not one of additive, ratio, distribution, "
                                           "mapping",
                                           aggregation)));
  signal.aggregation = it->second;
  return signal;
}

}  // namespace

std::string_view qualificationName(Qualification q) {
  switch (q) {
    case Qualification::Observed:
      return "observed";
    case Qualification::Attributed:
      return "attributed";
    case Qualification::Derived:
      return "derived";
  }
  return "?";
}

std::string_view aggregationName(Aggregation a) {
  switch (a) {
    case Aggregation::Additive:
      return "additive";
    case Aggregation::Ratio:
      return "ratio";
    case Aggregation::Distribution:
      return "distribution";
    case Aggregation::Mapping:
      return "mapping";
  }
  return "?";
}

std::string_view recipeKindName(RecipeKind k) {
  switch (k) {
    case RecipeKind::Collect:
      return "collect";
    case RecipeKind::Analysis:
      return "analysis";
    case RecipeKind::Discovery:
      return "discovery";
  }
  return "?";
}

namespace {

/// parseRecipe, throwing YAML::Exception where a node is not of the shape read.
Result<Recipe> parseRecipeFields(std::string_view yaml, const fs::path& file) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return fail("recipes", fmt::format("{}:{}:{}: not valid YAML: {}", file.string(),
                                       e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap())
    return fail("recipes", fmt::format("{}: a recipe file must be a YAML mapping", file.string()));
  FieldReader r(root, file, "");
  Recipe recipe;
  recipe.file = file;
  std::string kind, qualification, isolatedText;
  std::vector<std::string> scopeNames;
  ARGUS_TRY_ASSIGN(recipe.name, r.text("name", true));
  ARGUS_TRY_ASSIGN(recipe.description, r.text("description", true));
  ARGUS_TRY_ASSIGN(kind, r.text("kind", true));
  ARGUS_TRY_ASSIGN(qualification, r.text("qualification", true));
  ARGUS_TRY_ASSIGN(recipe.backend, r.text("backend", true));
  ARGUS_TRY_ASSIGN(recipe.evidence, r.text("evidence", true));
  ARGUS_TRY_ASSIGN(recipe.variant, r.text("variant", true));
  ARGUS_TRY_ASSIGN(recipe.synthesis, r.text("synthesis", true));
  ARGUS_TRY_ASSIGN(recipe.transforms, r.list("transforms"));
  ARGUS_TRY_ASSIGN(recipe.cubinEdits, r.list("cubin_edits"));
  ARGUS_TRY_ASSIGN(recipe.prerequisites, r.list("prerequisites"));
  ARGUS_TRY_ASSIGN(recipe.scopeThrough, r.text("scope_through", false));
  ARGUS_TRY_ASSIGN(scopeNames, r.list("retained_scope"));
  ARGUS_TRY_ASSIGN(recipe.effects, r.list("effects"));
  ARGUS_TRY_ASSIGN(recipe.invalidatedBy, r.list("invalidated_by"));
  ARGUS_TRY_ASSIGN(recipe.exclusions, r.list("exclusions"));
  ARGUS_TRY_ASSIGN(recipe.requirements, r.list("requires"));
  ARGUS_TRY_ASSIGN(recipe.isolated, r.flag("isolated"));

  const YAML::Node signals = root["signals"];
  if (!signals || !signals.IsSequence() || signals.size() == 0)
    return std::unexpected(r.error("signals", "must be a non-empty list of signals"));
  for (size_t i = 0; i < signals.size(); ++i) {
    auto signal = parseSignal(signals[i], file, i);
    if (!signal) return std::unexpected(signal.error());
    recipe.signals.push_back(std::move(*signal));
  }
  r.markRead("signals");
  if (auto ok = r.noOthers(kRecipeFields); !ok) return std::unexpected(ok.error());

  if (kind == "collect")
    recipe.kind = RecipeKind::Collect;
  else if (kind == "analysis")
    recipe.kind = RecipeKind::Analysis;
  else if (kind == "discovery")
    recipe.kind = RecipeKind::Discovery;
  else
    return std::unexpected(
        r.error("kind", fmt::format("`{}` is not one of collect, analysis, discovery", kind)));

  if (qualification == "observed")
    recipe.qualification = Qualification::Observed;
  else if (qualification == "attributed")
    recipe.qualification = Qualification::Attributed;
  else if (qualification == "derived")
    recipe.qualification = Qualification::Derived;
  else
    return std::unexpected(
        r.error("qualification",
                fmt::format("`{}` is not one of observed, attributed, derived", qualification)));

  if (!inVocabulary(kVariants, recipe.variant))
    return std::unexpected(
        r.error("variant", fmt::format("`{}` is not one of {}", recipe.variant, join(kVariants))));
  if ((recipe.kind == RecipeKind::Collect) == (recipe.variant == "none"))
    return std::unexpected(r.error("variant",
                                   "a collect recipe runs a variant other than `none`; analysis "
                                   "and discovery recipes use `none`"));
  for (const auto& e : recipe.effects)
    if (!inVocabulary(kEffects, e))
      return std::unexpected(
          r.error("effects", fmt::format("`{}` is not one of {}", e, join(kEffects))));
  for (const auto& e : recipe.invalidatedBy)
    if (!inVocabulary(kEffects, e))
      return std::unexpected(
          r.error("invalidated_by", fmt::format("`{}` is not one of {}", e, join(kEffects))));
  for (const auto& e : recipe.cubinEdits)
    if (!inVocabulary(kCubinEdits, e))
      return std::unexpected(
          r.error("cubin_edits", fmt::format("`{}` is not one of {}", e, join(kCubinEdits))));
  for (const auto& q : recipe.requirements)
    if (!inVocabulary(kRequirements, q))
      return std::unexpected(
          r.error("requires", fmt::format("`{}` is not one of {}", q, join(kRequirements))));
  for (const auto& name : scopeNames) {
    auto c = query::coordinateFromName(name);
    if (!c)
      return std::unexpected(r.error(
          "retained_scope",
          fmt::format(
              "`{}` is not a scope coordinate (role, warp, warpgroup, iter, sm, cta, launch)",
              name)));
    recipe.retainedScope.push_back(*c);
  }
  return recipe;
}

}  // namespace

Result<Recipe> parseRecipe(std::string_view yaml, const fs::path& file) {
  try {
    return parseRecipeFields(yaml, file);
  } catch (const YAML::Exception& e) {
    // What the field checks did not foresee (a list where a map belongs, ...): still a place.
    return fail("recipes", fmt::format("{}:{}:{}: {}", file.string(), e.mark.line + 1,
                                       e.mark.column + 1, e.msg));
  }
}

Result<RecipeCatalog> RecipeCatalog::load(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return fail("recipes", fmt::format("recipe directory `{}` does not exist; set $ARGUS_RECIPES "
                                       "to the recipes/ folder of the Argus source tree",
                                       dir.string()));
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  RecipeCatalog catalog;
  for (const auto& file : files) {
    auto text = readFile(file);
    if (!text) return std::unexpected(text.error());
    auto recipe = parseRecipe(*text, file);
    if (!recipe) return std::unexpected(recipe.error());
    if (catalog.find(recipe->name) != nullptr)
      return fail("recipes",
                  fmt::format("{}: recipe `{}` is defined twice", file.string(), recipe->name));
    for (const auto& s : recipe->signals)
      if (const Recipe* other = catalog.producing(s.name))
        return fail("recipes",
                    fmt::format("{}: signal `{}` is already produced by recipe `{}` ({})",
                                file.string(), s.name, other->name, other->file.string()));
    catalog.recipes_.push_back(std::move(*recipe));
  }
  for (const auto& recipe : catalog.recipes_) {
    for (const auto& p : recipe.prerequisites)
      if (catalog.find(p) == nullptr)
        return fail("recipes", fmt::format("{}: field `prerequisites`: no recipe named `{}`",
                                           recipe.file.string(), p));
    if (!recipe.scopeThrough.empty()) {
      const Recipe* through = catalog.find(recipe.scopeThrough);
      if (through == nullptr || through->kind != RecipeKind::Collect || through->isolated)
        return fail("recipes", fmt::format("{}: field `scope_through`: `{}` is no collect recipe "
                                           "whose occurrences could scope it",
                                           recipe.file.string(), recipe.scopeThrough));
    }
    for (const auto& x : recipe.exclusions)
      if (catalog.find(x) == nullptr)
        return fail("recipes", fmt::format("{}: field `exclusions`: no recipe named `{}`",
                                           recipe.file.string(), x));
  }
  if (catalog.recipes_.empty())
    return fail("recipes", fmt::format("no *.yaml recipes in `{}`", dir.string()));
  return catalog;
}

fs::path RecipeCatalog::defaultDirectory() {
  if (const char* env = std::getenv("ARGUS_RECIPES"); env && *env) return env;
  return ARGUS_RECIPE_DIR;
}

const Recipe* RecipeCatalog::find(std::string_view name) const {
  for (const auto& r : recipes_)
    if (r.name == name) return &r;
  return nullptr;
}

const Recipe* RecipeCatalog::producing(std::string_view signal) const {
  for (const auto& r : recipes_)
    for (const auto& s : r.signals)
      if (s.name == signal) return &r;
  return nullptr;
}

std::vector<std::string> RecipeCatalog::signalNames() const {
  std::vector<std::string> names;
  for (const auto& r : recipes_)
    for (const auto& s : r.signals) names.push_back(s.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::string recipesMarkdown(const RecipeCatalog& catalog) {
  auto list = [](const std::vector<std::string>& items) {
    if (items.empty()) return std::string("—");
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "`" : ", `") + i + "`";
    return out;
  };
  std::string md =
      "# Recipes\n\n"
      "Generated by `argus recipes --markdown` from `recipes/*.yaml`; do not edit by hand.\n\n"
      "| signal | unit | aggregation | qualification | recipe |\n| --- | --- | --- | --- | --- |\n";
  for (const auto& r : catalog.recipes())
    for (const auto& s : r.signals)
      md += fmt::format("| `{}` | {} | {} | {} | [{}](#{}) |\n", s.name, s.unit,
                        aggregationName(s.aggregation), qualificationName(r.qualification), r.name,
                        r.name);
  for (const auto& r : catalog.recipes()) {
    std::vector<std::string> scope;
    for (auto c : r.retainedScope) scope.emplace_back(query::coordinateName(c));
    md += fmt::format("\n## {}\n\n{}\n\n", r.name, r.description);
    md += fmt::format("- kind: {}; backend: `{}`; evidence: `{}`; variant: `{}`\n",
                      recipeKindName(r.kind), r.backend, r.evidence, r.variant);
    md += fmt::format("- transforms: {}{}; prerequisites: {}\n", list(r.transforms),
                      r.cubinEdits.empty() ? "" : "; cubin edits: " + list(r.cubinEdits),
                      list(r.prerequisites));
    md += fmt::format("- retained scope: {}{}\n", list(scope),
                      r.scopeThrough.empty()
                          ? ""
                          : fmt::format("; scoped through `{}`'s occurrences", r.scopeThrough));
    md += fmt::format("- effects: {}; invalidated by: {}; exclusions: {}{}\n", list(r.effects),
                      list(r.invalidatedBy), list(r.exclusions),
                      r.isolated ? "; every instance runs alone" : "");
    md += fmt::format("- requires: {}; synthesis: `{}`; qualification: {}\n", list(r.requirements),
                      r.synthesis, qualificationName(r.qualification));
    for (const auto& s : r.signals)
      md +=
          fmt::format("- signal `{}` ({}, {}){}\n", s.name, s.unit, aggregationName(s.aggregation),
                      s.description.empty() ? "" : ": " + s.description);
  }
  return md;
}

}  // namespace argus::planner
