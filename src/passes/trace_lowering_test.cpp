// lower_markers_to_trace: golden diff test, ptxas on every example (full, scoped, clock64),
// traced-vs-trace-free SASS comparison, trace maps, statistics and failure cases.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include "argus/ptx/derive.h"
#include "argus/ptx/regions.h"
#include "argus/query/scope.h"
#include "argus/support/process.h"
#include "argus/trace/format.h"
#include "argus/trace/options.h"
#include "test_util.h"

namespace argus::passes {
namespace {

using namespace testing;

TransformOptions optionsFor(const std::string& scope,
                            nlohmann::json config = nlohmann::json::object()) {
  TransformOptions options;
  auto parsed = query::parseScope(scope);
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().text());
  if (parsed) options.scope = *parsed;
  options.config = std::move(config);
  return options;
}

ptx::Module fromText(const std::string& body, const std::string& regs = "\t.reg .b32 %r<4>;\n") {
  auto module =
      ptx::parseModule(".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n" +
                           regs + body + "\tret;\n}\n",
                       "k.ptx");
  EXPECT_TRUE(module.has_value()) << (module ? "" : module.error().text());
  return module ? *module : ptx::Module{};
}

// Golden diff test: tests/data/passes/tiny_trace.ptx (nvcc output of tiny_trace.cu) lowered with
// the scope in tiny_trace.expected.ptx's name must print exactly the expected file.
TEST(TraceLoweringGolden, TinyKernel) {
  ptx::Module module = loadModule(dataDir() / "passes" / "tiny_trace.ptx");
  ASSERT_FALSE(HasFailure());
  auto result = applyTransforms(module, {"lower_markers_to_trace"}, optionsFor("iter=0..3"));
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string printed = ptx::printModule(module);
  const fs::path expectedPath = dataDir() / "passes" / "tiny_trace.expected.ptx";
  if (std::getenv("ARGUS_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(writeFile(expectedPath, printed).has_value());
  }
  auto expected = readFile(expectedPath);
  ASSERT_TRUE(expected.has_value()) << expected.error().text();
  EXPECT_EQ(printed, *expected) << "rerun with ARGUS_UPDATE_GOLDEN=1 after an intended change";

  const auto& map = result->traceMap["tiny"];
  EXPECT_EQ(map["argus_trace_map"], 1);
  EXPECT_EQ(map["time_base"], "globaltimer");
  EXPECT_EQ(map["scope"], "iter=0..3");
  ASSERT_EQ(map["regions"].size(), 2u);
  EXPECT_EQ(map["regions"][0]["path"], "loop");
  EXPECT_TRUE(map["regions"][0]["parent"].is_null());
  EXPECT_EQ(map["regions"][1]["path"], "loop/step");
  EXPECT_EQ(map["regions"][1]["parent"], 0);
  EXPECT_EQ(map["regions"][1]["id"], ptx::regionId("tiny", "loop/step"));
  EXPECT_EQ(map["roles"], nlohmann::json::array({"worker"}));
  const auto& stats = result->statistics["lower_markers_to_trace"];
  EXPECT_EQ(stats["markers"], 4);
  EXPECT_EQ(stats["records"], 2);
  EXPECT_EQ(stats["kernels"], 1);

  // And it assembles.
  auto dir = makeTempDir("argus-trace-golden");
  ASSERT_TRUE(dir.has_value());
  auto built = assemble(printed, module.target(), *dir, "tiny");
  fs::remove_all(*dir);
  if (!built.ok && built.message.find("ptxas failed") == std::string::npos)
    GTEST_SKIP() << built.message;
  EXPECT_TRUE(built.ok) << built.message;
}

struct Variant {
  std::string name;
  std::string scope;
  nlohmann::json config;
};

/// gtest prints a parameter with this (not as its bytes).
void PrintTo(const Variant& v, std::ostream* os) {
  *os << v.name;
}

const Variant kVariants[] = {
    {"full", "", nlohmann::json::object()},
    {"scoped", "role=producer,iter=0..3", nlohmann::json::object()},
    {"scoped_all_clauses", "warp=0|4..7,warpgroup=1,sm=0..65,cta=3..9|12,iter=1|5..6",
     nlohmann::json::object()},
    {"clock64", "", nlohmann::json{{"time_base", "clock64"}}},
    {"count", "role=producer,iter=0..3", nlohmann::json{{"overflow", "count"}}},
    {"paired", "", nlohmann::json{{"record_store", "paired"}}},
    {"paired_scoped", "role=consumer,iter=1..2", nlohmann::json{{"record_store", "paired"}}},
    {"compact", "", nlohmann::json{{"record_layout", "compact"}}},
    {"compact_scoped", "role=producer,iter=0..3", nlohmann::json{{"record_layout", "compact"}}},
    {"compact_clock64", "", nlohmann::json{{"record_layout", "compact"}, {"time_base", "clock64"}}},
    {"compact_place_end", "", nlohmann::json{{"record_place", "end"}}},
    {"compact_place_end_scoped", "role=producer,iter=0..3",
     nlohmann::json{{"record_place", "end"}}},
    {"compact_parted_record", "", nlohmann::json{{"parted", "record"}}},
    {"compact_parted_record_scoped", "role=consumer,iter=1..2",
     nlohmann::json{{"parted", "record"}}},
};

/// Lowers `traced`'s markers for `variant`, assembles it and its stripped twin, and checks that
/// tracing only added instructions.
void expectTracedAssemblesAndKeepsWork(const std::string& fixture, ptx::Module traced,
                                       const Variant& variant) {
  ptx::Module stripped = traced;
  auto result = applyTransforms(traced, {"lower_markers_to_trace"},
                                optionsFor(variant.scope, variant.config));
  ASSERT_TRUE(result.has_value()) << result.error().text();
  ASSERT_TRUE(applyTransforms(stripped, {"strip_markers"}, {}).has_value());
  const std::string tracedText = ptx::printModule(traced);
  EXPECT_EQ(tracedText.find("@argus"), std::string::npos);
  EXPECT_NE(tracedText.find(".visible .const .align 16 .b8 __argus_trace[16];"), std::string::npos);
  ASSERT_FALSE(result->traceMap.empty());
  const auto& stats = result->statistics["lower_markers_to_trace"];
  EXPECT_GT(stats["records"].get<uint64_t>(), 0u);

  auto dir = makeTempDir("argus-trace-example");
  ASSERT_TRUE(dir.has_value());
  auto a = assemble(ptx::printModule(stripped), traced.target(), *dir, "free");
  if (!a.ok && a.message.find("ptxas failed") == std::string::npos) GTEST_SKIP() << a.message;
  auto b = assemble(tracedText, traced.target(), *dir, "traced");
  ASSERT_TRUE(a.ok) << a.message;
  ASSERT_TRUE(b.ok) << b.message;
  std::string error;
  auto sassFree = sassInstructions(a.cubin, &error);
  auto sassTraced = sassInstructions(b.cubin, &error);
  fs::remove_all(*dir);
  if (!error.empty()) GTEST_SKIP() << error;

  // The traced kernel should differ by added instructions only. Register allocation and
  // scheduling change, so instruction text cannot be compared; opcode counts can. Measured:
  // ptxas re-derives some address arithmetic and uniform-datapath values differently in the
  // traced build (e.g. R2UR/ULOP3 in tma_gemm), so arithmetic opcodes are reported, not
  // required. The kernel's work must survive: every memory, synchronization, tensor-core and
  // branch/call opcode occurs at least as often as in the trace-free build. EXIT is not counted:
  // measured with overflow=clamp on warp_specialized, ptxas merged two exit paths into one.
  auto isWork = [](const std::string& op) {
    for (const char* prefix :
         {"LDG",  "STG",  "LDS",  "STS",    "LDSM", "BAR",  "SYNCS", "UTMA", "HGMMA", "WARPGROUP",
          "FFMA", "FMUL", "FADD", "MEMBAR", "RED",  "ATOM", "SHFL",  "BRA",  "CALL",  "RET"}) {
      if (op.starts_with(prefix)) return true;
    }
    return false;
  };
  for (const auto& [kernel, map] : result->traceMap.items()) {
    ASSERT_TRUE(sassFree.contains(kernel) && sassTraced.contains(kernel)) << kernel;
    std::map<std::string, long> delta;
    for (const auto& line : sassTraced[kernel]) ++delta[sassOpcode(line)];
    for (const auto& line : sassFree[kernel]) --delta[sassOpcode(line)];
    std::string missing;
    std::string changed;
    for (const auto& [op, d] : delta) {
      if (d < 0 && isWork(op)) missing += " " + op + "(" + std::to_string(d) + ")";
      if (d < 0 && !isWork(op)) changed += " " + op + "(" + std::to_string(d) + ")";
    }
    EXPECT_TRUE(missing.empty()) << kernel << ": traced SASS lost work instructions:" << missing;
    std::cout << "[ sass     ] " << fixture << " " << variant.name << " " << kernel
              << ": trace-free " << sassFree[kernel].size() << ", traced "
              << sassTraced[kernel].size() << " instructions, " << stats["markers"].get<uint64_t>()
              << " markers" << (changed.empty() ? "" : "; fewer arithmetic:" + changed) << "\n";
  }
}

class TraceLoweringExample : public ::testing::TestWithParam<std::tuple<std::string, Variant>> {};

TEST_P(TraceLoweringExample, AssemblesAndOnlyAddsInstructions) {
  const auto& [fixture, variant] = GetParam();
  ptx::Module traced = loadModule(dataDir() / "ptx" / fixture);
  ASSERT_FALSE(HasFailure());
  expectTracedAssemblesAndKeepsWork(fixture, std::move(traced), variant);
}

std::string variantTestName(
    const ::testing::TestParamInfo<std::tuple<std::string, Variant>>& info) {
  std::string name = std::get<0>(info.param);
  name = name.substr(0, name.size() - 4) + "_" + std::get<1>(info.param).name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Examples, TraceLoweringExample,
                         ::testing::Combine(::testing::ValuesIn(exampleFixtures()),
                                            ::testing::ValuesIn(kVariants)),
                         variantTestName);

// Kernels nobody here wrote, their regions derived from their loops and async ops without
// editing them (tests/data/ptx/README.md): CUTLASS example 54, and Triton kernels of liger-kernel
// and geak-eval's TritonBench-G. Every variant lowers, assembles and keeps the kernel's work.
class DerivedTraceLowering : public ::testing::TestWithParam<std::tuple<std::string, Variant>> {};

TEST_P(DerivedTraceLowering, PackageKernelWithDerivedRegions) {
  const auto& [fixture, variant] = GetParam();
  ptx::Module traced = loadModule(dataDir() / "ptx" / fixture);
  ASSERT_FALSE(HasFailure());
  auto defs = ptx::definitionsFromList("loops,ops");
  ASSERT_TRUE(defs.has_value());
  auto placed = ptx::deriveRegions(traced, *defs);
  ASSERT_TRUE(placed.has_value()) << placed.error().text();
  EXPECT_GE(placed->size(), 3u);
  expectTracedAssemblesAndKeepsWork(fixture, std::move(traced), variant);
}

// ptxas serializes a WGMMA pipeline stage (warning C7514, "wgmma.mma_async instructions are
// serialized") when code other than WGMMA runs between its wgmma.fence and its commit_group: on
// the H200 that cost CUTLASS example 54 +48 % when records sat between the stage's WGMMAs. A
// derived `wgmma` region is the whole stage, so its records stay outside it.
TEST(DerivedTraceLowering, AWgmmaRegionKeepsTheStagePipelined) {
  ptx::Module traced = loadDerived("cutlass_54_fp8_gemm.ptx", "loops,ops");
  ASSERT_FALSE(HasFailure());
  auto result = applyTransforms(traced, {"lower_markers_to_trace"}, optionsFor(""));
  ASSERT_TRUE(result.has_value()) << result.error().text();
  auto ptxas = findTool("ptxas");
  if (!ptxas) GTEST_SKIP() << ptxas.error().text();
  auto dir = makeTempDir("argus-wgmma-stage");
  ASSERT_TRUE(dir.has_value());
  const fs::path file = *dir / "traced.ptx";
  ASSERT_TRUE(writeFile(file, ptx::printModule(traced)));
  auto run = runProcess({ptxas->string(), "-arch=" + traced.target(), "-o",
                         (*dir / "traced.cubin").string(), file.string()});
  fs::remove_all(*dir);
  ASSERT_TRUE(run.has_value()) << run.error().text();
  EXPECT_EQ(run->exitCode, 0) << run->err;
  EXPECT_EQ(run->err.find("C7514"), std::string::npos) << run->err.substr(0, 600);
}

INSTANTIATE_TEST_SUITE_P(
    Packages, DerivedTraceLowering,
    ::testing::Combine(::testing::Values("cutlass_54_fp8_gemm.ptx",
                                         "triton_pkg_geak_eval_flash_attn_fwd.ptx",
                                         "triton_pkg_geak_eval_matmul_kernel.ptx",
                                         "triton_pkg_liger_kernel_cross_entropy_fwd.ptx"),
                       ::testing::Values(kVariants[0], kVariants[7], kVariants[3])),
    variantTestName);

// record_place=begin (the default): a leaf region takes its record's place at its begin marker, a
// region with a region nested in it at its end marker; record_place=end takes every place at the
// end marker; the full layout refuses `begin` when it is named and ignores the default.
TEST(TraceLowering, PlaceAtBeginForLeafRegionsByDefault) {
  const std::string body =
      "\t// @argus begin outer\n\t// @argus begin inner\n\t// @argus end inner\n"
      "\t// @argus end outer\n";
  ptx::Module module = fromText(body);
  auto result = applyTransforms(module, {"lower_markers_to_trace"},
                                optionsFor("", nlohmann::json{{"record_place", "begin"}}));
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string text = ptx::printModule(module);
  // The instrumentation of one marker: from its comment to the next marker's (or the ret).
  const auto marker = [&](const std::string& what) {
    const size_t at = text.find("// argus trace: " + what);
    if (at == std::string::npos) return std::string();
    const size_t next = text.find("// argus trace: ", at + 1);
    return text.substr(at, next == std::string::npos ? std::string::npos : next - at);
  };
  const std::string place = "min.u32 %argus_plo, %argus_plo, %argus_plast;";
  const std::string count = "add.u32 %argus_cnt, %argus_cnt, 1;";
  EXPECT_NE(marker("begin outer/inner").find(place), std::string::npos) << text;
  EXPECT_NE(marker("begin outer/inner").find(count), std::string::npos) << text;
  EXPECT_EQ(marker("end outer/inner").find(place), std::string::npos) << text;
  EXPECT_EQ(marker("end outer/inner").find(count), std::string::npos) << text;
  EXPECT_EQ(marker("begin outer (").find(place), std::string::npos) << text;
  EXPECT_NE(marker("end outer (").find(place), std::string::npos) << text;
  EXPECT_NE(marker("end outer (").find(count), std::string::npos) << text;

  ptx::Module byDefault = fromText(body);
  ASSERT_TRUE(applyTransforms(byDefault, {"lower_markers_to_trace"}, optionsFor("")).has_value());
  EXPECT_EQ(ptx::printModule(byDefault), text) << "begin is the default";

  ptx::Module atEnd = fromText(body);
  ASSERT_TRUE(applyTransforms(atEnd, {"lower_markers_to_trace"},
                              optionsFor("", nlohmann::json{{"record_place", "end"}}))
                  .has_value());
  const std::string endText = ptx::printModule(atEnd);
  const size_t innerBegin = endText.find("// argus trace: begin outer/inner");
  const size_t innerEnd = endText.find("// argus trace: end outer/inner");
  ASSERT_NE(innerEnd, std::string::npos) << endText;
  EXPECT_EQ(endText.substr(innerBegin, innerEnd - innerBegin).find(place), std::string::npos)
      << endText;
  EXPECT_NE(endText.find(place, innerEnd), std::string::npos) << endText;
  // With the place at the end marker every record is stored whole there, in the halves order
  // (format.h kLayoutHalves), and no first half is stored at a begin marker (the 8-byte stores
  // left are the previous records' second halves, kLayoutCountFirst).
  EXPECT_EQ(endText.find("st.global.cs.v2.u32 [%argus_addr], {%argus_h"), std::string::npos)
      << endText;
  // Nothing is placed at a begin marker, so nothing gains from a pending second half: the records
  // are stored whole, and the closing record says so (kClosingPendingBit unset).
  EXPECT_EQ(endText.find("%argus_addr+-8"), std::string::npos) << endText;
  EXPECT_NE(endText.find("or.b32 %argus_t0, %argus_meta, 0x40000000;"), std::string::npos)
      << endText;
  EXPECT_NE(endText.find("@%argus_w st.global.cs.v4.u32 [%argus_addr], {%argus_bs, %argus_ic, "
                         "%argus_e, %argus_m1};",
                         innerEnd),
            std::string::npos)
      << endText;

  ptx::Module fullByDefault = fromText(body);
  EXPECT_TRUE(applyTransforms(fullByDefault, {"lower_markers_to_trace"},
                              optionsFor("", nlohmann::json{{"record_layout", "full"}}))
                  .has_value())
      << "the full layout ignores the default record_place";

  ptx::Module full = fromText(body);
  auto refused = applyTransforms(
      full, {"lower_markers_to_trace"},
      optionsFor("", nlohmann::json{{"record_place", "begin"}, {"record_layout", "full"}}));
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("record_place"), std::string::npos)
      << refused.error().text();

  ptx::Module other = fromText(body);
  auto unknown = applyTransforms(other, {"lower_markers_to_trace"},
                                 optionsFor("", nlohmann::json{{"record_place", "middle"}}));
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(
      unknown.error().message.find(R"(option record_place is "middle"; use "end" or "begin")"),
      std::string::npos)
      << unknown.error().text();
}

// The keys `argus build --pass-option` and `--trace-option` accept (trace::kTraceOptionNames) are
// all the pass's: a bad value of each is refused by name.
TEST(TraceLowering, EveryUserOptionKeyIsReadByThePass) {
  for (const std::string_view key : trace::kTraceOptionNames) {
    ptx::Module module = fromText("\t// @argus begin a\n\t// @argus end a\n");
    auto refused = applyTransforms(module, {"lower_markers_to_trace"},
                                   optionsFor("", {{std::string(key), "bogus"}}));
    ASSERT_FALSE(refused.has_value()) << key;
    EXPECT_NE(refused.error().message.find(fmt::format("option {} is \"bogus\"", key)),
              std::string::npos)
        << refused.error().message;
  }
}

// The declared options (trace::kTraceOptions) are the pass's: a choice's default is one of its
// values, and naming every default gives the PTX and trace map the pass writes without options.
TEST(TraceLowering, DeclaredDefaultsAreWhatThePassDoes) {
  nlohmann::json defaults = nlohmann::json::object();
  for (const passes::OptionInfo& option : trace::kTraceOptions) {
    ASSERT_FALSE(option.defaultValue.empty()) << option.name;
    const nlohmann::json value = nlohmann::json::parse(option.defaultValue);
    if (option.type == "choice") {
      ASSERT_TRUE(value.is_string()) << option.name;
      EXPECT_NE(std::ranges::find(option.allowed, value.get<std::string>()), option.allowed.end())
          << option.name;
    }
    defaults[std::string(option.name)] = value;
  }
  const std::string body =
      "\t// @argus begin outer iter=%r1\n\t// @argus begin inner\n\t// @argus end inner\n"
      "\t// @argus end outer\n";
  ptx::Module plain = fromText(body);
  ptx::Module named = fromText(body);
  auto a = applyTransforms(plain, {"lower_markers_to_trace"}, optionsFor(""));
  auto b = applyTransforms(named, {"lower_markers_to_trace"}, optionsFor("", defaults));
  ASSERT_TRUE(a.has_value()) << a.error().text();
  ASSERT_TRUE(b.has_value()) << b.error().text();
  EXPECT_EQ(ptx::printModule(plain), ptx::printModule(named));
  EXPECT_EQ(a->traceMap, b->traceMap);
}

TEST(TraceLowering, SixtyFourBitIterationIsTruncatedWithCvt) {
  ptx::Module module =
      fromText("\t// @argus begin a iter=%rd1\n\t// @argus end a\n", "\t.reg .b64 %rd<2>;\n");
  auto result = applyTransforms(module, {"lower_markers_to_trace"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();
  EXPECT_NE(ptx::printModule(module).find("%argus_i0, %rd1;"), std::string::npos)
      << ptx::printModule(module);
}

TEST(TraceLowering, ImmediateIterationAndNoIteration) {
  ptx::Module module = fromText(
      "\t// @argus begin a iter=7\n\t// @argus end a\n\t// @argus begin b\n\t// @argus end b\n");
  auto result = applyTransforms(module, {"lower_markers_to_trace"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string text = ptx::printModule(module);
  EXPECT_NE(text.find("%argus_i0, 7;"), std::string::npos) << text;
  EXPECT_NE(text.find("%argus_i1, 0xffffffff;"), std::string::npos) << text;
}

TEST(TraceLowering, FloatIterationIsAnErrorNamingKernelAndLine) {
  ptx::Module module =
      fromText("\t// @argus begin a iter=%f1\n\t// @argus end a\n", "\t.reg .f32 %f<2>;\n");
  auto result = applyTransforms(module, {"lower_markers_to_trace"}, {});
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().message.find("kernel `k`, PTX line 7"), std::string::npos)
      << result.error().text();
  EXPECT_NE(result.error().message.find("%f1"), std::string::npos);
}

// blocks (the spec's kernels[].block): kept in the trace map; a shape no launch can have (more
// threads than .maxntid) is an error naming the kernel and the fix; a malformed option too.
TEST(TraceLowering, SpecBlockShapeIsCheckedAndKept) {
  const auto module = [] {
    auto m = ptx::parseModule(
        ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n"
        ".maxntid 128, 1, 1\n{\n\t.reg .b32 %r<4>;\n\t// @argus begin a\n\t// @argus end a\n"
        "\tret;\n}\n",
        "k.ptx");
    EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().text());
    return m ? *m : ptx::Module{};
  };
  ptx::Module fits = module();
  auto kept = applyTransforms(fits, {"lower_markers_to_trace"},
                              optionsFor("", {{"blocks", {{"k", {64, 2, 1}}}}}));
  ASSERT_TRUE(kept.has_value()) << kept.error().text();
  EXPECT_EQ(kept->traceMap["k"]["block"], nlohmann::json({64, 2, 1}));
  ptx::Module tooMany = module();
  auto refused = applyTransforms(tooMany, {"lower_markers_to_trace"},
                                 optionsFor("", {{"blocks", {{"k", {256, 1, 1}}}}}));
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find(
                "kernel `k` block [256, 1, 1] (kernels[].block), which no launch can have: its "
                ".maxntid 128, 1, 1 (__launch_bounds__) allows at most 128 threads, not 256; "
                "correct the spec's block"),
            std::string::npos)
      << refused.error().message;
  ptx::Module malformed = module();
  auto bad = applyTransforms(malformed, {"lower_markers_to_trace"},
                             optionsFor("", {{"blocks", {{"k", {128, 0, 1}}}}}));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("option blocks is"), std::string::npos) << bad.error().message;
}

TEST(TraceLowering, MoreThanFifteenRolesIsAnError) {
  std::string body;
  for (int i = 0; i < 16; ++i) {
    body += "\t// @argus begin r" + std::to_string(i) + " role=x" + std::to_string(i) + "\n";
    body += "\t// @argus end r" + std::to_string(i) + "\n";
  }
  ptx::Module module = fromText(body);
  auto result = applyTransforms(module, {"lower_markers_to_trace"}, {});
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().message.find("15 roles"), std::string::npos) << result.error().text();
}

TEST(TraceLowering, MoreThan4096RegionsIsAnError) {
  std::string body;
  for (int i = 0; i < 4097; ++i) {
    body += "\t// @argus begin r" + std::to_string(i) + "\n\t// @argus end r" + std::to_string(i) +
            "\n";
  }
  ptx::Module module = fromText(body);
  auto result = applyTransforms(module, {"lower_markers_to_trace"}, {});
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().message.find("4097 regions"), std::string::npos)
      << result.error().text();
}

TEST(TraceLowering, UnknownKernelListsTheKernels) {
  ptx::Module module = fromText("\t// @argus begin a\n\t// @argus end a\n");
  TransformOptions options;
  options.kernel = "nope";
  auto result = applyTransforms(module, {"lower_markers_to_trace"}, options);
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().message.find("kernels: k"), std::string::npos) << result.error().text();
}

TEST(TraceLowering, TracingTwiceIsAnError) {
  ptx::Module module = fromText("\t// @argus begin a\n\t// @argus end a\n");
  ASSERT_TRUE(applyTransforms(module, {"lower_markers_to_trace"}, {}).has_value());
  // Put a marker back in so the kernel is selected again.
  auto again = ptx::parseModule(ptx::printModule(module), "k2.ptx");
  ASSERT_TRUE(again.has_value());
  auto& body = again->functions().back()->body;
  ptx::Statement begin;
  begin.kind = ptx::Statement::Kind::Comment;
  begin.text = " @argus begin z";
  ptx::Statement end = begin;
  end.text = " @argus end z";
  body.insert(body.end() - 1, {begin, end});
  auto result = applyTransforms(*again, {"lower_markers_to_trace"}, {});
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().message.find("traced before"), std::string::npos);
}

/// Assembles `module` with ptxas, or skips the test where ptxas cannot run.
void expectAssembles(const ptx::Module& module, const std::string& what) {
  auto dir = makeTempDir("argus-trace-assemble");
  ASSERT_TRUE(dir.has_value());
  auto built = assemble(ptx::printModule(module), module.target(), *dir, "traced");
  fs::remove_all(*dir);
  if (!built.ok && built.message.find("ptxas failed") == std::string::npos)
    GTEST_SKIP() << built.message;
  EXPECT_TRUE(built.ok) << what << ": " << built.message;
}

std::vector<std::string> mapPaths(const nlohmann::json& map) {
  std::vector<std::string> out;
  for (const auto& r : map["regions"]) out.push_back(r["path"]);
  return out;
}

// nvcc's PTX of examples/callee_regions: a __noinline__ helper with regions `load` and `combine`,
// called from the kernel's loop region `tiles/tile`. Its regions are traced as the kernel's
// `tiles/tile/load` and `tiles/tile/combine`, through the trace cell it now takes.
TEST(TraceLowering, CalleeRegionsAreTracedUnderTheCallingRegion) {
  for (const char* layout : {"compact", "full"}) {
    ptx::Module module = loadModule(dataDir() / "ptx" / "examples_callee_regions.ptx");
    ASSERT_FALSE(HasFailure());
    auto result = applyTransforms(module, {"lower_markers_to_trace"},
                                  optionsFor("", {{"record_layout", layout}}));
    ASSERT_TRUE(result.has_value()) << result.error().text();
    const std::string text = ptx::printModule(module);
    EXPECT_EQ(text.find("@argus"), std::string::npos);
    const auto& map = result->traceMap["callee_regions"];
    EXPECT_EQ(mapPaths(map), (std::vector<std::string>{"tiles", "tiles/tile", "tiles/tile/load",
                                                       "tiles/tile/combine"}));
    EXPECT_EQ(map["regions"][2]["parent"], 1);
    // The helper's markers are in the map, named by their function.
    size_t calleeMarkers = 0;
    for (const auto& m : map["markers"])
      calleeMarkers += m.value("function", "") == "_Z8tileStepPKfii";
    EXPECT_EQ(calleeMarkers, 4u);
    EXPECT_EQ(result->statistics["lower_markers_to_trace"]["callees"].get<uint64_t>(), 1u);
    const ptx::Function* helper = module.findFunction("_Z8tileStepPKfii");
    ASSERT_NE(helper, nullptr);
    ASSERT_FALSE(helper->params.empty());
    EXPECT_EQ(helper->params.back().name, "__argus_cellp");
    // Four records: tiles and tile in the kernel, load and combine in the helper.
    EXPECT_EQ(result->statistics["lower_markers_to_trace"]["records"].get<uint64_t>(), 4u);
    // The helper inherits the tile's iteration through the cell.
    EXPECT_NE(text.find("ld.u32 %argus_i1, [%argus_cp+16]"), std::string::npos) << layout;
    expectAssembles(module, layout);
  }
}

// examples/nested_regions' out-of-line helper has a region `transform` and is called from two
// regions: the traced build gives each calling region its own copy (clone_shared_callees), and
// both run as regions of the kernel.
TEST(TraceLowering, CalleeUnderTwoRegionsGetsACopyPerRegion) {
  ptx::Module module = loadModule(dataDir() / "ptx" / "examples_nested_regions.ptx");
  ASSERT_FALSE(HasFailure());
  auto result = applyTransforms(module, {"lower_markers_to_trace"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();
  EXPECT_EQ(ptx::printModule(module).find("@argus"), std::string::npos);
  EXPECT_FALSE(result->traceMap.contains("_Z18transformOutOfLinef"));
  const auto paths = mapPaths(result->traceMap["nested_regions"]);
  EXPECT_NE(std::ranges::find(paths, "main/body/producer/transform"), paths.end());
  EXPECT_NE(std::ranges::find(paths, "main/body/consumer/combine/transform"), paths.end());
  EXPECT_EQ(result->statistics["lower_markers_to_trace"]["callees"].get<uint64_t>(), 2u);
  size_t copies = 0;
  for (const ptx::Function* f : module.functions())
    copies += f->name.starts_with("_Z18transformOutOfLinef__argus_");
  EXPECT_EQ(copies, 2u);
  expectAssembles(module, "nested_regions");
}

// A kernel traced alone (--kernel) keeps the markers of functions only other kernels call out of
// its trace; a kernel without marked callees is traced as before (no cell, no copies).
TEST(TraceLowering, KernelsWithoutMarkedCalleesTakeNoCell) {
  ptx::Module module = loadModule(dataDir() / "ptx" / "examples_shared_callee.ptx");
  ASSERT_FALSE(HasFailure());
  auto result = applyTransforms(module, {"lower_markers_to_trace"}, {});
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string text = ptx::printModule(module);
  EXPECT_EQ(text.find("__argus_cell"), std::string::npos);
  EXPECT_EQ(text.find("__argus_cpa"), std::string::npos);
  EXPECT_EQ(result->statistics["lower_markers_to_trace"]["callees"].get<uint64_t>(), 0u);
}

// A marked function reached recursively is refused with the function named.
TEST(TraceLowering, RecursiveCalleeWithRegionsIsRefused) {
  const std::string m = "\t// begin inline asm\n\t// @argus begin r\n\t// end inline asm\n";
  const std::string e = "\t// begin inline asm\n\t// @argus end r\n\t// end inline asm\n";
  const std::string k = "\t// begin inline asm\n\t// @argus begin k\n\t// end inline asm\n";
  const std::string ke = "\t// begin inline asm\n\t// @argus end k\n\t// end inline asm\n";
  auto module =
      ptx::parseModule(".version 8.8\n.target sm_90a\n.address_size 64\n\n.func rec()\n{\n" + m +
                           "\tcall.uni rec;\n" + e + "\tret;\n}\n.visible .entry kern()\n{\n" + k +
                           "\tcall.uni rec;\n" + ke + "\tret;\n}\n",
                       "rec.ptx");
  ASSERT_TRUE(module.has_value()) << module.error().text();
  auto result = applyTransforms(*module, {"lower_markers_to_trace"}, {});
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().text().find("`rec` is reached recursively"), std::string::npos)
      << result.error().text();
}

}  // namespace
}  // namespace argus::passes

namespace argus::passes {
namespace {

// A Triton 3.6 kernel marked with python/argus/triton.py's helpers
// (tests/data/triton/make_argus_marker_fixture.py): its PTX traces like nvcc's and assembles.
// Triton's PTX (tests/data/ptx/triton_matmul_tma_argus.ptx), with both record layouts.
TEST(TraceLowering, TritonKernelWithArgusMarkersAssembles) {
  for (const char* layout : {"full", "compact"}) {
    ptx::Module module = loadModule(dataDir() / "ptx" / "triton_matmul_tma_argus.ptx");
    ASSERT_FALSE(HasFailure());
    auto result = applyTransforms(module, {"lower_markers_to_trace"},
                                  optionsFor("", {{"record_layout", layout}}));
    ASSERT_TRUE(result.has_value()) << result.error().text();
    const auto& map = result->traceMap["matmul_tma_argus"];
    ASSERT_EQ(map["regions"].size(), 3u);
    EXPECT_EQ(map["regions"][1]["path"], "mainloop/iteration");
    EXPECT_EQ(map["record_layout"], layout);
    EXPECT_EQ(result->statistics["lower_markers_to_trace"]["records"].get<uint64_t>(), 3u);
    expectAssembles(module, layout);
  }
}

}  // namespace
}  // namespace argus::passes

namespace argus::passes {
namespace {

// The module lists its instrumented kernels (NUL-terminated names) in a global array, for the
// injection library to tell which of a CUDA graph's nodes write the buffer (format.h); a kernel
// without regions is not listed.
TEST(TraceLowering, ListsTheInstrumentedKernels) {
  auto module = ptx::parseModule(
      ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
      "\t// @argus begin a\n\t// @argus end a\n\tret;\n}\n.visible .entry zz()\n{\n\tret;\n}\n",
      "k.ptx");
  ASSERT_TRUE(module.has_value()) << module.error().text();
  auto result = applyTransforms(*module, {"lower_markers_to_trace"}, optionsFor(""));
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string text = ptx::printModule(*module);
  EXPECT_NE(text.find(fmt::format(".visible .global .align 1 .b8 {}[2] = {{107,0}};",
                                  trace::kTraceKernelsSymbol)),
            std::string::npos)
      << text;
}

// record_layout=compact: a leaf region's record in two 8-byte halves, {begin, iteration} at its
// begin marker and {end, meta} kept at its end marker (a timer read and a copy of the meta word)
// for the warp's next place to store at its address - 8, or the exit at the last place + 8; a
// region with regions inside (a) one 16-byte store at its end marker from the copies made there,
// its second half then pending too; the layout symbol, a closing record before every ret/exit,
// and meta words computed at the entry when the begin markers fix the role.
TEST(TraceLowering, CompactLayoutStoresOnceAndClosesEveryExit) {
  ptx::Module module = fromText(
      "\t// @argus begin a iter=%r1 role=w\n\t// @argus begin b\n\t// @argus end b\n"
      "\t// @argus end a\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 ret;\n\t// @argus begin c\n"
      "\t// @argus end c\n",
      "\t.reg .b32 %r<4>;\n\t.reg .pred %p<2>;\n");
  auto result = applyTransforms(module, {"lower_markers_to_trace"},
                                optionsFor("", {{"record_layout", "compact"}}));
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string text = ptx::printModule(module);
  const auto count = [&](std::string_view what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(fmt::format(".visible .const .align 4 .u32 __argus_trace_layout = {};",
                              sizeof(trace::CompactRecord) | trace::kLayoutWindowed |
                                  trace::kLayoutHalves | trace::kLayoutCountFirst)),
            1u)
      << text;
  EXPECT_EQ(count("%globaltimer_lo;"), 6u) << text;  // 3 begins, 3 ends
  EXPECT_EQ(count("st.global.cs.v4.u32 [%argus_addr], {%argus_bs, %argus_ic, %argus_e, %argus_m0}"),
            1u)
      << text;
  EXPECT_EQ(count("st.global.cs.v2.u32 [%argus_addr], {%argus_h1, %argus_i1};"), 1u) << text;
  EXPECT_EQ(count("st.global.cs.v2.u32 [%argus_addr], {%argus_h2, %argus_i2};"), 1u) << text;
  // The leaves' end markers: a timer read and the meta word's copy, no store.
  const auto endOf = [&](std::string_view what) {
    const size_t at = text.find(what);
    EXPECT_NE(at, std::string::npos) << what;
    return text.substr(at, text.find("// argus trace:", at + 1) - at);
  };
  for (const char* leaf :
       {"// argus trace: end a/b (region 1)", "// argus trace: end c (region 2)"})
    EXPECT_EQ(endOf(leaf).find("st.global"), std::string::npos) << endOf(leaf);
  EXPECT_NE(endOf("// argus trace: end a/b (region 1)")
                .find("\tmov.u32 %argus_pe, %globaltimer_lo;\n\tmov.b32 %argus_pm, %argus_m1;\n"),
            std::string::npos)
      << text;
  // Every place taken (b's begin, a's end, c's begin) first stores the pending second half at
  // its address - 8; a's end then makes its own second half the pending one.
  EXPECT_EQ(count("@%argus_w st.global.cs.v2.u32 [%argus_addr+-8], {%argus_pe, %argus_pm};"), 3u)
      << text;
  EXPECT_NE(text.find("{%argus_bs, %argus_ic, %argus_e, %argus_m0};\n"
                      "\tmov.u32 %argus_pe, %argus_e;\n\tmov.b32 %argus_pm, %argus_m0;\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(count("st.global.v2.u64"), 0u);
  // Both rets, the guarded one too, get the closing record right before them.
  EXPECT_EQ(count("// argus trace: closing record"), 2u);
  EXPECT_NE(text.find("[%argus_ca+16], {%argus_cnt, %argus_t1, %argus_t2, %argus_t0};\n"
                      "\t@%p1 ret;"),
            std::string::npos)
      << text;
  // Each exit first stores the last record's pending second half, at the last place taken, and
  // its closing record says the kernel stores them so (kClosingPendingBit).
  EXPECT_EQ(count("or.b32 %argus_t0, %argus_meta, 0x60000000;"), 2u) << text;
  EXPECT_EQ(count("// argus trace: closing record\n"
                  "\t@%argus_w st.global.cs.v2.u32 [%argus_addr+8], {%argus_pe, %argus_pm};\n"
                  "\t@%argus_on red.global.max.u32 [%argus_base], %argus_cnt;\n"
                  "\tmov.b64 %argus_ca, {%argus_plast, %argus_ph};\n"),
            2u)
      << text;
  // Unscoped: lane 0 stores (one predicate from the entry), at the clamped place, with no
  // compare and no election at the end marker; the begin timer reads are not predicated.
  EXPECT_EQ(count("@%argus_w st.global.cs.v4.u32 [%argus_addr], {"), 1u) << text;
  EXPECT_EQ(count("@%argus_w st.global.cs.v2.u32 [%argus_addr"), 2u + 3u + 2u) << text;
  EXPECT_EQ(count("setp.eq.and.u32 %argus_w, %argus_t1, 0, %argus_on;"), 1u) << text;
  // The place: the low 32 bits of its address, advanced and clamped to the slot's last record
  // place in one step; the high bits from the entry (the library's 4 GiB window).
  EXPECT_EQ(count("\tadd.u32 %argus_plo, %argus_plo, 16;\n"
                  "\tmin.u32 %argus_plo, %argus_plo, %argus_plast;\n"
                  "\tmov.b64 %argus_addr, {%argus_plo, %argus_ph};\n"),
            3u)
      << text;
  // The counts in place 0, which is the previous place at the start; the last record place
  // 2 cap - 2 (%argus_l16 + 1).
  EXPECT_EQ(count("mov.b64 {%argus_plo, %argus_ph}, %argus_base;\n"
                  "\tmov.b64 %argus_addr, %argus_base;\n"
                  "\tadd.u32 %argus_t3, %argus_l16, 1;\n"
                  "\tmad.lo.u32 %argus_plast, %argus_t3, 16, %argus_plo;\n"),
            1u)
      << text;
  EXPECT_EQ(count("min.u32 %argus_t1, %argus_cnt, %argus_l16;"), 0u) << text;
  EXPECT_EQ(count("sub.u32 %argus_l16, %argus_l16, 3;"), 1u) << text;
  // Fewer than 4 places per slot (capacity < 2) traces nothing: the clamp would not hold.
  EXPECT_EQ(count("setp.gt.and.u32 %argus_on, %argus_cap, 1, %argus_on;"), 1u) << text;
  EXPECT_EQ(count("elect.sync"), 0u) << text;
  EXPECT_EQ(count("setp.le"), 0u) << text;
  EXPECT_EQ(count("@%argus_on mov.u32 %argus_h"), 0u) << text;
  EXPECT_EQ(count("@%argus_ok"), 0u) << text;
  EXPECT_EQ(count("@%argus_on mov.u32 %argus_bs, %argus_h"), 1u) << text;
  EXPECT_EQ(count("\tadd.u32 %argus_cnt, %argus_cnt, 1;"), 3u);
  // Every exit raises the highest-count place, and lane 0 closes the slot.
  EXPECT_EQ(count("@%argus_on red.global.max.u32 [%argus_base], %argus_cnt;"), 2u) << text;
  EXPECT_EQ(count("@%argus_w st.global.cs.v4.u32 [%argus_ca+16], {%argus_cnt,"), 2u) << text;
  // a's role is its own, b inherits it, c has none: all three meta words at the entry.
  const size_t firstBegin = text.find("// argus trace: begin");
  ASSERT_NE(firstBegin, std::string::npos);
  const std::string entry = text.substr(0, firstBegin);
  EXPECT_NE(entry.find("or.b32 %argus_m0, %argus_meta, 0x0;"), std::string::npos) << entry;
  EXPECT_NE(entry.find("or.b32 %argus_m1, %argus_meta, 0x10000;"), std::string::npos) << entry;
  EXPECT_NE(entry.find("or.b32 %argus_m2, %argus_meta, 0x2f000;"), std::string::npos) << entry;
  EXPECT_EQ(text.find("or.b32 %argus_m", firstBegin), std::string::npos);
  const auto& map = result->traceMap["k"];
  EXPECT_EQ(map["record_layout"], "compact");
  EXPECT_EQ(result->statistics["lower_markers_to_trace"]["closing_records"], 2);
}

/// An if/else on the thread index inside a warp (lanes 0-15 run `low`, 16-31 `high`), then
/// `after` with the whole warp.
constexpr const char* kLaneHalvesBody =
    "\tmov.u32 %r1, %tid.x;\n\tsetp.lt.u32 %p1, %r1, 16;\n\t@%p1 bra $L1;\n"
    "\t// @argus begin high\n\t// @argus end high\n\tbra.uni $L2;\n"
    "$L1:\n\t// @argus begin low\n\t// @argus end low\n"
    "$L2:\n\t// @argus begin after\n\t// @argus end after\n";
constexpr const char* kLaneHalvesRegs = "\t.reg .b32 %r<4>;\n\t.reg .pred %p<2>;\n";

// An if/else on the thread index inside a warp: each arm's end marker may run without lane 0,
// which stores the records, so there the lowest running lane that began the occurrence without
// lane 0 (each arm's begin notes it in %argus_z<k>) counts it (compact: into the slot's lost
// word; full: into header.dropped); the marker after the join runs with lane 0 and counts
// nothing, and its begin notes nothing.
TEST(TraceLowering, OccurrencesRunWithoutLaneZeroAreCounted) {
  const std::string body = kLaneHalvesBody;
  const std::string regs = kLaneHalvesRegs;
  for (const char* layout : {"compact", "full"}) {
    SCOPED_TRACE(layout);
    ptx::Module module = fromText(body, regs);
    auto result = applyTransforms(module, {"lower_markers_to_trace"},
                                  optionsFor("", {{"record_layout", layout}}));
    ASSERT_TRUE(result.has_value()) << result.error().text();
    const std::string text = ptx::printModule(module);
    const auto marker = [&](const std::string& what) {
      const size_t at = text.find("// argus trace: " + what);
      EXPECT_NE(at, std::string::npos) << what;
      return text.substr(at, text.find("// argus trace:", at + 1) - at);
    };
    const auto noted = [](int k) {
      return fmt::format(
          "activemask.b32 %argus_am;\n\tand.b32 %argus_am, %argus_am, 1;\n"
          "\tsetp.ne.u32 %argus_z{0}, %argus_am, 0;\n",
          k);
    };
    const auto counted = [&](int k) {
      return fmt::format(
          "activemask.b32 %argus_am;\n\tvote.sync.ballot.b32 %argus_t0, !%argus_z{0}, "
          "%argus_am;\n\tneg.s32 %argus_am, %argus_t0;\n"
          "\tand.b32 %argus_t0, %argus_t0, %argus_am;\n"
          "\tsetp.eq.and.u32 %argus_sd, %argus_t0, %argus_le, %argus_on;\n"
          "\t@%argus_sd red.global.add.{1}, 1;",
          k, layout == std::string("compact") ? "u32 [%argus_base+4]" : "u64 [%argus_hdr+24]");
    };
    EXPECT_NE(marker("begin high (region 0)").find(noted(0)), std::string::npos) << text;
    EXPECT_NE(marker("end high (region 0)").find(counted(0)), std::string::npos) << text;
    EXPECT_NE(marker("begin low (region 1)").find(noted(1)), std::string::npos) << text;
    EXPECT_NE(marker("end low (region 1)").find(counted(1)), std::string::npos) << text;
    EXPECT_EQ(marker("begin after").find("activemask"), std::string::npos) << text;
    EXPECT_EQ(marker("end after").find("activemask"), std::string::npos) << text;
    EXPECT_NE(text.find("mov.u32 %argus_le, %lanemask_eq;\n\tsetp.eq.u32 %argus_z0, 0, 0;\n"
                        "\tsetp.eq.u32 %argus_z1, 0, 0;\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("%argus_z2"), std::string::npos) << text;
    EXPECT_EQ(result->statistics["lower_markers_to_trace"]["lost_counts"], 2);
  }
  // Before PTX ISA 6.2 there is no activemask: a clear error instead of a ptxas failure.
  auto old = ptx::parseModule(ptx::printModule(fromText(body, regs)), "old.ptx");
  ASSERT_TRUE(old.has_value());
  for (auto& item : old->items)
    if (item.kind == ptx::TopLevel::Kind::Directive && item.directive.name == ".version")
      item.directive.text = "6.0";
  auto refused = applyTransforms(*old, {"lower_markers_to_trace"}, optionsFor(""));
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("old.ptx is PTX 6.0: compile it with a newer nvcc"),
            std::string::npos)
      << refused.error().message;
  // A kernel whose markers every lane runs together counts nothing.
  ptx::Module uniform = fromText("\t// @argus begin a\n\t// @argus end a\n");
  ASSERT_TRUE(applyTransforms(uniform, {"lower_markers_to_trace"}, optionsFor("")).has_value());
  EXPECT_EQ(ptx::printModule(uniform).find("activemask"), std::string::npos);
}

// parted=record: the lowest lane of a pass begun without lane 0 claims a place with the count's
// old value (atom) and stores the record from the last record place down; the module's layout
// word says so (16 | kLayoutPartedRecorded), the trace map too. The full layout refuses it.
TEST(TraceLowering, PartedRecordStoresPassesBegunWithoutLaneZero) {
  const std::string body = kLaneHalvesBody;
  const std::string regs = kLaneHalvesRegs;
  ptx::Module module = fromText(body, regs);
  auto result =
      applyTransforms(module, {"lower_markers_to_trace"}, optionsFor("", {{"parted", "record"}}));
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string text = ptx::printModule(module);
  const std::string stored =
      "\t@%argus_sd atom.global.add.u32 %argus_t0, [%argus_base+4], 1;\n"
      "\tmin.u32 %argus_t0, %argus_t0, %argus_l16;\n"
      "\tsub.u32 %argus_t0, %argus_l16, %argus_t0;\n"
      "\tmad.wide.u32 %argus_pa, %argus_t0, 16, %argus_base;\n"
      "\t@%argus_sd st.global.cs.v4.u32 [%argus_pa+16], {%argus_h1, %argus_i1, %argus_pe, "
      "%argus_m1};\n";
  EXPECT_NE(text.find(stored), std::string::npos) << text;
  EXPECT_EQ(text.find("red.global.add"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("__argus_trace_layout = {};",
                                  sizeof(trace::CompactRecord) | trace::kLayoutWindowed |
                                      trace::kLayoutHalves | trace::kLayoutCountFirst |
                                      trace::kLayoutPartedRecorded)),
            std::string::npos)
      << text;
  EXPECT_EQ(result->traceMap["k"]["parted"], "record");
  EXPECT_EQ(result->statistics["lower_markers_to_trace"]["lost_counts"], 2);

  ptx::Module full = fromText(body, regs);
  auto refused = applyTransforms(full, {"lower_markers_to_trace"},
                                 optionsFor("", {{"parted", "record"}, {"record_layout", "full"}}));
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("parted \"record\" is for record_layout \"compact\""),
            std::string::npos)
      << refused.error().message;
}

// Scoped: both halves of the record also need the occurrence in scope (and lane 0); the place
// and the count follow the scope.
TEST(TraceLowering, CompactLayoutScopedChecksTheScopeWhereTheRecordIsWritten) {
  ptx::Module module =
      fromText("\t// @argus begin a iter=%r1\n\t// @argus end a\n", "\t.reg .b32 %r<4>;\n");
  auto result = applyTransforms(module, {"lower_markers_to_trace"},
                                optionsFor("iter=2..3", {{"record_layout", "compact"}}));
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string text = ptx::printModule(module);
  EXPECT_NE(text.find("\tmov.u32 %argus_h0, %globaltimer_lo;"), std::string::npos) << text;
  EXPECT_NE(text.find("and.pred %argus_st, %argus_s0, %argus_w;\n"
                      "\t@%argus_st st.global.cs.v2.u32 [%argus_addr+-8], {%argus_pe, %argus_m0};\n"
                      "\t@%argus_st st.global.cs.v2.u32 [%argus_addr], {%argus_h0, %argus_i0};"),
            std::string::npos)
      << text;
  // The pending second half changes only with an occurrence in scope (the only region's meta
  // word is fixed: no copy of it).
  EXPECT_NE(text.find("// argus trace: end a (region 0)\n"
                      "\t@%argus_s0 mov.u32 %argus_pe, %globaltimer_lo;\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("%argus_pm"), std::string::npos) << text;
  EXPECT_EQ(text.find("mov.u32 %argus_bs, %argus_h0;"), std::string::npos) << text;
  EXPECT_NE(text.find("@%argus_s0 add.u32 %argus_cnt, %argus_cnt, 1;"), std::string::npos);
  EXPECT_NE(text.find("@%argus_s0 add.u32 %argus_plo, %argus_plo, 16;"), std::string::npos);
}

// A ret the leaf region is open on along one path only (analyzeRegions warns, it does not
// refuse): the kernel keeps no second half pending (an exit would store an older record's into
// the open region's place), its end marker stores it; the closing record before the ret takes
// its own address register, so where the ret is not taken the region's end marker still stores
// its second half at the place its begin took.
TEST(TraceLowering, CompactClosingRecordKeepsALeafsPlace) {
  ptx::Module module = fromText(
      "\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L_skip;\n\t// @argus begin a\n$L_skip:\n"
      "\tsetp.eq.u32 %p2, %r2, 0;\n\t@%p2 ret;\n\t// @argus end a\n",
      "\t.reg .b32 %r<4>;\n\t.reg .pred %p<3>;\n");
  auto result = applyTransforms(module, {"lower_markers_to_trace"}, optionsFor(""));
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string text = ptx::printModule(module);
  const size_t closing = text.find("// argus trace: closing record");
  const size_t end = text.find("// argus trace: end a");
  ASSERT_NE(closing, std::string::npos) << text;
  ASSERT_NE(end, std::string::npos) << text;
  const std::string before = text.substr(closing, end - closing);
  EXPECT_EQ(before.find("%argus_addr"), std::string::npos) << before;
  EXPECT_NE(before.find("mov.b64 %argus_ca, {%argus_plast, %argus_ph};"), std::string::npos)
      << before;
  EXPECT_EQ(text.find("%argus_addr+-8"), std::string::npos) << text;
  EXPECT_NE(before.find("or.b32 %argus_t0, %argus_meta, 0x40000000;"), std::string::npos) << before;
  EXPECT_NE(before.find("@%argus_w st.global.cs.v4.u32 [%argus_ca+16], {%argus_cnt, %argus_t1, "
                        "%argus_t2, %argus_t0};"),
            std::string::npos)
      << before;
  EXPECT_NE(text.find("@%argus_w st.global.cs.v2.u32 [%argus_addr+8], {%argus_e, %argus_m0};", end),
            std::string::npos)
      << text;
}

// A region whose begin markers carry different roles gets its meta word where it begins.
TEST(TraceLowering, CompactLayoutComputesARegionsMetaWhereItsRoleIsKnown) {
  ptx::Module module = fromText(
      "\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L_y;\n\t// @argus begin a role=x\n"
      "\tbra.uni $L_join;\n$L_y:\n\t// @argus begin a role=y\n$L_join:\n\t// @argus end a\n",
      "\t.reg .b32 %r<4>;\n\t.reg .pred %p<2>;\n");
  auto result = applyTransforms(module, {"lower_markers_to_trace"},
                                optionsFor("", {{"record_layout", "compact"}}));
  ASSERT_TRUE(result.has_value()) << result.error().text();
  const std::string text = ptx::printModule(module);
  const size_t firstBegin = text.find("// argus trace: begin");
  ASSERT_NE(firstBegin, std::string::npos) << text;
  EXPECT_EQ(text.substr(0, firstBegin).find("or.b32 %argus_m0"), std::string::npos) << text;
  EXPECT_NE(text.find("or.b32 %argus_m0, %argus_meta, 0x0;", firstBegin), std::string::npos);
  EXPECT_NE(text.find("or.b32 %argus_m0, %argus_meta, 0x1000;", firstBegin), std::string::npos);
  // The next begin computes its own meta word before the pending half is stored: the end marker
  // copies the region's into %argus_pm, which the stores of the pending half read.
  EXPECT_NE(text.find("// argus trace: end a (region 0)\n\tmov.u32 %argus_pe, %globaltimer_lo;\n"
                      "\tmov.b32 %argus_pm, %argus_m0;\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("@%argus_w st.global.cs.v2.u32 [%argus_addr+-8], {%argus_pe, %argus_pm};"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("@%argus_w st.global.cs.v2.u32 [%argus_addr+8], {%argus_pe, %argus_pm};"),
            std::string::npos)
      << text;
}

TEST(TraceLowering, CompactLayoutNeedsClampAndLeader) {
  ptx::Module module = loadModule(dataDir() / "ptx" / "examples_nested_regions.ptx");
  ASSERT_FALSE(HasFailure());
  for (const auto& config :
       {nlohmann::json{{"record_layout", "compact"}, {"overflow", "count"}},
        nlohmann::json{{"record_layout", "compact"}, {"record_store", "paired"}}}) {
    ptx::Module copy = module;
    auto refused = applyTransforms(copy, {"lower_markers_to_trace"}, optionsFor("", config));
    ASSERT_FALSE(refused.has_value()) << config.dump();
    EXPECT_NE(refused.error().message.find("needs overflow \"clamp\" and record_store"),
              std::string::npos)
        << refused.error().text();
  }
  auto bad = applyTransforms(module, {"lower_markers_to_trace"},
                             optionsFor("", {{"record_layout", "small"}}));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("use \"full\" or \"compact\""), std::string::npos);
}

// Every layout but paired stores from lane 0 with lane 0's count, not from a lane elected at
// the marker: a marker only lane 0 runs (one thread issuing TMA loads) parts the lanes' counts,
// and an elected lane among the others would store with a count lane 0 already used.
TEST(TraceLowering, LaneZeroStoresInEveryLayoutButPaired) {
  ptx::Module module = loadModule(dataDir() / "ptx" / "examples_nested_regions.ptx");
  ASSERT_FALSE(HasFailure());
  for (const auto& config :
       {nlohmann::json::object(), nlohmann::json{{"record_layout", "full"}},
        nlohmann::json{{"overflow", "count"}}, nlohmann::json{{"record_store", "paired"}}}) {
    ptx::Module copy = module;
    auto result = applyTransforms(copy, {"lower_markers_to_trace"}, optionsFor("", config));
    ASSERT_TRUE(result.has_value()) << config.dump() << ": " << result.error().text();
    const std::string text = ptx::printModule(copy);
    const bool paired = config.contains("record_store");
    EXPECT_EQ(text.find("setp.eq.and.u32 %argus_w, %argus_t1, 0, %argus_on;") == std::string::npos,
              paired)
        << config.dump();
    EXPECT_EQ(text.find("elect.sync") == std::string::npos, !paired) << config.dump();
    EXPECT_EQ(result->traceMap["nested_regions"]["record_layout"],
              config.empty() ? "compact" : "full")
        << config.dump();
  }
}

TEST(TraceLowering, PairedRecordStoresNeedClamp) {
  ptx::Module module = loadModule(dataDir() / "ptx" / "examples_nested_regions.ptx");
  ASSERT_FALSE(HasFailure());
  auto refused =
      applyTransforms(module, {"lower_markers_to_trace"},
                      optionsFor("", {{"record_store", "paired"}, {"overflow", "count"}}));
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("needs overflow \"clamp\""), std::string::npos);
  auto bad = applyTransforms(module, {"lower_markers_to_trace"},
                             optionsFor("", {{"record_store", "lanes"}}));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("use \"leader\" or \"paired\""), std::string::npos);
  auto ok = applyTransforms(module, {"lower_markers_to_trace"},
                            optionsFor("", {{"record_store", "paired"}}));
  ASSERT_TRUE(ok.has_value()) << ok.error().text();
  EXPECT_EQ(ok->traceMap["nested_regions"]["record_store"], "paired");
}

}  // namespace
}  // namespace argus::passes
