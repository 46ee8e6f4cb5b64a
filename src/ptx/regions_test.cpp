#include "argus/ptx/regions.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ptx_test_util.h"

namespace argus::ptx {
namespace {

using testing::kernelPtx;
using testing::parseOrDie;
using testing::regionPaths;

std::string begin(const std::string& rest) {
  return "\t// begin inline asm\n\t// @argus begin " + rest + "\n\t// end inline asm\n";
}
std::string end(const std::string& name) {
  return "\t// begin inline asm\n\t// @argus end " + name + "\n\t// end inline asm\n";
}

Result<std::vector<FunctionRegions>> analyze(const std::string& body) {
  auto module = parseModule(kernelPtx(body), "test.ptx");
  if (!module) return std::unexpected(module.error());
  return analyzeRegions(*module);
}

/// Paths of the regions owning the first instruction whose opcode is `opcode`.
std::vector<std::string> ownersOf(const Module& m, const FunctionRegions& f,
                                  const std::string& opcode) {
  const Function& fn = *m.functions().front();
  for (size_t i = 0; i < fn.body.size(); ++i) {
    if (fn.body[i].kind != Statement::Kind::Instruction || fn.body[i].instruction.opcode != opcode)
      continue;
    std::vector<std::string> out;
    for (uint32_t r : f.owners[i]) out.push_back(f.regions[r].path);
    return out;
  }
  ADD_FAILURE() << "no " << opcode;
  return {};
}

TEST(Marker, ParsesBeginWithCoordinates) {
  auto m = parseMarker(" @argus begin body iter=%r12 role=producer");
  ASSERT_TRUE(m && *m);
  EXPECT_EQ((*m)->kind, Marker::Kind::Begin);
  EXPECT_EQ((*m)->name, "body");
  EXPECT_EQ((*m)->iteration, "%r12");
  EXPECT_EQ((*m)->role, "producer");
}

TEST(Marker, OrdinaryCommentsAreNotMarkers) {
  auto m = parseMarker(" begin inline asm");
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->has_value());
}

TEST(Marker, MalformedMarkersAreErrors) {
  for (const char* text :
       {" @argus begin", " @argus start x", " @argus begin a/b", " @argus end x iter=%r1",
        " @argus begin x color=red", " @argus begin 9lives"}) {
    auto m = parseMarker(text);
    ASSERT_FALSE(m) << text;
    EXPECT_NE(m.error().message.find("malformed marker"), std::string::npos) << text;
  }
}

TEST(Regions, NestedRegionInsideALoop) {
  std::string text =
      kernelPtx("\tld.param.u32 \t%r1, [k_param_0];\n" + begin("main") + "\tmov.u32 \t%r2, 0;\n" +
                "$L__BB0_1:\n" + begin("body iter=%r2") + "\tadd.s32 \t%r2, %r2, 1;\n" +
                "\tsetp.lt.s32 \t%p1, %r2, %r1;\n" + end("body") + "\t@%p1 bra \t$L__BB0_1;\n" +
                end("main") + "\tret;\n");
  Module m = parseOrDie(text);
  auto all = analyzeRegions(m);
  ASSERT_TRUE(all) << all.error().text();
  ASSERT_EQ(all->size(), 1u);
  const auto& f = all->front();
  EXPECT_EQ(regionPaths(f), (std::vector<std::string>{"main", "main/body"}));
  EXPECT_FALSE(f.regions[0].parent.has_value());
  EXPECT_EQ(f.regions[1].parent, 0u);
  EXPECT_EQ(f.regions[0].children, (std::vector<uint32_t>{1}));
  ASSERT_EQ(f.regions[1].begins.size(), 1u);
  EXPECT_EQ(f.regions[1].begins[0].iteration, "%r2");
  EXPECT_EQ(ownersOf(m, f, "add.s32"), (std::vector<std::string>{"main/body"}));
  EXPECT_EQ(ownersOf(m, f, "mov.u32"), (std::vector<std::string>{"main"}));
  EXPECT_EQ(ownersOf(m, f, "bra"), (std::vector<std::string>{"main"}));
  EXPECT_TRUE(ownersOf(m, f, "ld.param.u32").empty());
  EXPECT_TRUE(f.warnings.empty());
}

TEST(Regions, WarpRoleBranchesGiveSiblingRegions) {
  auto all = analyze(begin("main") + "\t@%p1 bra \t$L__else;\n" + begin("producer role=producer") +
                     "\tmov.u32 \t%r1, 1;\n" + end("producer") + "\tbra.uni \t$L__join;\n" +
                     "$L__else:\n" + begin("consumer role=consumer") + "\tmov.u32 \t%r1, 2;\n" +
                     end("consumer") + "$L__join:\n" + end("main") + "\tret;\n");
  ASSERT_TRUE(all) << all.error().text();
  const auto& f = all->front();
  EXPECT_EQ(regionPaths(f), (std::vector<std::string>{"main", "main/producer", "main/consumer"}));
  EXPECT_EQ(f.regions[1].begins[0].role, "producer");
  EXPECT_EQ(f.regions[2].begins[0].role, "consumer");
}

TEST(Regions, OneRegionEnteredFromTwoBranches) {
  auto all = analyze("\t@%p1 bra \t$L__b;\n" + begin("shared") + "\tbra.uni \t$L__join;\n" +
                     "$L__b:\n" + begin("shared") + "$L__join:\n" + "\tadd.s32 \t%r1, %r1, 1;\n" +
                     end("shared") + "\tret;\n");
  ASSERT_TRUE(all) << all.error().text();
  const auto& f = all->front();
  ASSERT_EQ(regionPaths(f), (std::vector<std::string>{"shared"}));
  EXPECT_EQ(f.regions[0].begins.size(), 2u);
  EXPECT_EQ(f.regions[0].ends.size(), 1u);
  EXPECT_TRUE(f.warnings.empty());
}

TEST(Regions, DataDependentMarkersListEveryPossibleOwner) {
  std::string text = kernelPtx(
      "\t@%p1 bra \t$L__b;\n" + begin("a") + "\tbra.uni \t$L__work;\n" + "$L__b:\n" + begin("b") +
      "$L__work:\n" + "\tadd.s32 \t%r1, %r1, 1;\n" + "\t@%p1 bra \t$L__endb;\n" + end("a") +
      "\tbra.uni \t$L__done;\n" + "$L__endb:\n" + end("b") + "$L__done:\n" + "\tret;\n");
  Module m = parseOrDie(text);
  auto all = analyzeRegions(m);
  ASSERT_TRUE(all) << all.error().text();
  const auto& f = all->front();
  EXPECT_EQ(ownersOf(m, f, "add.s32"), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(f.warnings.empty());  // path-insensitive: `end a` may see `b` open
}

TEST(Regions, SameNameUnderDifferentParentsIsADifferentRegion) {
  auto all = analyze(begin("x") + begin("body") + end("body") + end("x") + begin("y") +
                     begin("body") + end("body") + end("y") + "\tret;\n");
  ASSERT_TRUE(all) << all.error().text();
  const auto& f = all->front();
  ASSERT_EQ(regionPaths(f), (std::vector<std::string>{"x", "x/body", "y", "y/body"}));
  EXPECT_NE(f.regions[1].id, f.regions[3].id);
  EXPECT_EQ(f.regions[1].id, regionId("k", "x/body"));
}

// Issue 29, defect 6: two sibling regions of one name were silently merged into one.
TEST(Regions, SiblingsOfOneNameFromTwoMarkersAreAnErrorNamingBoth) {
  auto all =
      analyze("\t.loc\t1 10 3\n" + begin("a") + "\tmov.u32 \t%r1, 1;\n" + end("a") +
              "\t.loc\t1 12 3\n" + begin("a") + "\tmov.u32 \t%r1, 2;\n" + end("a") + "\tret;\n");
  ASSERT_FALSE(all);
  const std::string msg = all.error().message;
  EXPECT_NE(msg.find("/src/k.cu:12 (test.ptx:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("`begin a` opens region `a` again after its end"), std::string::npos) << msg;
  EXPECT_NE(msg.find("opened it at /src/k.cu:10 (test.ptx:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("give them different names"), std::string::npos) << msg;

  // Also inside a loop body, after a branch between them.
  auto loop = analyze("$L__top:\n\t.loc\t1 10 3\n" + begin("a") + end("a") +
                      "\t@%p1 bra \t$L__skip;\n\tmov.u32 \t%r1, 1;\n$L__skip:\n\t.loc\t1 14 3\n" +
                      begin("a") + end("a") + "\t@%p2 bra \t$L__top;\n\tret;\n");
  ASSERT_FALSE(loop);
  EXPECT_NE(loop.error().message.find("opened it at /src/k.cu:10"), std::string::npos)
      << loop.error().message;
}

TEST(Regions, OneRegionFromBranchesOrCopiesOfOneMarkerIsNoSiblingError) {
  // Two branches enter one region (examples/nested_regions' `combine`), in a loop.
  auto branches = analyze("$L__top:\n\t@%p1 bra \t$L__b;\n\t.loc\t1 10 3\n" + begin("shared") +
                          "\tbra.uni \t$L__join;\n$L__b:\n\t.loc\t1 12 3\n" + begin("shared") +
                          "$L__join:\n\tadd.s32 \t%r1, %r1, 1;\n" + end("shared") +
                          "\t@%p2 bra \t$L__top;\n\tret;\n");
  ASSERT_TRUE(branches) << branches.error().text();
  EXPECT_EQ(branches->front().regions.at(0).begins.size(), 2u);
  // An unrolled loop: copies of one marker, one source line.
  std::string unrolled;
  for (int i = 0; i < 4; ++i)
    unrolled += "\t.loc\t1 20 5\n" + begin("body") + "\tadd.s32 \t%r1, %r1, 1;\n" + end("body");
  auto copies = analyze(unrolled + "\tret;\n");
  ASSERT_TRUE(copies) << copies.error().text();
  EXPECT_EQ(copies->front().regions.at(0).begins.size(), 4u);
}

TEST(Regions, IdsIgnoreUnrelatedEditsAndLocations) {
  auto a = analyze(begin("main") + "\tmov.u32 \t%r1, 1;\n" + end("main") + "\tret;\n");
  auto b = analyze("\tmov.u32 \t%r3, 7;\n\tadd.s32 \t%r3, %r3, %r3;\n" + begin("main") +
                   "\tmov.u32 \t%r1, 2;\n\tmov.u32 \t%r2, 1;\n" + end("main") + "\tret;\n");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->front().regions[0].id, b->front().regions[0].id);
  EXPECT_EQ(a->front().regions[0].id.size(), 16u);
  EXPECT_NE(regionId("k", "main"), regionId("k2", "main"));
}

TEST(Regions, CrossingMarkersNameBothRegionsAndTheLine) {
  auto all = analyze(begin("outer") + begin("inner") + end("outer") + end("inner") + "\tret;\n");
  ASSERT_FALSE(all);
  const std::string msg = all.error().message;
  EXPECT_EQ(all.error().component, "regions");
  EXPECT_NE(msg.find("`end outer` closes `inner`"), std::string::npos) << msg;
  EXPECT_NE(msg.find("test.ptx:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("markers must nest"), std::string::npos) << msg;
}

TEST(Regions, EndWithoutBegin) {
  auto all = analyze(end("ghost") + "\tret;\n");
  ASSERT_FALSE(all);
  EXPECT_NE(all.error().message.find("`end ghost` with no region open"), std::string::npos)
      << all.error().message;
}

TEST(Regions, RegionOpenAtReturn) {
  auto all = analyze(begin("main") + "\tmov.u32 \t%r1, 1;\n\tret;\n");
  ASSERT_FALSE(all);
  EXPECT_NE(all.error().message.find("region `main`"), std::string::npos) << all.error().message;
  EXPECT_NE(all.error().message.find("still open at `ret`"), std::string::npos)
      << all.error().message;
}

TEST(Regions, RegionOpenAtExit) {
  auto all = analyze(begin("main") + "\texit;\n" + end("main") + "\tret;\n");
  ASSERT_FALSE(all);
  EXPECT_NE(all.error().message.find("still open at `exit`"), std::string::npos)
      << all.error().message;
}

TEST(Regions, BeginInALoopWithoutEndIsReportedNotLoopedOn) {
  auto all = analyze("$L__top:\n" + begin("x") + "\t@%p1 bra \t$L__top;\n" + end("x") + "\tret;\n");
  ASSERT_FALSE(all);
  EXPECT_NE(all.error().message.find("cannot contain itself"), std::string::npos)
      << all.error().message;
}

TEST(Regions, MessagesNameTheSourceLineFromLoc) {
  auto all = analyze("\t.loc\t1 30 5\n" + begin("outer") + "\t.loc\t1 42 5\n" + end("missing") +
                     "\tret;\n");
  ASSERT_FALSE(all);
  const std::string msg = all.error().message;
  EXPECT_NE(msg.find("/src/k.cu:42"), std::string::npos) << msg;
  EXPECT_NE(msg.find("opened at /src/k.cu:30 (test.ptx:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("/src/k.cu:30"), std::string::npos) << msg;
}

TEST(Regions, MalformedMarkerIsAnErrorWithItsLine) {
  auto all = analyze("\t// @argus begin\n\tret;\n");
  ASSERT_FALSE(all);
  EXPECT_NE(all.error().message.find("test.ptx:"), std::string::npos) << all.error().message;
}

// Argus's Triton markers (python/argus/triton.py) are helpers that Triton inlines, so the `.loc`
// at a marker names the helper (triton.py); the region's source is the call in the kernel, from
// the DWARF inlined-call ranges of the PTX (Triton 3.6, examples/triton_matmul/kernel.py).
TEST(Regions, TritonMarkerSourcesAreTheKernelsCallsNotTheHelper) {
  std::ifstream in(std::filesystem::path(ARGUS_TEST_DATA_DIR) / "ptx" /
                   "triton_matmul_tma_argus.ptx");
  std::stringstream text;
  text << in.rdbuf();
  auto module = parseModule(text.str(), "triton_matmul_tma_argus.ptx");
  ASSERT_TRUE(module) << module.error().text();
  auto all = analyzeRegions(*module);
  ASSERT_TRUE(all) << all.error().text();
  const auto& regions = all->front().regions;
  ASSERT_EQ(regionPaths(all->front()),
            (std::vector<std::string>{"mainloop", "mainloop/iteration", "epilogue"}));
  // kernel.py's region_begin / region_end calls (the helpers' own lines are triton.py's 37, 46
  // and 67).
  const std::vector<std::pair<uint32_t, uint32_t>> lines{{37, 44}, {39, 43}, {45, 47}};
  for (size_t r = 0; r < regions.size(); ++r) {
    ASSERT_EQ(regions[r].begins.size(), 1u);
    ASSERT_EQ(regions[r].ends.size(), 1u);
    for (const auto* site : {&regions[r].begins[0], &regions[r].ends[0]})
      EXPECT_TRUE(site->source.file.ends_with("examples/triton_matmul/kernel.py"))
          << regions[r].path << ": " << site->source.file;
    EXPECT_EQ(regions[r].begins[0].source.line, lines[r].first) << regions[r].path;
    EXPECT_EQ(regions[r].ends[0].source.line, lines[r].second) << regions[r].path;
  }
  // Statements the kernel wrote itself keep their `.loc`; sourcePositions is unchanged.
  const Function& fn = *module->functions().front();
  const auto sites = callSitePositions(*module, fn);
  const auto own = sourcePositions(*module, fn);
  ASSERT_EQ(sites.size(), fn.body.size());
  const size_t marker = regions[0].begins[0].statement;
  EXPECT_TRUE(own[marker].file.ends_with("python/argus/triton.py")) << own[marker].file;
  EXPECT_EQ(own[marker].line, 37u);
  // The first instruction after the helper's range ($L__tmp5) is the kernel's own (`.loc 1 38`).
  size_t after = marker;
  while (after < fn.body.size() &&
         !(fn.body[after].kind == Statement::Kind::Label && fn.body[after].text == "$L__tmp5"))
    ++after;
  while (after < fn.body.size() && fn.body[after].kind != Statement::Kind::Instruction) ++after;
  ASSERT_LT(after, fn.body.size());
  EXPECT_TRUE(sites[after].file.empty()) << sites[after].file;
  EXPECT_EQ(own[after].line, 38u);
}

// CUDA markers are macros: their `.loc` is the kernel's line already. The end of a scoped region
// is a destructor inlined at the closing brace; it keeps the ARGUS_REGION line, as before.
TEST(Regions, CudaMarkerSourcesKeepTheirOwnLines) {
  std::ifstream in(std::filesystem::path(ARGUS_TEST_DATA_DIR) / "ptx" / "examples_tma_gemm.ptx");
  std::stringstream text;
  text << in.rdbuf();
  auto module = parseModule(text.str(), "examples_tma_gemm.ptx");
  ASSERT_TRUE(module) << module.error().text();
  auto all = analyzeRegions(*module);
  ASSERT_TRUE(all) << all.error().text();
  const Function& fn = *module->functions().front();
  const auto own = sourcePositions(*module, fn);
  const auto sites = callSitePositions(*module, fn);
  bool inlinedEnd = false;
  for (const auto& r : all->front().regions)
    for (const auto* v : {&r.begins, &r.ends})
      for (const auto& site : *v) {
        EXPECT_EQ(site.source.file, own[site.statement].file) << r.path;
        EXPECT_EQ(site.source.line, own[site.statement].line) << r.path;
        inlinedEnd |= !sites[site.statement].file.empty();
      }
  EXPECT_TRUE(inlinedEnd);  // the destructors are inlined calls, in kernel.cu itself
}

// PTX ISA 7.2's `.loc F L C, function_name LABEL, inlined_at F2 L2 C2` names the call directly.
TEST(Regions, InlinedAtOfALocIsTheMarkersSource) {
  const std::string body = "\t.loc\t2 10 3, function_name $L__info_string0, inlined_at 1 42 7\n" +
                           begin("outer") + "\t.loc\t1 43 1\n" + end("outer") + "\tret;\n";
  std::string text = kernelPtx(body);
  text.insert(text.find("\n.visible"), "\t.file\t2 \"/lib/markers.py\"\n");
  auto module = parseModule(text, "test.ptx");
  ASSERT_TRUE(module) << module.error().text();
  auto all = analyzeRegions(*module);
  ASSERT_TRUE(all) << all.error().text();
  const auto& outer = all->front().regions.at(0);
  EXPECT_EQ(outer.begins.at(0).source.file, "/src/k.cu");
  EXPECT_EQ(outer.begins.at(0).source.line, 42u);
  EXPECT_EQ(outer.ends.at(0).source.file, "/src/k.cu");  // not inlined: its own `.loc`
  EXPECT_EQ(outer.ends.at(0).source.line, 43u);
}

/// A distinct three-letter region name for each level up to 64,000: three-letter names reach the
/// depth limit (1024 levels) before the path limit (4096 bytes).
std::string levelName(size_t i) {
  static constexpr std::string_view kLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN";
  return {kLetters[i / 1600 % 40], kLetters[i / 40 % 40], kLetters[i % 40]};
}

/// `depth` regions nested in one straight line, called levelName(0), ...; closed innermost first.
std::string nested(size_t depth) {
  std::string body;
  for (size_t i = 0; i < depth; ++i) body += "\t// @argus begin " + levelName(i) + "\n";
  body += "\tmov.u32 \t%r1, 1;\n";
  for (size_t i = depth; i-- > 0;) body += "\t// @argus end " + levelName(i) + "\n";
  return body + "\tret;\n";
}

TEST(RegionLimits, FiftyThousandNestedRegionsAreAnErrorAtTheBeginPastTheLimit) {
  auto all = analyze(nested(50000));
  ASSERT_FALSE(all);
  const std::string msg = all.error().message;
  // The begin marker of level 1024 (the 1025th) is on line 12 + 1024 of the PTX.
  EXPECT_NE(msg.find("test.ptx:1036:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("`begin " + levelName(1024) + "`"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nests regions 1025 deep"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(kMaxRegionDepth)), std::string::npos) << msg;
  EXPECT_NE(msg.find("docs/limits.md"), std::string::npos) << msg;
}

TEST(RegionLimits, NestingAtTheDepthLimitKeepsEveryPath) {
  auto all = analyze(nested(kMaxRegionDepth));
  ASSERT_TRUE(all) << all.error().text();
  const auto& f = all->front();
  ASSERT_EQ(f.regions.size(), kMaxRegionDepth);
  std::string path;
  for (size_t i = 0; i < f.regions.size(); ++i) {
    path += (i == 0 ? "" : "/") + levelName(i);
    ASSERT_EQ(f.regions[i].path, path);
    ASSERT_EQ(f.regions[i].id, regionId("k", path));
    ASSERT_EQ(f.regions[i].parent, i == 0 ? std::nullopt : std::optional<uint32_t>(i - 1));
  }
  EXPECT_EQ(f.regions.back().instructions, 1u);
}

TEST(RegionLimits, APathLongerThanTheLimitIsAnErrorNamingIt) {
  const std::string longName(kMaxRegionPathLength / 2, 'n');
  auto all = analyze(begin("a" + longName) + begin("b" + longName) + end("b" + longName) +
                     end("a" + longName) + "\tret;\n");
  ASSERT_FALSE(all);
  const std::string msg = all.error().message;
  EXPECT_NE(msg.find("test.ptx:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("makes a region path of 4099 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(kMaxRegionPathLength)), std::string::npos) << msg;
  EXPECT_NE(msg.find("shorter region names"), std::string::npos) << msg;
}

TEST(RegionLimits, MarkersUnderBranchesCannotMultiplyRegionsWithoutBound) {
  // Each of 15 branches may open one more region and none closes: 2^15 possible region paths
  // (a warning each at `ret`, since some path has none open), past kMaxRegionsPerFunction.
  std::string body;
  for (int i = 0; i < 15; ++i)
    body += fmt::format("\t@%p1 bra \t$L__s{0};\n\t// @argus begin r{0}\n$L__s{0}:\n", i);
  auto all = analyze(body + "\tret;\n");
  ASSERT_FALSE(all);
  const std::string msg = all.error().message;
  EXPECT_NE(msg.find(std::to_string(kMaxRegionsPerFunction)), std::string::npos) << msg;
  EXPECT_NE(msg.find("data-dependent branches"), std::string::npos) << msg;
}

}  // namespace
}  // namespace argus::ptx
