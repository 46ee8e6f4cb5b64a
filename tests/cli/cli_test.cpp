// Runs the argus binary as a user would and checks exit codes, messages and JSON.
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "argus/support/process.h"

namespace {

namespace fs = std::filesystem;
const fs::path kData = ARGUS_TEST_DATA_DIR;

argus::ProcessResult argus(std::vector<std::string> args) {
  args.insert(args.begin(), ARGUS_BIN);
  auto result = argus::runProcess(
      args, {.workingDirectory = std::nullopt, .timeout = std::chrono::seconds(120)});
  EXPECT_TRUE(result) << (result ? "" : result.error().text());
  return result ? *result : argus::ProcessResult{-1, "", ""};
}

TEST(CliRegions, NestedRegionTreeAsJson) {
  auto r = argus({"regions", (kData / "regions" / "good_nested.cu").string(), "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema"], "argus.regions/1");
  ASSERT_EQ(doc["kernels"].size(), 1u);
  const auto& k = doc["kernels"][0];
  EXPECT_EQ(k["name"], "nested");
  std::vector<std::string> paths;
  for (const auto& region : k["regions"]) paths.push_back(region["path"]);
  EXPECT_EQ(paths, (std::vector<std::string>{"main", "main/body", "main/body/producer",
                                             "main/body/consumer", "tail"}));
  const auto& regions = k["regions"];
  EXPECT_TRUE(regions[0]["parent"].is_null());
  EXPECT_EQ(regions[1]["parent"], regions[0]["id"]);
  EXPECT_EQ(regions[2]["parent"], regions[1]["id"]);
  EXPECT_EQ(regions[2]["begins"][0]["role"], "producer");
  EXPECT_TRUE(regions[1]["begins"][0]["iteration"].get<std::string>().starts_with("%r"));
  EXPECT_EQ(regions[1]["begins"][0]["source"]["line"], 8);
  for (const auto& region : regions) {
    EXPECT_EQ(region["id"].get<std::string>().size(), 16u);
    EXPECT_GT(region["ptx_instructions"].get<int>(), 0) << region["path"];
  }
}

TEST(CliRegions, IdsAreStableAcrossCompileFlags) {
  auto a = argus({"regions", (kData / "regions" / "good_nested.cu").string(), "--json"});
  auto b = argus({"regions", (kData / "regions" / "good_nested.cu").string(), "--json",
                  "--nvcc-flag=-O1", "--nvcc-flag=-DUNRELATED=1"});
  ASSERT_EQ(a.exitCode, 0) << a.err;
  ASSERT_EQ(b.exitCode, 0) << b.err;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  ASSERT_EQ(ja["kernels"][0]["regions"].size(), jb["kernels"][0]["regions"].size());
  for (size_t i = 0; i < ja["kernels"][0]["regions"].size(); ++i)
    EXPECT_EQ(ja["kernels"][0]["regions"][i]["id"], jb["kernels"][0]["regions"][i]["id"]);
}

TEST(CliRegions, TextTreeNamesEveryRegion) {
  auto r = argus({"regions", (kData / "regions" / "good_nested.cu").string()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("kernel nested"), std::string::npos) << r.out;
  for (const char* name : {"main", "body", "producer", "consumer", "tail"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name << "\n" << r.out;
}

struct BadInput {
  const char* file;
  std::vector<std::string> expected;  // substrings of stderr
};

class CliRegionsRejects : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliRegionsRejects, WithFileLineAndRegionNames) {
  auto r = argus({"regions", (kData / "regions" / GetParam().file).string()});
  EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  for (const auto& s : GetParam().expected)
    EXPECT_NE(r.err.find(s), std::string::npos) << s << "\n" << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    BadMarkers, CliRegionsRejects,
    ::testing::Values(
        BadInput{"bad_crossing.cu",
                 {"argus: regions:", "bad_crossing.cu:8", "`end outer` closes `inner`",
                  "bad_crossing.cu:6", "markers must nest"}},
        BadInput{"bad_unknown_end.cu", {"bad_unknown_end.cu:6", "`end ghost` with no region open"}},
        BadInput{"bad_open_at_return.cu",
                 {"region `work`", "bad_open_at_return.cu:5", "still open at `ret`"}}),
    [](const ::testing::TestParamInfo<BadInput>& param) {
      std::string name = param.param.file;
      return name.substr(0, name.find('.'));
    });

TEST(CliRegions, MalformedPtxGivesLineAndColumn) {
  auto dir = argus::makeTempDir("argus-cli-test");
  ASSERT_TRUE(dir);
  fs::path bad = *dir / "bad.ptx";
  ASSERT_TRUE(argus::writeFile(bad,
                               ".version 8.8\n.target sm_90a\n.address_size 64\n\n"
                               ".visible .entry k()\n{\n\tmov.u32 %r1, ;\n\tret;\n}\n"));
  auto r = argus({"regions", bad.string()});
  fs::remove_all(*dir);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("bad.ptx:7:"), std::string::npos) << r.err;
}

// Issue 29, defect 4: deep inputs crashed or blew up; each must finish with bounded output.
/// A kernel whose body nests `depth` levels: open(i) and close(i) give level i's lines.
template <class Open, class Close>
std::string deepPtx(size_t depth, Open open, Close close) {
  std::string body;
  for (size_t i = 0; i < depth; ++i) body += open(i);
  body += "\tmov.u32 \t%r1, 1;\n";
  for (size_t i = depth; i-- > 0;) body += close(i);
  return ".version 8.8\n.target sm_90a\n.address_size 64\n\n.visible .entry k()\n{\n"
         "\t.reg .b32 \t%r<4>;\n" +
         body + "\tret;\n}\n";
}

/// Marker lines of region `name(i)` at level i.
template <class Name>
std::string deepRegions(size_t depth, Name name) {
  return deepPtx(
      depth, [&](size_t i) { return "\t// @argus begin " + name(i) + "\n"; },
      [&](size_t i) { return "\t// @argus end " + name(i) + "\n"; });
}

TEST(CliLimits, DeeplyNestedRegionsAreAnErrorNotACrashOrAFloodOfOutput) {
  auto dir = argus::makeTempDir("argus-cli-test");
  ASSERT_TRUE(dir);
  const std::string letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN";  // 40 name letters
  // 50,000 levels (three-letter names) overflowed the stack; 10,000 (about 440 KB) printed hundreds
  // of MB of paths.
  for (size_t depth : {size_t{50000}, size_t{10000}}) {
    fs::path deep = *dir / fmt::format("deep{}.ptx", depth);
    ASSERT_TRUE(argus::writeFile(
        deep, deepRegions(depth, [&](size_t i) {
          return std::string{letters[i / 1600 % 40], letters[i / 40 % 40], letters[i % 40]};
        })));
    for (bool json : {false, true}) {
      std::vector<std::string> args{"regions", deep.string()};
      if (json) args.emplace_back("--json");
      auto r = argus(args);
      EXPECT_EQ(r.exitCode, 1) << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out.size() << " bytes of output";
      EXPECT_NE(r.err.find(fmt::format("deep{}.ptx:1032:", depth)), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("more than the limit of 1024"), std::string::npos) << r.err;
    }
  }
  // Near the limits (1023 levels of two-letter names: a 3 KB path), the output stays within a
  // few MB.
  fs::path widest = *dir / "widest.ptx";
  ASSERT_TRUE(argus::writeFile(widest, deepRegions(1023, [&](size_t i) {
                                 return std::string{letters[i / 40], letters[i % 40]};
                               })));
  for (bool json : {false, true}) {
    std::vector<std::string> args{"regions", widest.string()};
    if (json) args.emplace_back("--json");
    auto r = argus(args);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    EXPECT_GT(r.out.size(), 1023u * 20) << r.out;
    EXPECT_LT(r.out.size(), size_t{8} << 20);
  }
  fs::remove_all(*dir);
}

TEST(CliLimits, PtxPrintOfDeeplyNestedBlocksHasBoundedIndentation) {
  auto dir = argus::makeTempDir("argus-cli-test");
  ASSERT_TRUE(dir);
  fs::path deep = *dir / "blocks.ptx";
  const std::string text = deepPtx(
      100000, [](size_t) { return "\t{\n"; }, [](size_t) { return "\t}\n"; });
  ASSERT_TRUE(argus::writeFile(deep, text));
  auto r = argus({"ptx", "print", deep.string()});
  fs::remove_all(*dir);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // One tab per level would be about 10 GB; 32 tabs at most keep it within 40 bytes a line.
  EXPECT_LT(r.out.size(), 200000u * 40);
  EXPECT_NE(r.out.find(std::string(32, '\t') + "{\n"), std::string::npos);
}

TEST(CliRegions, MissingAndUnsupportedTargets) {
  auto missing = argus({"regions", "/nonexistent/k.cu"});
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_NE(missing.err.find("does not exist"), std::string::npos) << missing.err;
  auto wrong = argus({"regions", (kData / "regions" / "README.md").string()});
  EXPECT_EQ(wrong.exitCode, 1);
  EXPECT_NE(wrong.err.find("a program spec (.yaml), a CUDA source (.cu) or PTX (.ptx)"),
            std::string::npos)
      << wrong.err;
}

TEST(CliPtx, PrintRoundTripsToTheSameText) {
  fs::path fixture;
  for (const auto& e : fs::directory_iterator(kData / "ptx"))
    if (e.path().extension() == ".ptx" && (fixture.empty() || e.path() < fixture))
      fixture = e.path();
  ASSERT_FALSE(fixture.empty()) << "no PTX fixtures under tests/data/ptx";
  auto dir = argus::makeTempDir("argus-cli-test");
  ASSERT_TRUE(dir);
  fs::path once = *dir / "once.ptx";
  auto first = argus({"ptx", "print", fixture.string(), "-o", once.string()});
  ASSERT_EQ(first.exitCode, 0) << first.err;
  auto second = argus({"ptx", "print", once.string()});
  ASSERT_EQ(second.exitCode, 0) << second.err;
  auto text = argus::readFile(once);
  fs::remove_all(*dir);
  ASSERT_TRUE(text);
  EXPECT_EQ(second.out, *text);
}

TEST(CliPtx, HelpTeaches) {
  auto r = argus({"--help"});
  EXPECT_EQ(r.exitCode, 0);
  for (const char* verb : {"regions", "ptx", "Examples"})
    EXPECT_NE(r.out.find(verb), std::string::npos) << r.out;
}

}  // namespace

namespace {

const std::string kGemmSpec = std::string(ARGUS_SOURCE_DIR) + "/examples/tma_gemm/argus.yaml";

TEST(CliRegions, AcceptsAProgramSpec) {
  auto r = argus({"regions", kGemmSpec, "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["kernels"].size(), 1u);
  EXPECT_EQ(doc["kernels"][0]["name"], "tma_gemm");
}

TEST(CliPlan, JsonParsesBackAndExplainSaysWhy) {
  auto r = argus({"plan", "--program", kGemmSpec, "--region", "mainloop", "--signals",
                  "duration,inst_mix,barrier_inst,op_latency", "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["argus_query_plan"], 1);
  EXPECT_EQ(doc["region"], "mainloop");
  EXPECT_EQ(doc["collections"].size(), 3u);
  auto text = argus({"plan", "--program", kGemmSpec, "--region", "mainloop", "--signals",
                     "duration,inst_mix", "--explain"});
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_NE(text.out.find("why collections are in separate runs"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("patches_binary"), std::string::npos) << text.out;
  auto dot = argus(
      {"plan", "--program", kGemmSpec, "--region", "mainloop", "--signals", "duration", "--dot"});
  ASSERT_EQ(dot.exitCode, 0) << dot.err;
  EXPECT_TRUE(dot.out.starts_with("digraph")) << dot.out;
}

TEST(CliPlan, BadQueriesSayWhatExists) {
  auto region =
      argus({"plan", "--program", kGemmSpec, "--region", "main", "--signals", "duration"});
  EXPECT_EQ(region.exitCode, 1);
  EXPECT_NE(region.err.find("its regions are: mainloop"), std::string::npos) << region.err;
  auto signal =
      argus({"plan", "--program", kGemmSpec, "--region", "mainloop", "--signals", "speed"});
  EXPECT_EQ(signal.exitCode, 1);
  EXPECT_NE(signal.err.find("unknown signal `speed`; signals are:"), std::string::npos)
      << signal.err;
  auto scope = argus({"plan", "--program", kGemmSpec, "--region", "mainloop", "--signals",
                      "duration", "--scope", "iter=9..2"});
  EXPECT_EQ(scope.exitCode, 1);
  EXPECT_NE(scope.err.find("is empty"), std::string::npos) << scope.err;
  auto option = argus({"plan", "--program", kGemmSpec, "--region", "mainloop", "--signals",
                       "duration", "--trace-option", "colour=red"});
  EXPECT_EQ(option.exitCode, 1);
  EXPECT_NE(option.err.find("unknown trace option `colour`; the trace options are parted,"),
            std::string::npos)
      << option.err;
  auto malformed = argus({"plan", "--program", kGemmSpec, "--region", "mainloop", "--signals",
                          "duration", "--trace-option", "parted"});
  EXPECT_EQ(malformed.exitCode, 1);
  EXPECT_NE(malformed.err.find("--trace-option `parted` must be KEY=VALUE"), std::string::npos)
      << malformed.err;
  auto nothing = argus({"plan", "--region", "mainloop"});
  EXPECT_EQ(nothing.exitCode, 1);
  EXPECT_NE(nothing.err.find("give --program and --signals"), std::string::npos) << nothing.err;
}

TEST(CliPlan, QueryFromJsonFileEqualsFlags) {
  auto dir = argus::makeTempDir("argus-cli-test");
  ASSERT_TRUE(dir);
  auto file = *dir / "q.json";
  nlohmann::json q{{"program", kGemmSpec},
                   {"region", "mainloop"},
                   {"signals", {"duration"}},
                   {"scope", "iter=0..3"}};
  ASSERT_TRUE(argus::writeFile(file, q.dump()));
  auto fromFile = argus({"plan", "--query", file.string(), "--json"});
  auto fromFlags = argus({"plan", "--program", kGemmSpec, "--region", "mainloop", "--signals",
                          "duration", "--scope", "iter=0..3", "--json"});
  fs::remove_all(*dir);
  ASSERT_EQ(fromFile.exitCode, 0) << fromFile.err;
  ASSERT_EQ(fromFlags.exitCode, 0) << fromFlags.err;
  EXPECT_EQ(fromFile.out, fromFlags.out);
}

// A Triton program is planned from its spec's regions (its PTX exists only after a GPU run); the
// spec's block shapes still reach the trace lowering, as `argus build` gives them.
TEST(CliPlan, TritonTraceVariantsGetTheSpecsBlockShapes) {
  auto dir = argus::makeTempDir("argus-cli-test");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(argus::writeFile(*dir / "run.py", "print('PASS')\n"));
  ASSERT_TRUE(argus::writeFile(*dir / "kernel.py", "# the kernel\n"));
  ASSERT_TRUE(argus::writeFile(*dir / "argus.yaml",
                               "name: tiny_triton\nlanguage: triton\nscript: run.py\n"
                               "sources: [kernel.py]\nkernels:\n  - name: k\n"
                               "    block: [128, 1, 1]\n    regions:\n      - path: mainloop\n"));
  auto r = argus({"plan", "--program", (*dir / "argus.yaml").string(), "--kernel", "k", "--region",
                  "mainloop", "--signals", "duration", "--json"});
  fs::remove_all(*dir);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& task : doc["plan"]["tasks"]) {
    if (task["id"] != "variant/full_trace") continue;
    found = true;
    EXPECT_EQ(task["config"]["blocks"], nlohmann::json::parse(R"({"k": [128, 1, 1]})"))
        << task.dump();
  }
  EXPECT_TRUE(found) << r.out;
}

// A Triton program that derives regions is planned from its dumped PTX: planning runs the script
// once with Triton's dump knobs. No GPU here, so the spec's `python` is a stand-in for Triton's
// dump knob: it writes the PTX Triton 3.6 compiled of liger-kernel's unmodified cross-entropy
// kernel (tests/data/ptx/triton_pkg_liger_kernel_cross_entropy_fwd.ptx, make_package_fixtures.py)
// where TRITON_DUMP_DIR says, as Triton does (<dir>/<source hash>/<kernel>.ptx).
TEST(CliPlan, TritonDerivedRegionsArePlannedFromTheDumpedPtx) {
  auto dir = argus::makeTempDir("argus-cli-triton-derive");
  ASSERT_TRUE(dir);
  const fs::path fixture = kData / "ptx" / "triton_pkg_liger_kernel_cross_entropy_fwd.ptx";
  ASSERT_TRUE(argus::writeFile(*dir / "run.py", "# launches the kernel\n"));
  ASSERT_TRUE(argus::writeFile(
      *dir / "python",
      fmt::format("#!/bin/sh\n[ -n \"$TRITON_DUMP_DIR\" ] || {{ echo 3.6.0; exit 0; }}\n"
                  "mkdir -p \"$TRITON_DUMP_DIR/c0ffee\"\n"
                  "cp '{}' \"$TRITON_DUMP_DIR/c0ffee/liger_cross_entropy_kernel.ptx\"\n"
                  "echo PASS\n",
                  fixture.string())));
  fs::permissions(*dir / "python", fs::perms::owner_all);
  ASSERT_TRUE(argus::writeFile(*dir / "argus.yaml",
                               fmt::format("name: liger_ce\nlanguage: triton\nscript: run.py\n"
                                           "python: {}\nkernels:\n"
                                           "  - name: liger_cross_entropy_kernel\n",
                                           (*dir / "python").string())));
  const std::string spec = (*dir / "argus.yaml").string();
  auto regions = argus({"regions", spec, "--derive", "loops"});
  EXPECT_EQ(regions.exitCode, 0) << regions.err;
  EXPECT_NE(regions.out.find("loop_cross_entropy_151"), std::string::npos) << regions.out;
  auto r = argus({"plan", "--program", spec, "--derive", "loops", "--region",
                  "loop_cross_entropy_151", "--signals", "duration", "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("once to dump the Triton kernel's PTX"), std::string::npos) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  bool dump = false;
  for (const auto& task : doc["plan"]["tasks"]) {
    if (task["id"] != "ptx") continue;
    dump = true;
    EXPECT_EQ(task["executor"], "triton_dump") << task.dump();
    EXPECT_EQ(task["config"]["derive"], "loops") << task.dump();  // the dump derives them too
  }
  EXPECT_TRUE(dump) << r.out;
  // Without the derivation the spec has no region tree to plan with, and says what to give.
  auto plain = argus(
      {"plan", "--program", spec, "--region", "loop_cross_entropy_151", "--signals", "duration"});
  EXPECT_NE(plain.exitCode, 0);
  EXPECT_NE(plain.err.find("kernels"), std::string::npos) << plain.err;
  fs::remove_all(*dir);
}

// On a machine without a GPU the package kernels' scripts exit with their skip code, so there is
// no PTX to derive into; the error says how to derive on a dumped one instead.
TEST(CliRegions, ATritonSpecThatDerivesNeedsTheGpuRunOrADumpedPtx) {
  const std::string spec =
      std::string(ARGUS_SOURCE_DIR) + "/examples/triton_packages/liger_cross_entropy/argus.yaml";
  argus::ProcessOptions options;
  options.timeout = std::chrono::seconds(120);
  options.environment = {{"CUDA_VISIBLE_DEVICES", ""}};  // no GPU, even where there is one
  auto r = argus::runProcess({ARGUS_BIN, "regions", spec, "--derive", "loops"}, options);
  ASSERT_TRUE(r);
  EXPECT_NE(r->exitCode, 0);
  EXPECT_NE(r->err.find("liger_cross_entropy_kernel"), std::string::npos) << r->err;
  EXPECT_NE(r->err.find("argus regions KERNEL.ptx --derive"), std::string::npos) << r->err;
  EXPECT_NE(r->err.find("exit 77"), std::string::npos) << r->err;
}

// A misspelt pass option is an error naming the options, before anything is compiled.
TEST(CliBuild, RefusesAnUnknownPassOption) {
  auto r = argus({"build", "--program", kGemmSpec, "--variant", "full_trace", "--pass-option",
                  "record_plase=end", "-o", "/nonexistent/argus-cli-test"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("--pass-option `record_plase=end`: unknown trace option `record_plase`; "
                       "the trace options are parted,"),
            std::string::npos)
      << r.err;
  auto malformed = argus({"build", "--program", kGemmSpec, "--pass-option", "parted", "-o",
                          "/nonexistent/argus-cli-test"});
  EXPECT_EQ(malformed.exitCode, 1);
  EXPECT_NE(malformed.err.find("--pass-option `parted` must be KEY=VALUE"), std::string::npos)
      << malformed.err;
}

// --copy-callees on the shared-callee example: the executable's own cubin (what the program
// loads) sends each of the two calls of the helper to a copy of its own, at the offsets the map
// names, and the copies hold the helper's instructions.
TEST(CliBuild, CopyCalleesGivesEachCallItsOwnCopyInTheExecutable) {
  auto cuobjdump = argus::findTool("cuobjdump");
  if (!cuobjdump) GTEST_SKIP() << cuobjdump.error().text();
  auto dir = argus::makeTempDir("argus-cli-copies");
  ASSERT_TRUE(dir);
  const std::string spec = std::string(ARGUS_SOURCE_DIR) + "/examples/shared_callee/argus.yaml";
  auto r = argus(
      {"build", "--program", spec, "--variant", "original", "--copy-callees", "-o", dir->string()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::ifstream in(*dir / "callee_copies.json");
  const auto map = nlohmann::json::parse(in);
  EXPECT_EQ(map["schema"], "argus.callee_copies/1");
  const auto& copies = map["kernels"]["shared_callee"];
  ASSERT_EQ(copies.size(), 2u) << map.dump(1);
  auto sass = argus::runProcess({cuobjdump->string(), "-sass", (*dir / "shared_callee").string()});
  ASSERT_TRUE(sass && sass->exitCode == 0);
  for (const auto& c : copies) {
    EXPECT_EQ(c["callee"], "$shared_callee$_Z12sharedHelperfi");
    const auto site = c["call_sites"][0].get<std::uint64_t>();
    const auto target = c["copy_offset"].get<std::uint64_t>();
    EXPECT_NE(sass->out.find(
                  fmt::format("/*{:04x}*/                   CALL.REL.NOINC {:#x} ;", site, target)),
              std::string::npos)
        << "call " << site << " does not go to its copy at " << target << "\n"
        << sass->out;
  }
  auto triton = argus({"build", "--program",
                       std::string(ARGUS_SOURCE_DIR) + "/examples/triton_matmul/argus.yaml",
                       "--copy-callees", "-o", (*dir / "t").string()});
  EXPECT_EQ(triton.exitCode, 1);
  EXPECT_NE(triton.err.find("--copy-callees edits the cubin ptxas makes of a CUDA program"),
            std::string::npos)
      << triton.err;
  fs::remove_all(*dir);
}

TEST(CliRecipes, JsonListsEveryRecipe) {
  auto r = argus({"recipes", "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_GE(doc["recipes"].size(), 8u);
}

// `argus recipes --adapters` lists every adapter of this build from its registration record, as
// text and as JSON (schema argus.adapters/1), with its executors and machine needs.
TEST(CliRecipes, AdaptersListEveryAdapterOfTheBuild) {
  const std::vector<std::string> expected{"compile", "run",          "cupti_sass",
                                          "ncu",     "ptx_analysis", "system_trace"};
  auto text = argus({"recipes", "--adapters"});
  ASSERT_EQ(text.exitCode, 0) << text.err;
  // Each adapter's block starts a line with its name.
  const std::string lines = "\n" + text.out;
  for (const auto& name : expected)
    EXPECT_NE(lines.find("\n" + name + " "), std::string::npos) << name << " missing from:\n"
                                                                << text.out;
  EXPECT_NE(text.out.find("  executors    nvcc_ptx, triton_dump, ptx_pass, build_variant"),
            std::string::npos)
      << text.out;

  auto json = argus({"recipes", "--adapters", "--json"});
  ASSERT_EQ(json.exitCode, 0) << json.err;
  auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["schema"], "argus.adapters/1");
  std::set<std::string> names;
  for (const auto& a : doc["adapters"]) {
    names.insert(a["name"].get<std::string>());
    EXPECT_FALSE(a["description"].get<std::string>().empty()) << a.dump();
    EXPECT_FALSE(a["executors"].empty()) << a.dump();
    EXPECT_TRUE(a["machine_needs"].is_array()) << a.dump();
  }
  for (const auto& name : expected) EXPECT_TRUE(names.contains(name)) << name;

  // --adapters lists the build's adapters, not a recipe directory's catalog.
  auto mixed = argus({"recipes", "--adapters", "--markdown"});
  EXPECT_NE(mixed.exitCode, 0);
}

}  // namespace

namespace {

TEST(CliQuery, WithoutAGpuBuildsVariantsAndSaysWhatItSkipped) {
  auto dir = argus::makeTempDir("argus-cli-query");
  ASSERT_TRUE(dir);
  std::vector<std::string> args{
      ARGUS_BIN,  "query",     "--program", kGemmSpec,     "--region",
      "mainloop", "--signals", "duration",  "--workspace", (*dir / "ws").string(),
      "--json"};
  argus::ProcessOptions options;
  options.timeout = std::chrono::seconds(600);
  options.environment = {{"ARGUS_DEVICES", ""}};  // as on a machine without a GPU
  auto r = argus::runProcess(args, options);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->exitCode, 0) << r->err;
  auto doc = nlohmann::json::parse(r->out);
  EXPECT_EQ(doc["schema"], "argus.report/1");
  EXPECT_EQ(doc["signals"]["duration"]["status"], "not collected");
  EXPECT_NE(doc["signals"]["duration"]["reason"].get<std::string>().find("needs a GPU"),
            std::string::npos);
  EXPECT_EQ(doc["signals"]["duration"]["qualification"], "observed");
  // The CPU part ran: PTX, the full-trace variant and its build.
  EXPECT_EQ(doc["run"]["executed"], 3);
  args.pop_back();
  args.push_back("--require-gpu");
  auto strict = argus::runProcess(args, options);
  ASSERT_TRUE(strict);
  EXPECT_EQ(strict->exitCode, 2) << strict->err;
  EXPECT_NE(strict->err.find("--require-gpu"), std::string::npos) << strict->err;

  // `ws check` on the workspace the query made: sound. Then a damaged blob: found, named, and
  // not "repaired" (history is immutable), so the exit stays 1.
  const std::string ws = (*dir / "ws").string();
  auto check = argus({"ws", "check", "--workspace", ws, "--json"});
  ASSERT_EQ(check.exitCode, 0) << check.err;
  auto report = nlohmann::json::parse(check.out);
  EXPECT_EQ(report["ok"], true);
  EXPECT_GT(report["verify"]["rows_checked"].get<int>(), 10);
  EXPECT_TRUE(report["recovery"]["stale_tasks"].empty());
  fs::path largest;
  for (const auto& e : fs::recursive_directory_iterator(*dir / "ws" / "blobs"))
    if (e.is_regular_file() && (largest.empty() || e.file_size() > fs::file_size(largest)))
      largest = e.path();
  ASSERT_FALSE(largest.empty());
  {
    std::fstream blob(largest, std::ios::in | std::ios::out | std::ios::binary);
    blob.seekp(100);
    blob.put('\x5a');
  }
  for (bool repair : {false, true}) {
    std::vector<std::string> checkArgs{"ws", "check", "--workspace", ws};
    if (repair) checkArgs.push_back("--repair");
    auto damaged = argus(checkArgs);
    EXPECT_EQ(damaged.exitCode, 1) << damaged.out << damaged.err;
    EXPECT_NE(damaged.err.find(largest.string()), std::string::npos) << damaged.err;
    EXPECT_NE(damaged.err.find("is corrupt"), std::string::npos) << damaged.err;
    EXPECT_NE(damaged.out.find("1 problem remains"), std::string::npos) << damaged.out;
  }
  fs::remove_all(*dir);
}

// A scoped question about per-PC counters reads them through an unscoped trace's occurrences:
// on a machine without a GPU the scoped query builds only the trace variant it adds and reuses
// the unscoped query's PTX and builds from the workspace (runs and builds carry no scope).
TEST(CliQuery, AScopedQueryReusesTheUnscopedQuerysBuilds) {
  auto dir = argus::makeTempDir("argus-cli-scoped");
  ASSERT_TRUE(dir);
  const std::string spec = std::string(ARGUS_SOURCE_DIR) + "/examples/warp_specialized/argus.yaml";
  argus::ProcessOptions options;
  options.timeout = std::chrono::seconds(600);
  options.environment = {{"ARGUS_DEVICES", ""}};
  auto query = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{ARGUS_BIN,   "query",    "--program",   spec,
                                  "--signals", "inst_mix", "--workspace", (*dir / "ws").string(),
                                  "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = argus::runProcess(args, options);
    EXPECT_TRUE(r && r->exitCode == 0) << (r ? r->err : r.error().text());
    return r ? nlohmann::json::parse(r->out, nullptr, false) : nlohmann::json();
  };
  const auto all = query({});
  // ptx, and the mapping and reference variants with their builds.
  EXPECT_EQ(all["run"]["executed"], 5) << all["run"].dump();
  const auto producer = query({"--scope", "role=producer"});
  EXPECT_EQ(producer["signals"]["inst_mix"]["status"], "not collected");
  // Only the unscoped trace's variant and build are new.
  EXPECT_EQ(producer["run"]["executed"], 2) << producer["run"].dump();
  fs::remove_all(*dir);
}

TEST(CliQuery, HtmlPageAndTheReportTheWorkspaceKeeps) {
  auto dir = argus::makeTempDir("argus-cli-html");
  ASSERT_TRUE(dir);
  const fs::path page = *dir / "report.html";
  std::vector<std::string> args{ARGUS_BIN,  "query",       "--program",   kGemmSpec,
                                "--region", "mainloop",    "--signals",   "duration",
                                "--html",   page.string(), "--workspace", (*dir / "ws").string()};
  argus::ProcessOptions options;
  options.timeout = std::chrono::seconds(600);
  options.environment = {{"ARGUS_DEVICES", ""}};  // as on a machine without a GPU
  auto r = argus::runProcess(args, options);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->exitCode, 0) << r->err;
  EXPECT_NE(r->out.find("argus query: kernel tma_gemm"), std::string::npos) << "the text too";
  EXPECT_NE(r->err.find("wrote " + page.string()), std::string::npos) << r->err;
  auto html = argus::readFile(page);
  ASSERT_TRUE(html) << html.error().text();
  EXPECT_EQ(html->rfind("<!DOCTYPE html>", 0), 0u) << html->substr(0, 200);
  EXPECT_NE(html->find("mainloop"), std::string::npos);
  EXPECT_NE(html->find("not collected"), std::string::npos) << "says what did not run";
  EXPECT_EQ(html->find("<script"), std::string::npos) << "no script at view time";

  // The workspace kept the report: `argus report` shows it again as the query printed it, as
  // JSON, or as the page, and names what it holds when asked for something else.
  EXPECT_NE(r->err.find("report kept as a"), std::string::npos) << r->err;
  const std::string ws = (*dir / "ws").string();
  auto again = argus({"report", "last", "--workspace", ws});
  ASSERT_EQ(again.exitCode, 0) << again.err;
  EXPECT_EQ(again.out, r->out);
  auto json = argus({"report", "v1", "--workspace", ws, "--json"});
  ASSERT_EQ(json.exitCode, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["schema"], "argus.report/1");
  const fs::path page2 = *dir / "again.html";
  auto drawn = argus({"report", "--workspace", ws, "--html", page2.string()});
  ASSERT_EQ(drawn.exitCode, 0) << drawn.err;
  EXPECT_EQ(argus::readFile(page2).value_or(""), *html) << "the same page";
  auto none = argus({"report", "a1", "--workspace", ws});
  EXPECT_EQ(none.exitCode, 1);
  EXPECT_NE(none.err.find("holds no report a1; its reports: a"), std::string::npos) << none.err;
  auto bad = argus({"report", "t3", "--workspace", ws});
  EXPECT_EQ(bad.exitCode, 1);
  EXPECT_NE(bad.err.find("give a report artifact"), std::string::npos) << bad.err;

  // A folder that does not exist is refused before the query runs; a renderer that cannot
  // start is an error after the report, which is still printed.
  args[9] = (*dir / "no" / "such" / "r.html").string();
  auto missing = argus::runProcess(args, options);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->exitCode, 1);
  EXPECT_NE(missing->err.find("does not exist"), std::string::npos) << missing->err;
  EXPECT_EQ(missing->out, "");
  auto trace = argus({"query", "--program", kGemmSpec, "--signals", "duration", "--chrome-trace",
                      (*dir / "no" / "t.json").string()});
  EXPECT_EQ(trace.exitCode, 1);
  EXPECT_NE(trace.err.find("--chrome-trace"), std::string::npos) << trace.err;
  EXPECT_NE(trace.err.find("does not exist"), std::string::npos) << trace.err;
  args[9] = page.string();
  options.environment.emplace_back("ARGUS_PYTHON", (*dir / "no-python").string());
  auto noPython = argus::runProcess(args, options);
  ASSERT_TRUE(noPython);
  EXPECT_EQ(noPython->exitCode, 1);
  EXPECT_NE(noPython->err.find("$ARGUS_PYTHON"), std::string::npos) << noPython->err;
  EXPECT_NE(noPython->out.find("argus query: kernel tma_gemm"), std::string::npos);
  fs::remove_all(*dir);
}

TEST(CliQuery, TritonWithoutAGpuPlansAndSaysTheDumpNeedsOne) {
  auto dir = argus::makeTempDir("argus-cli-triton-query");
  ASSERT_TRUE(dir);
  const std::string spec = std::string(ARGUS_SOURCE_DIR) + "/examples/triton_matmul/argus.yaml";
  std::vector<std::string> args{
      ARGUS_BIN,  "query",    "--program", spec,       "--kernel",    "matmul_tma_argus",
      "--region", "mainloop", "--signals", "duration", "--workspace", (*dir / "ws").string(),
      "--json"};
  argus::ProcessOptions options;
  options.timeout = std::chrono::seconds(120);
  options.environment = {{"ARGUS_DEVICES", ""}};  // as on a machine without a GPU
  auto r = argus::runProcess(args, options);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->exitCode, 0) << r->err;
  auto doc = nlohmann::json::parse(r->out);
  EXPECT_EQ(doc["kernel"], "matmul_tma_argus");
  EXPECT_EQ(doc["region"], "mainloop");
  EXPECT_EQ(doc["signals"]["duration"]["status"], "not collected");
  const std::string reason = doc["signals"]["duration"]["reason"];
  EXPECT_NE(reason.find("Triton compiles the kernel"), std::string::npos) << reason;
  EXPECT_NE(reason.find("GPU"), std::string::npos) << reason;
  // Nothing can run: every task is downstream of the dump.
  EXPECT_EQ(doc["run"]["executed"], 0);
  std::set<std::string> skipped;
  for (const auto& n : doc["not_collected"]) skipped.insert(n["task"].get<std::string>());
  EXPECT_EQ(skipped, (std::set<std::string>{"ptx", "variant/full_trace", "build/full_trace",
                                            "collect/p0", "synth/reference_trace"}));
  args.pop_back();
  args.push_back("--require-gpu");
  auto strict = argus::runProcess(args, options);
  ASSERT_TRUE(strict);
  EXPECT_EQ(strict->exitCode, 2) << strict->err;

  // The plan names the dump and its GPU requirement.
  auto plan = argus({"plan", "--program", spec, "--kernel", "matmul_tma_argus", "--region",
                     "mainloop", "--signals", "duration"});
  EXPECT_EQ(plan.exitCode, 0) << plan.err;
  EXPECT_NE(plan.out.find("ptx [transform] triton_dump"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("triton_dump=ptx.triton_dump"), std::string::npos) << plan.out;
  fs::remove_all(*dir);
}

TEST(CliQuery, NeedsAProgramSpec) {
  auto r = argus({"query", "--program", (kData / "regions" / "good_nested.cu").string(), "--region",
                  "main", "--signals", "duration"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("needs a program spec"), std::string::npos) << r.err;
}

}  // namespace

namespace {

TEST(CliPcmap, MapsEverySassInstructionOfTheGemmToRegions) {
  auto r = argus({"pcmap", kGemmSpec, "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema"], "argus.pcmap/1");
  EXPECT_TRUE(doc["painted_sass_equals_reference"].get<bool>());
  ASSERT_GT(doc["entries"].size(), 100u);
  bool mmaInMma = false;
  for (const auto& e : doc["entries"]) {
    EXPECT_EQ(e["kernel"], "tma_gemm");
    for (const auto& region : e["regions"])
      mmaInMma = mmaInMma ||
                 (region == "mainloop/mma" && e["opcode"].get<std::string>().starts_with("HGMMA"));
  }
  EXPECT_TRUE(mmaInMma) << "no HGMMA attributed to mainloop/mma";
  EXPECT_GT(doc["static_instructions_per_region"]["tma_gemm"]["mainloop/tma_load"].get<int>(), 0);
  EXPECT_GT(doc["static_instructions_per_source_file"]["tma_gemm"]["kernel.cu"].get<int>(), 0);
}

}  // namespace

namespace {

TEST(CliPtx, DiscoverFindsTheGemmsTmaLoadsAndTheirBarrier) {
  auto r = argus({"ptx", "discover", (kData / "ptx" / "examples_tma_gemm.ptx").string(), "--region",
                  "mainloop/tma_load", "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto sites = nlohmann::json::parse(r.out);
  ASSERT_EQ(sites.size(), 2u);
  for (const auto& site : sites) {
    EXPECT_EQ(site["kind"], "tma_load");
    EXPECT_EQ(site["completion"]["kind"], "barrier");
    EXPECT_TRUE(site["completion"]["barrier"]["resolved"].get<bool>());
    const auto& phase = site["completion"]["waits"][0]["parity"]["phase"];
    EXPECT_EQ(phase["form"], "iteration");
    EXPECT_EQ(phase["stages"], 3);
  }
  auto text = argus({"ptx", "discover", (kData / "ptx" / "examples_tma_gemm.ptx").string(),
                     "--region", "mainloop/tma_load"});
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_NE(text.out.find("phase iteration: (%r147 / 3) & 1"), std::string::npos) << text.out;
  auto bad = argus(
      {"ptx", "discover", (kData / "ptx" / "examples_tma_gemm.ptx").string(), "--region", "nope"});
  EXPECT_EQ(bad.exitCode, 1);
  EXPECT_NE(bad.err.find("unknown region `nope`"), std::string::npos) << bad.err;
}

}  // namespace
