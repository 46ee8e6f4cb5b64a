#include "argus/program/build.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "argus/support/process.h"
#include "argus/workspace/workspace.h"

namespace argus::program {
namespace {

namespace fs = std::filesystem;

const fs::path kExamples = ARGUS_EXAMPLES_DIR;

// --- Parsing nvcc -dryrun (no tools needed) ------------------------------------------------------

// The shape nvcc 13.0 prints (abridged): environment assignments, then commands with quoted
// arguments and $VAR references.
constexpr std::string_view kDryrun =
    "#$ _NVVM_BRANCH_=nvvm\n"
    "#$ _SPACE_= \n"
    "#$ _TARGET_DIR_=\n"
    "#$ _TARGET_DIR_=targets/x86_64-linux\n"
    "#$ CICC_PATH=/usr/local/cuda/bin/../nvvm/bin\n"
    "#$ LIBRARIES=  \"-L/usr/local/cuda/lib/stubs\" \"-L/usr/local/cuda/lib\"\n"
    "nvcc warning : something unrelated\n"
    "#$ \"$CICC_PATH/cicc\" --c++17 -arch compute_90a --orig_src_path_name \"/a b/kernel.cu\" "
    "\"/k/kernel.cpp1.ii\" -o \"/k/kernel.ptx\"\n"
    "#$ ptxas -arch=sm_90a -m64  \"/k/kernel.ptx\"  -o \"/k/kernel.sm_90a.cubin\" \n"
    "#$ gcc -DFATBINFILE=\"\\\"/k/x.fatbin.c\\\"\" -c x.cpp\n";

TEST(Dryrun, ParsesAssignmentsAndCommands) {
  auto lines = parseDryrun(kDryrun);
  ASSERT_TRUE(lines) << lines.error().text();
  ASSERT_EQ(lines->size(), 9u);
  EXPECT_TRUE((*lines)[0].assignment);
  EXPECT_EQ((*lines)[0].name, "_NVVM_BRANCH_");
  EXPECT_EQ((*lines)[0].value, "nvvm");
  EXPECT_EQ((*lines)[1].value, " ");
  EXPECT_EQ((*lines)[2].value, "");
  EXPECT_EQ((*lines)[5].name, "LIBRARIES");
  EXPECT_EQ((*lines)[5].value, "  \"-L/usr/local/cuda/lib/stubs\" \"-L/usr/local/cuda/lib\"");

  const DryrunLine& cicc = (*lines)[6];
  EXPECT_FALSE(cicc.assignment);
  EXPECT_EQ(cicc.name, "cicc");
  ASSERT_GE(cicc.words.size(), 2u);
  EXPECT_EQ(cicc.words.front(), "$CICC_PATH/cicc");
  EXPECT_EQ(cicc.words[5], "/a b/kernel.cu");
  EXPECT_EQ(cicc.words.back(), "/k/kernel.ptx");

  EXPECT_EQ((*lines)[7].name, "ptxas");
  EXPECT_EQ((*lines)[7].words.back(), "/k/kernel.sm_90a.cubin");
  EXPECT_EQ((*lines)[8].words[1], "-DFATBINFILE=\"/k/x.fatbin.c\"");
}

TEST(Dryrun, UnbalancedQuoteIsAnError) {
  auto lines = parseDryrun("#$ ptxas \"/k/kernel.ptx\n");
  ASSERT_FALSE(lines);
  EXPECT_NE(lines.error().message.find("unbalanced"), std::string::npos);
}

TEST(Dryrun, ShellWords) {
  auto words = splitShellWords(R"(a 'b c' "d\"e" f\ g "$X/y")");
  ASSERT_TRUE(words);
  EXPECT_EQ(*words, (std::vector<std::string>{"a", "b c", "d\"e", "f g", "$X/y"}));
}

// --- Building (needs nvcc and cuobjdump, no GPU) -------------------------------------------------

/// tma_gemm's PTX with the B tile's shared-memory offset (8192 = 64x64 halves after the A tile)
/// made 12345 (0x3039 in the SASS): a variant whose machine code differs in a way one can look
/// for. Unchanged when the offset is not found.
std::string withOffset12345(const std::string& ptx) {
  static const std::regex add(R"((add\.s32\s+%r\d+, %r\d+, )8192;)");
  std::smatch match;
  if (!std::regex_search(ptx, match, add)) return ptx;
  std::string modified = ptx;
  modified.replace(static_cast<size_t>(match.position(0)), static_cast<size_t>(match.length(0)),
                   match[1].str() + "12345;");
  return modified;
}

class VariantBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto nvcc = findTool("nvcc"); !nvcc) GTEST_SKIP() << nvcc.error().text();
    auto dir = makeTempDir("argus-build-test");
    ASSERT_TRUE(dir) << dir.error().text();
    root_ = *dir;
    auto spec = loadProgramSpec(kExamples / "tma_gemm" / "argus.yaml");
    ASSERT_TRUE(spec) << spec.error().text();
    spec_ = std::move(*spec);
  }
  void TearDown() override {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }

  /// Instruction lines of `cuobjdump -sass` (addresses and encodings included, headers not).
  std::string sass(const fs::path& binary) {
    auto tool = findTool("cuobjdump");
    if (!tool) {
      ADD_FAILURE() << tool.error().text();
      return {};
    }
    auto run = runProcess({tool->string(), "-sass", binary.string()});
    EXPECT_TRUE(run && run->exitCode == 0) << (run ? run->err : run.error().text());
    if (!run) return {};
    static const std::regex instruction(R"(/\*[0-9a-f]{4,}\*/)");
    std::string out;
    size_t begin = 0;
    while (begin < run->out.size()) {
      size_t end = run->out.find('\n', begin);
      if (end == std::string::npos) end = run->out.size();
      std::string line = run->out.substr(begin, end - begin);
      if (std::regex_search(line, instruction) || line.find("Function :") != std::string::npos)
        out += line + '\n';
      begin = end + 1;
    }
    return out;
  }

  fs::path root_;
  ProgramSpec spec_;
};

TEST_F(VariantBuild, UnmodifiedPtxBuildsTheSameSassAsNvcc) {
  auto ptx = frontEndPtx(spec_);
  ASSERT_TRUE(ptx) << ptx.error().text();
  auto built = buildWithPtx(spec_, *ptx, root_ / "variant");
  ASSERT_TRUE(built) << built.error().text();
  EXPECT_TRUE(fs::is_regular_file(built->executable));
  EXPECT_TRUE(fs::is_regular_file(built->cubin));
  EXPECT_TRUE(fs::is_regular_file(built->logFile));
  EXPECT_NE(built->log().find("ptxas"), std::string::npos);
  EXPECT_NE(built->log().find("cicc"), std::string::npos);

  // The reference: nvcc building the spec in one command, as a user would.
  auto nvcc = findTool("nvcc");
  ASSERT_TRUE(nvcc);
  std::vector<std::string> argv{nvcc->string(), "-lineinfo", "-I" ARGUS_INCLUDE_DIR};
  argv.insert(argv.end(), spec_.nvccFlags.begin(), spec_.nvccFlags.end());
  for (const auto& dir : spec_.includeDirs) argv.push_back("-I" + dir.string());
  argv.push_back(spec_.sources.front().string());
  for (const auto& host : spec_.hostSources) argv.push_back(host.string());
  const fs::path reference = root_ / "reference";
  argv.insert(argv.end(), {"-o", reference.string()});
  auto run = runProcess(
      argv, {.workingDirectory = root_, .timeout = std::chrono::seconds(600), .environment = {}});
  ASSERT_TRUE(run && run->exitCode == 0) << (run ? run->err : run.error().text());

  const std::string expected = sass(reference);
  ASSERT_NE(expected.find("Function : tma_gemm"), std::string::npos) << expected;
  EXPECT_EQ(sass(built->executable), expected);
  EXPECT_EQ(sass(built->cubin), expected);
}

TEST_F(VariantBuild, ModifiedPtxIsWhatPtxasCompiles) {
  auto ptx = frontEndPtx(spec_);
  ASSERT_TRUE(ptx) << ptx.error().text();
  const std::string modified = withOffset12345(*ptx);
  ASSERT_NE(modified, *ptx) << "no `add.s32 ..., 8192` in the PTX";

  auto original = buildWithPtx(spec_, *ptx, root_ / "original");
  ASSERT_TRUE(original) << original.error().text();
  auto changed = buildWithPtx(spec_, modified, root_ / "changed");
  ASSERT_TRUE(changed) << changed.error().text();
  const std::string before = sass(original->executable);
  const std::string after = sass(changed->executable);
  EXPECT_NE(before, after);
  EXPECT_EQ(before.find("0x3039"), std::string::npos);  // 12345
  EXPECT_NE(after.find("0x3039"), std::string::npos) << after;
  auto kept = readFile(changed->ptx);
  ASSERT_TRUE(kept);
  EXPECT_EQ(*kept, modified);
}

// Variants link with gold where the host has it (faster for every probe build), and a link gold
// refuses (here an ld.bfd-only option from the spec's link_libraries) is run again with the
// default linker, so the build still succeeds and the log says which linker made it.
TEST_F(VariantBuild, LinksWithGoldAndFallsBackToTheDefaultLinker) {
  if (auto gold = findTool("ld.gold"); !gold) GTEST_SKIP() << "no ld.gold on this host";
  auto ptx = frontEndPtx(spec_);
  ASSERT_TRUE(ptx) << ptx.error().text();
  auto built = buildWithPtx(spec_, *ptx, root_ / "gold");
  ASSERT_TRUE(built) << built.error().text();
  EXPECT_NE(built->log().find("step `nvcc link (gold)`: exit 0"), std::string::npos)
      << built->log();

  spec_.linkLibraries.push_back("--linker-options=--no-warn-rwx-segments");  // ld.bfd 2.39+
  auto retried = buildWithPtx(spec_, *ptx, root_ / "default");
  ASSERT_TRUE(retried) << retried.error().text();
  EXPECT_TRUE(fs::is_regular_file(retried->executable));
  const std::string log = retried->log();
  EXPECT_NE(log.find("step `nvcc link (gold)`: exit 1"), std::string::npos) << log;
  EXPECT_NE(log.find("step `nvcc link (gold failed: default linker)`: exit 0"), std::string::npos)
      << log;
}

TEST_F(VariantBuild, BadPtxNamesPtxasAndTheLine) {
  auto ptx = frontEndPtx(spec_);
  ASSERT_TRUE(ptx) << ptx.error().text();
  std::string bad = *ptx;
  const size_t at = bad.find("add.s32");
  ASSERT_NE(at, std::string::npos);
  const size_t line = static_cast<size_t>(std::count(bad.begin(), bad.begin() + at, '\n')) + 1;
  bad.replace(at, 7, "frobnicate.s32");
  auto built = buildWithPtx(spec_, bad, root_ / "bad");
  ASSERT_FALSE(built);
  const std::string& message = built.error().message;
  EXPECT_EQ(built.error().component, "build");
  EXPECT_NE(message.find("step `ptxas` failed"), std::string::npos) << message;
  EXPECT_NE(message.find("line " + std::to_string(line)), std::string::npos) << message;
  // The message points at the PTX that stays behind, not at a deleted temporary file.
  EXPECT_NE(message.find((root_ / "bad" / "kernel.ptx").string()), std::string::npos) << message;
  EXPECT_TRUE(fs::is_regular_file(root_ / "bad" / "build.log"));
}

// --- Recording variants ------------------------------------------------------------------------

TEST(RecordVariant, AddsAVariantVersionOnItsBase) {
  auto dir = makeTempDir("argus-record-test");
  ASSERT_TRUE(dir);
  {
    auto ws = workspace::Workspace::open(*dir / ".argus", {.syncBlobs = false});
    ASSERT_TRUE(ws) << ws.error().text();
    auto base = ws->addVersion({.kind = workspace::VersionKind::program,
                                .label = "tma_gemm",
                                .files = {{"kernel.cu", "cuda_source", "__global__ void k() {}"},
                                          {"kernel.ptx", "ptx", "// original"}}});
    ASSERT_TRUE(base) << base.error().text();
    VariantFiles files;
    files.ptx = "// traced";
    files.cubin = "cubin bytes";
    files.traceMap = R"({"argus_trace_map":1})";
    files.optionsJson = R"({"transforms":["lower_markers_to_trace"]})";
    auto variant = recordVariant(*ws, *base, "trace", files);
    ASSERT_TRUE(variant) << variant.error().text();

    auto record = ws->version(*variant);
    ASSERT_TRUE(record);
    EXPECT_EQ(record->kind, workspace::VersionKind::variant);
    ASSERT_TRUE(record->base);
    EXPECT_EQ(*record->base, *base);
    EXPECT_EQ(record->transform, "trace");
    EXPECT_EQ(record->label, "variant/trace");
    auto lineage = ws->lineage(*variant);
    ASSERT_TRUE(lineage);
    EXPECT_EQ(lineage->size(), 2u);

    auto fileList = ws->versionFiles(*variant);
    ASSERT_TRUE(fileList);
    std::map<std::string, std::string> contents;
    for (const auto& f : *fileList) {
      auto bytes = ws->readArtifact(f.artifact.id);
      ASSERT_TRUE(bytes);
      contents[f.name] = *bytes;
    }
    EXPECT_EQ(contents["kernel.cu"], "__global__ void k() {}");  // inherited from the base
    EXPECT_EQ(contents["kernel.ptx"], "// traced");              // replaced
    EXPECT_EQ(contents["kernel.cubin"], "cubin bytes");
    EXPECT_EQ(contents["trace_map.json"], R"({"argus_trace_map":1})");
    EXPECT_FALSE(contents.contains("executable"));

    EXPECT_FALSE(recordVariant(*ws, *base, "", files));
    EXPECT_FALSE(recordVariant(*ws, *base, "empty", VariantFiles{}));
  }
  std::error_code ec;
  fs::remove_all(*dir, ec);
}

}  // namespace
}  // namespace argus::program

namespace argus::program {
namespace {

/// Sets an environment variable for one scope, so that a failed assertion cannot leave it set
/// for the tests after it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

/// Appends a comment line to a source file: new bytes, same program.
::testing::AssertionResult appendComment(const fs::path& file) {
  auto text = readFile(file);
  if (!text) return ::testing::AssertionFailure() << text.error().text();
  if (!writeFile(file, *text + "\n// edited\n"))
    return ::testing::AssertionFailure() << "cannot write " << file;
  return ::testing::AssertionSuccess();
}

bool hasCachedHostStep(const BuildResult& r) {
  return std::ranges::any_of(r.steps, [](const BuildStep& s) {
    return s.name.starts_with("nvcc -c") && s.name.find("(cached)") != std::string::npos;
  });
}

bool hasCachedFrontEnd(const BuildResult& r) {
  return std::ranges::any_of(
      r.steps, [](const BuildStep& s) { return s.name == "device front end (cached)"; });
}

// The host object is compiled once per content and reused by later variants; a changed host
// source (or header) is compiled again.
TEST_F(VariantBuild, HostObjectsAreReusedUntilAnInputChanges) {
  const ScopedEnv cache("ARGUS_BUILD_CACHE", (root_ / "cache").string());
  auto ptx = frontEndPtx(spec_);
  ASSERT_TRUE(ptx) << ptx.error().text();
  auto first = buildWithPtx(spec_, *ptx, root_ / "a");
  ASSERT_TRUE(first) << first.error().text();
  EXPECT_FALSE(hasCachedHostStep(*first));
  auto second = buildWithPtx(spec_, *ptx, root_ / "b");
  ASSERT_TRUE(second) << second.error().text();
  EXPECT_TRUE(hasCachedHostStep(*second));
  auto a = readFile(first->executable);
  auto b = readFile(second->executable);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);  // same inputs, same executable

  // A copy of the example whose host source differs by a comment is compiled, not reused.
  const fs::path copy = root_ / "example";
  fs::copy(spec_.file.parent_path(), copy, fs::copy_options::recursive);
  ProgramSpec edited = spec_;
  edited.hostSources = {copy / spec_.hostSources.front().filename()};
  ASSERT_TRUE(appendComment(edited.hostSources.front()));
  auto third = buildWithPtx(edited, *ptx, root_ / "c");
  ASSERT_TRUE(third) << third.error().text();
  EXPECT_FALSE(hasCachedHostStep(*third));
}

// The device source's front end (gcc -E, cudafe++, cicc) runs once; later variants run only
// ptxas onward on their own PTX. Editing a header the device code includes runs it again.
TEST_F(VariantBuild, DeviceFrontEndIsReusedAndThePtxStillSubstituted) {
  const ScopedEnv cache("ARGUS_BUILD_CACHE", (root_ / "cache").string());
  auto ptx = frontEndPtx(spec_);
  ASSERT_TRUE(ptx) << ptx.error().text();
  auto first = buildWithPtx(spec_, *ptx, root_ / "a");
  ASSERT_TRUE(first) << first.error().text();
  EXPECT_FALSE(hasCachedFrontEnd(*first));
  EXPECT_NE(first->log().find("cicc"), std::string::npos);

  const std::string modified = withOffset12345(*ptx);
  ASSERT_NE(modified, *ptx) << "no `add.s32 ..., 8192` in the PTX";
  auto second = buildWithPtx(spec_, modified, root_ / "b");
  ASSERT_TRUE(second) << second.error().text();
  EXPECT_TRUE(hasCachedFrontEnd(*second));
  EXPECT_FALSE(
      std::ranges::any_of(second->steps, [](const BuildStep& s) { return s.name == "cicc"; }));
  EXPECT_EQ(sass(second->executable), sass(second->cubin));
  EXPECT_NE(sass(second->executable).find("0x3039"), std::string::npos);
  EXPECT_EQ(sass(first->executable).find("0x3039"), std::string::npos);

  // A copy of the example: its front end is cached once, then a comment added to the header its
  // kernel includes makes the next build run the front end again.
  const fs::path copy = root_ / "example";
  fs::copy(spec_.file.parent_path(), copy, fs::copy_options::recursive);
  ProgramSpec edited = spec_;
  edited.sources = {copy / spec_.sources.front().filename()};
  auto before = buildWithPtx(edited, *ptx, root_ / "c0");
  ASSERT_TRUE(before) << before.error().text();
  auto again = buildWithPtx(edited, *ptx, root_ / "c1");
  ASSERT_TRUE(again) << again.error().text();
  EXPECT_TRUE(hasCachedFrontEnd(*again));
  ASSERT_TRUE(appendComment(copy / "tma_gemm.h"));
  auto third = buildWithPtx(edited, *ptx, root_ / "c");
  ASSERT_TRUE(third) << third.error().text();
  EXPECT_FALSE(hasCachedFrontEnd(*third));
}

/// The bytes of `binary`'s .nv_fatbin section (objcopy), where the fatbins of its device code are.
std::string fatbinSection(const fs::path& binary, const fs::path& out) {
  auto run = runProcess(
      {"objcopy", "-O", "binary", "--only-section=.nv_fatbin", binary.string(), out.string()});
  EXPECT_TRUE(run && run->exitCode == 0) << (run ? run->err : run.error().text());
  auto bytes = readFile(out);
  EXPECT_TRUE(bytes);
  return bytes ? *bytes : std::string();
}

// The stub's host compile is the same for every variant once the fatbin's bytes are taken out
// of it: it runs once, later variants assemble only their fatbin and join it to the cached stub.
// The executable carries exactly the fatbin nvcc's own step would have embedded.
TEST_F(VariantBuild, HostStubIsCompiledOnceAndEachVariantEmbedsItsOwnFatbin) {
  auto ptx = frontEndPtx(spec_);
  ASSERT_TRUE(ptx) << ptx.error().text();
  const std::string modified = withOffset12345(*ptx);
  ASSERT_NE(modified, *ptx) << "no `add.s32 ..., 8192` in the PTX";
  auto stubStep = [](const BuildResult& r, std::string_view name) {
    return std::ranges::any_of(r.steps, [&](const BuildStep& s) { return s.name == name; });
  };
  std::string uncachedFatbin;
  {
    const ScopedEnv off("ARGUS_BUILD_CACHE", "off");
    auto plain = buildWithPtx(spec_, modified, root_ / "plain");
    ASSERT_TRUE(plain) << plain.error().text();
    EXPECT_FALSE(stubStep(*plain, "gcc (stub)"));  // nvcc's own step, fatbin embedded
    uncachedFatbin = fatbinSection(plain->executable, root_ / "plain.fatbin");
  }
  const ScopedEnv cache("ARGUS_BUILD_CACHE", (root_ / "cache").string());
  auto first = buildWithPtx(spec_, *ptx, root_ / "a");
  ASSERT_TRUE(first) << first.error().text();
  EXPECT_TRUE(stubStep(*first, "gcc (stub)")) << first->log();
  auto second = buildWithPtx(spec_, modified, root_ / "b");
  ASSERT_TRUE(second) << second.error().text();
  EXPECT_TRUE(stubStep(*second, "gcc (stub, cached)")) << second->log();
  EXPECT_TRUE(stubStep(*second, "ld -r (stub + fatbin data)")) << second->log();
  EXPECT_EQ(sass(second->executable), sass(second->cubin));
  EXPECT_NE(sass(second->executable).find("0x3039"), std::string::npos);
  EXPECT_EQ(sass(first->executable).find("0x3039"), std::string::npos);
  EXPECT_FALSE(uncachedFatbin.empty());
  EXPECT_EQ(fatbinSection(second->executable, root_ / "b.fatbin"), uncachedFatbin);
}

TEST(SplitFatbinData, RefusesTextItDoesNotKnow) {
  EXPECT_FALSE(splitFatbinData(""));
  EXPECT_FALSE(splitFatbinData("asm(\n\".section .other\\n\"\n\".text\\n\");\n"));
}

// A cache over its size limit drops its least recently used entries, never the one just stored.
TEST_F(VariantBuild, BuildCacheStaysUnderItsLimit) {
  const fs::path cacheDir = root_ / "small-cache";
  const ScopedEnv cache("ARGUS_BUILD_CACHE", cacheDir.string());
  auto ptx = frontEndPtx(spec_);
  ASSERT_TRUE(ptx) << ptx.error().text();
  {
    // 1 KiB: each store evicts every other entry.
    const ScopedEnv limit("ARGUS_BUILD_CACHE_MAX_MB", "0.001");
    auto first = buildWithPtx(spec_, *ptx, root_ / "a");
    ASSERT_TRUE(first) << first.error().text();
    size_t manifests = 0;
    for (const auto& e : fs::directory_iterator(cacheDir))
      manifests += e.path().extension() == ".deps";
    EXPECT_EQ(manifests, 1u);  // the front end was stored, then evicted by the host object
    auto second = buildWithPtx(spec_, *ptx, root_ / "b");
    ASSERT_TRUE(second) << second.error().text();
    // Its front end was evicted, and storing it again evicted the host object in turn.
    EXPECT_FALSE(hasCachedFrontEnd(*second));
    EXPECT_FALSE(hasCachedHostStep(*second));
  }
  auto third = buildWithPtx(spec_, *ptx, root_ / "c");  // no limit: both entries stay
  ASSERT_TRUE(third) << third.error().text();
  auto fourth = buildWithPtx(spec_, *ptx, root_ / "d");
  ASSERT_TRUE(fourth) << fourth.error().text();
  EXPECT_TRUE(hasCachedFrontEnd(*fourth));
  EXPECT_TRUE(hasCachedHostStep(*fourth));
}

}  // namespace
}  // namespace argus::program
