#include "argus/planner/recipe.h"

#include <gtest/gtest.h>

#include "argus/support/process.h"

namespace argus::planner {
namespace {

const char* kMinimal = R"(name: t
description: a test recipe
kind: collect
signals:
  - {name: duration, unit: ns, aggregation: distribution}
qualification: observed
backend: region_trace
evidence: region_trace
variant: full_trace
retained_scope: [iter, sm]
effects: [perturbs_timing]
invalidated_by: [patches_binary]
requires: [gpu]
synthesis: region_timing
)";

TEST(Recipe, ParsesEveryField) {
  auto r = parseRecipe(kMinimal, "t.yaml");
  ASSERT_TRUE(r) << r.error().text();
  EXPECT_EQ(r->name, "t");
  EXPECT_EQ(r->kind, RecipeKind::Collect);
  ASSERT_EQ(r->signals.size(), 1u);
  EXPECT_EQ(r->signals[0].aggregation, Aggregation::Distribution);
  EXPECT_EQ(r->retainedScope,
            (std::vector<query::Coordinate>{query::Coordinate::Iteration, query::Coordinate::Sm}));
  EXPECT_EQ(r->effects, (std::vector<std::string>{"perturbs_timing"}));
  EXPECT_FALSE(r->isolated);
}

struct BadRecipe {
  std::string from;  // text in kMinimal to replace
  std::string to;
  std::string expected;  // substring of the error
};

class RecipeRejects : public ::testing::TestWithParam<BadRecipe> {};

TEST_P(RecipeRejects, NamingTheFileAndField) {
  std::string text = kMinimal;
  const auto& p = GetParam();
  size_t at = text.find(p.from);
  ASSERT_NE(at, std::string::npos) << p.from;
  text.replace(at, p.from.size(), p.to);
  auto r = parseRecipe(text, "recipes/bad.yaml");
  ASSERT_FALSE(r) << text;
  EXPECT_EQ(r.error().component, "recipes");
  EXPECT_NE(r.error().message.find("recipes/bad.yaml"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(p.expected), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Fields, RecipeRejects,
    ::testing::Values(
        BadRecipe{"name: t\n", "", "field `name`: is required"},
        BadRecipe{"kind: collect", "kind: gather", "field `kind`: `gather` is not one of"},
        BadRecipe{"qualification: observed", "qualification: measured", "field `qualification`"},
        BadRecipe{"variant: full_trace", "variant: fancy", "field `variant`: `fancy`"},
        BadRecipe{"variant: full_trace", "variant: none", "field `variant`: a collect recipe"},
        BadRecipe{"effects: [perturbs_timing]", "effects: [melts_gpu]", "field `effects`"},
        BadRecipe{"invalidated_by: [patches_binary]", "invalidated_by: patches_binary",
                  "field `invalidated_by`: must be a list"},
        BadRecipe{"retained_scope: [iter, sm]", "retained_scope: [lane]", "field `retained_scope`"},
        BadRecipe{"requires: [gpu]", "requires: [tpu]", "field `requires`"},
        BadRecipe{"requires: [gpu]", "requires: [gpu]\ncubin_edits: [inline_all]",
                  "field `cubin_edits`: `inline_all` is not one of copy_callees"},
        BadRecipe{"aggregation: distribution", "aggregation: average",
                  "field `signals[0].aggregation`"},
        BadRecipe{"unit: ns, ", "", "field `signals[0].unit`: is required"},
        BadRecipe{"synthesis: region_timing", "synthesis: region_timing\ncolour: red",
                  "field `colour`: is not a recipe field"},
        BadRecipe{"name: t", "name: [t", "not valid YAML"}));

TEST(RecipeCatalog, LoadsTheShippedCatalog) {
  auto catalog = RecipeCatalog::load(ARGUS_RECIPE_DIR);
  ASSERT_TRUE(catalog) << catalog.error().text();
  // The signal names of docs/architecture.md ("Interface names") must all be produced by some
  // recipe.
  for (const char* signal : {"duration", "occurrences", "kernel_duration", "inst_executed",
                             "inst_mix", "barrier_inst", "mem_inst", "stall_reasons", "op_latency",
                             "ncu_source_counters", "pc_region_map", "op_sites"}) {
    const Recipe* r = catalog->producing(signal);
    ASSERT_NE(r, nullptr) << signal;
  }
  EXPECT_EQ(catalog->producing("duration")->qualification, Qualification::Observed);
  EXPECT_EQ(catalog->producing("inst_mix")->qualification, Qualification::Attributed);
  EXPECT_EQ(catalog->producing("op_latency")->qualification, Qualification::Derived);
  EXPECT_TRUE(catalog->producing("op_latency")->isolated);
  EXPECT_EQ(catalog->producing("op_sites")->kind, RecipeKind::Discovery);
  // Per-PC counters: scoped through the trace's occurrences; the mapping build copies callees.
  EXPECT_EQ(catalog->producing("inst_mix")->scopeThrough, "reference_trace");
  EXPECT_EQ(catalog->producing("stall_reasons")->scopeThrough, "reference_trace");
  EXPECT_EQ(catalog->producing("pc_region_map")->cubinEdits,
            std::vector<std::string>{"copy_callees"});
}

TEST(RecipeCatalog, UnknownPrerequisiteAndDuplicatesAreRejected) {
  auto dir = makeTempDir("argus-recipes");
  ASSERT_TRUE(dir);
  std::string withPrereq = std::string(kMinimal) + "prerequisites: [nothing_here]\n";
  ASSERT_TRUE(writeFile(*dir / "a.yaml", withPrereq));
  auto r = RecipeCatalog::load(*dir);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no recipe named `nothing_here`"), std::string::npos)
      << r.error().message;
  // scope_through must name a collect recipe whose occurrences could scope it.
  ASSERT_TRUE(writeFile(*dir / "a.yaml", std::string(kMinimal) + "scope_through: nothing_here\n"));
  r = RecipeCatalog::load(*dir);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("field `scope_through`: `nothing_here` is no collect recipe"),
            std::string::npos)
      << r.error().message;
  ASSERT_TRUE(writeFile(*dir / "a.yaml", kMinimal));
  ASSERT_TRUE(writeFile(*dir / "b.yaml", kMinimal));
  r = RecipeCatalog::load(*dir);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("defined twice"), std::string::npos) << r.error().message;
  std::filesystem::remove_all(*dir);
}

TEST(RecipeCatalog, DocsAreGeneratedFromTheRecipes) {
  auto catalog = RecipeCatalog::load(ARGUS_RECIPE_DIR);
  ASSERT_TRUE(catalog);
  auto docs = readFile(std::string(ARGUS_SOURCE_DIR) + "/docs/recipes.md");
  ASSERT_TRUE(docs) << "docs/recipes.md missing: build/argus recipes --markdown > docs/recipes.md";
  EXPECT_EQ(*docs, recipesMarkdown(*catalog))
      << "docs/recipes.md is stale: build/argus recipes --markdown > docs/recipes.md";
}

}  // namespace
}  // namespace argus::planner
