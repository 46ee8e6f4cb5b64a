// clone_shared_callees: one copy per calling context, call sites rewritten transitively, the
// clone map and paint map say which original instruction and which single owner each copy's
// instruction has; the shared_callee example's cloned + painted build assembles and maps every
// painted PC of a copy to exactly one owner.
#include <gtest/gtest.h>

#include <set>

#include <fmt/format.h>

#include "argus/ptx/regions.h"
#include "call_contexts.h"
#include "test_util.h"

namespace argus::passes {
namespace {

using namespace testing;

// g is called from f; f from regions a and b of k, and from outside every region.
constexpr const char* kShared =
    ".version 8.0\n.target sm_90a\n.address_size 64\n"
    ".func (.param .b32 g_ret) g(.param .b32 g_p)\n{\n"
    "\t.reg .b32 %r<3>;\n"
    "\tld.param.b32 %r1, [g_p];\n"
    "\tadd.s32 %r2, %r1, 1;\n"
    "\tst.param.b32 [g_ret], %r2;\n"
    "\tret;\n}\n"
    ".func (.param .b32 f_ret) f(.param .b32 f_p)\n{\n"
    "\t.reg .b32 %r<3>;\n"
    "\tld.param.b32 %r1, [f_p];\n"
    "\t// @argus begin inner\n"
    "\t{\n\t.param .b32 q0;\n\tst.param.b32 [q0], %r1;\n\t.param .b32 s0;\n"
    "\tcall.uni (s0), g, (q0);\n\tld.param.b32 %r2, [s0];\n\t}\n"
    "\t// @argus end inner\n"
    "\tst.param.b32 [f_ret], %r2;\n"
    "\tret;\n}\n"
    ".visible .entry k(.param .u64 k_param_0)\n{\n"
    "\t.reg .b32 %r<6>;\n"
    "\tmov.u32 %r1, 1;\n"
    "\t// @argus begin a\n"
    "\t{\n\t.param .b32 p0;\n\tst.param.b32 [p0], %r1;\n\t.param .b32 r0;\n"
    "\tcall.uni (r0), f, (p0);\n\tld.param.b32 %r2, [r0];\n\t}\n"
    "\t// @argus end a\n"
    "\t// @argus begin b\n"
    "\t{\n\t.param .b32 p1;\n\tst.param.b32 [p1], %r2;\n\t.param .b32 r1;\n"
    "\tcall.uni (r1), f, (p1);\n\tld.param.b32 %r3, [r1];\n\t}\n"
    "\t{\n\t.param .b32 p2;\n\tst.param.b32 [p2], %r3;\n\t.param .b32 r2;\n"
    "\tcall.uni (r2), f, (p2);\n\tld.param.b32 %r4, [r2];\n\t}\n"
    "\t// @argus end b\n"
    "\t{\n\t.param .b32 p3;\n\tst.param.b32 [p3], %r4;\n\t.param .b32 r3;\n"
    "\tcall.uni (r3), g, (p3);\n\tld.param.b32 %r5, [r3];\n\t}\n"
    "\tret;\n}\n";

std::vector<std::string> calleesOf(const ptx::Function& f) {
  std::vector<std::string> out;
  for (const auto& s : f.body) {
    if (auto callee = directCallee(s); !callee.empty()) out.push_back(callee);
  }
  return out;
}

std::string copyName(const std::string& function, const std::string& path) {
  return fmt::format("{}__argus_{}", function, ptx::regionId("k", path));
}

TEST(CloneSharedCallees, OneCopyPerCallingContextTransitively) {
  auto module = ptx::parseModule(kShared, "k.ptx");
  ASSERT_TRUE(module.has_value()) << module.error().text();
  const ptx::Module original = *module;
  auto result = applyTransforms(*module, {"clone_shared_callees"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();

  const std::string fa = copyName("f", "a");
  const std::string fb = copyName("f", "b");
  const std::string ga = copyName("g", "a/inner");
  const std::string gb = copyName("g", "b/inner");
  const std::string gRoot = copyName("g", "");
  // f and g are gone, replaced by their copies; the kernel calls the copy of each context.
  EXPECT_EQ(module->findFunction("f"), nullptr);
  EXPECT_EQ(module->findFunction("g"), nullptr);
  for (const auto& name : {fa, fb, ga, gb, gRoot}) {
    ASSERT_NE(module->findFunction(name), nullptr) << name;
  }
  EXPECT_EQ(calleesOf(*module->findFunction("k")), (std::vector<std::string>{fa, fb, fb, gRoot}));
  EXPECT_EQ(calleesOf(*module->findFunction(fa)), (std::vector<std::string>{ga}));
  EXPECT_EQ(calleesOf(*module->findFunction(fb)), (std::vector<std::string>{gb}));
  // Bodies are copied statement for statement.
  EXPECT_EQ(module->findFunction(fa)->body.size(), original.findFunction("f")->body.size());

  const auto& map = result->cloneMap;
  EXPECT_EQ(map["format"], "argus_clone_map 1");
  EXPECT_EQ(map["functions"][gb]["original"], "g");
  EXPECT_EQ(map["functions"][gb]["owners"],
            (nlohmann::json{{{"kernel", "k"}, {"region", "b/inner"}}}));
  EXPECT_TRUE(map["functions"][gb]["cloned"].get<bool>());
  EXPECT_TRUE(map["unresolved"].empty());
  EXPECT_EQ(result->statistics["clone_shared_callees"]["clones"], 5);
  EXPECT_EQ(result->statistics["clone_shared_callees"]["functions_cloned"], 2);

  // Printed PTX parses again and keeps declaration before use.
  const std::string printed = ptx::printModule(*module);
  auto reparsed = ptx::parseModule(printed, "cloned.ptx");
  ASSERT_TRUE(reparsed.has_value()) << reparsed.error().text();
  EXPECT_LT(printed.find(ga + "("), printed.find(fa + "("));
}

TEST(CloneSharedCallees, PaintAfterCloneGivesEachCopyOneOwnerAndItsOrigin) {
  auto module = ptx::parseModule(kShared, "k.ptx");
  ASSERT_TRUE(module.has_value()) << module.error().text();
  auto result = applyTransforms(*module, {"clone_shared_callees", "paint_ptx"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string gb = copyName("g", "b/inner");
  size_t gbLines = 0;
  for (const auto& line : result->paintMap["lines"]) {
    ASSERT_EQ(line["owners"].size(), 1u) << line.dump();
    if (line["function"] != gb) continue;
    ++gbLines;
    EXPECT_EQ(line["owners"][0]["region"], "b/inner");
    EXPECT_EQ(line["origin"]["function"], "g");
    EXPECT_EQ(line["origin"]["statement"], line["statement"]);
  }
  EXPECT_EQ(gbLines, 4u);
  EXPECT_EQ(result->paintMap["functions"][gb]["origin"], "g");
}

TEST(CloneSharedCallees, PaintWithoutCloneListsEveryPossibleOwnerOfTheCallee) {
  auto module = ptx::parseModule(kShared, "k.ptx");
  ASSERT_TRUE(module.has_value()) << module.error().text();
  auto result = applyTransforms(*module, {"paint_ptx"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();
  std::set<std::string> gOwners;
  for (const auto& line : result->paintMap["lines"]) {
    if (line["function"] != "g") continue;
    EXPECT_EQ(line["origin"]["function"], "g");
    for (const auto& o : line["owners"]) gOwners.insert(o["region"].get<std::string>());
  }
  EXPECT_EQ(gOwners, (std::set<std::string>{"", "a/inner", "b/inner"}));
}

TEST(CloneSharedCallees, AmbiguousCallSiteKeepsSeveralOwnersAndSaysWhy) {
  // The call runs in `x` or `y` depending on %p1: no copy can have one owner.
  constexpr const char* kAmbiguous =
      ".version 8.0\n.target sm_90a\n.address_size 64\n"
      ".func h()\n{\n\tret;\n}\n"
      ".visible .entry k(.param .u32 k_param_0)\n{\n"
      "\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n"
      "\tld.param.u32 %r1, [k_param_0];\n"
      "\tsetp.eq.s32 %p1, %r1, 0;\n"
      "\t@%p1 bra $L_y;\n"
      "\t// @argus begin x\n"
      "\tbra.uni $L_call;\n"
      "$L_y:\n"
      "\t// @argus begin y\n"
      "$L_call:\n"
      "\tcall.uni h, ();\n"
      "\t@%p1 bra $L_endy;\n"
      "\t// @argus end x\n"
      "\tbra.uni $L_done;\n"
      "$L_endy:\n"
      "\t// @argus end y\n"
      "$L_done:\n"
      "\tret;\n}\n";
  auto module = ptx::parseModule(kAmbiguous, "k.ptx");
  ASSERT_TRUE(module.has_value()) << module.error().text();
  auto result = applyTransforms(*module, {"clone_shared_callees"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();
  ASSERT_EQ(result->cloneMap["unresolved"].size(), 1u) << result->cloneMap.dump(2);
  const auto& u = result->cloneMap["unresolved"][0];
  EXPECT_EQ(u["function"], "h");
  EXPECT_EQ(u["owners"].size(), 2u);
  EXPECT_NE(u["reason"].get<std::string>().find("data-dependent"), std::string::npos);
}

TEST(CloneSharedCallees, RefusesAPaintedModule) {
  auto module = ptx::parseModule(kShared, "k.ptx");
  ASSERT_TRUE(module.has_value());
  auto result = applyTransforms(*module, {"paint_ptx", "clone_shared_callees"}, {});
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().message.find("before paint_ptx"), std::string::npos)
      << result.error().text();
}

TEST(CloneSharedCallees, ExampleCopiesTheHelperPerRegionAndAssembles) {
  ptx::Module module = loadModule(dataDir() / "ptx" / "examples_shared_callee.ptx");
  ASSERT_FALSE(HasFailure());
  auto result = applyTransforms(module, {"clone_shared_callees", "paint_ptx"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string helper = "_Z12sharedHelperfi";
  EXPECT_EQ(module.findFunction(helper), nullptr);
  std::set<std::string> copies;
  for (const auto& [name, info] : result->cloneMap["functions"].items()) {
    EXPECT_EQ(info["original"], helper);
    ASSERT_EQ(info["owners"].size(), 1u);
    copies.insert(info["owners"][0]["region"].get<std::string>());
  }
  EXPECT_EQ(copies, (std::set<std::string>{"light", "heavy"}));

  auto dir = makeTempDir("argus-clone");
  ASSERT_TRUE(dir.has_value());
  auto cubin = sass::assemblePtx(ptx::printModule(module), module.target(), *dir, "cloned",
                                 /*lineInfo=*/true);
  if (!cubin && cubin.error().message.find("ptxas failed") == std::string::npos) {
    fs::remove_all(*dir);
    GTEST_SKIP() << cubin.error().text();
  }
  ASSERT_TRUE(cubin.has_value()) << cubin.error().text();
  auto entries = sass::readPcMap(*cubin, result->paintMap);
  fs::remove_all(*dir);
  if (!entries && !findTool("nvdisasm")) GTEST_SKIP() << entries.error().text();
  ASSERT_TRUE(entries.has_value()) << entries.error().text();
  std::map<std::string, size_t> perOwner;
  for (const auto& e : *entries) {
    if (!e.line) continue;
    ASSERT_EQ(e.owners.size(), 1u) << e.instruction;
    if (e.originFunction == helper) {
      EXPECT_NE(e.ptxFunction, helper);
      EXPECT_EQ(e.body, e.ptxFunction);  // each copy is its own SASS body
      ++perOwner[e.owners[0].region];
    }
  }
  EXPECT_GT(perOwner["light"], 0u);
  EXPECT_EQ(perOwner["light"], perOwner["heavy"]) << [&] {
    std::string all;
    for (const auto& e : *entries) {
      all += fmt::format("{:#06x} {:<12} {:<40} {}\n", e.pc, e.body, e.instruction,
                         e.line ? *e.line : 0);
    }
    return all;
  }();
}

}  // namespace
}  // namespace argus::passes
