#include <fmt/format.h>
#include <gtest/gtest.h>

#include "argus/program/build.h"
#include "argus/program/program.h"
#include "argus/program/triton.h"
#include "argus/support/process.h"

namespace argus::program {
namespace {

namespace fs = std::filesystem;

class SpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = makeTempDir("argus-spec-test");
    ASSERT_TRUE(dir);
    dir_ = *dir;
    ASSERT_TRUE(writeFile(dir_ / "kernel.cu", "__global__ void k() {}\n"));
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result<ProgramSpec> load(const std::string& yaml) {
    EXPECT_TRUE(writeFile(dir_ / "argus.yaml", yaml));
    return loadProgramSpec(dir_ / "argus.yaml");
  }

  fs::path dir_;
};

// Issue 29, defect 2: `name` named the executable's path, so `/tmp/x` or `../../x` wrote outside
// the build folder, and the Triton wrapper pasted it into a shell script.
TEST_F(SpecTest, RefusesANameThatIsAPath) {
  for (const char* name :
       {"/tmp/x", "../../x", "a/b", ".hidden", "-flag", "a b", "x;rm -rf ~", "$(reboot)", "\"\""}) {
    auto spec =
        load(fmt::format("name: {}\nsources: [kernel.cu]\nrun: {{command: [\"{{exe}}\"]}}\n",
                         name[0] == '"' ? std::string(name) : fmt::format("'{}'", name)));
    ASSERT_FALSE(spec) << name;
    EXPECT_NE(spec.error().message.find("a program name is a plain file name"), std::string::npos)
        << spec.error().text();
    EXPECT_NE(spec.error().message.find("argus.yaml"), std::string::npos) << spec.error().text();
  }
  for (const char* name : {"tma_gemm", "v1.2-fork", "A9"}) {
    auto spec = load(
        fmt::format("name: {}\nsources: [kernel.cu]\nrun: {{command: [\"{{exe}}\"]}}\n", name));
    EXPECT_TRUE(spec) << name << ": " << spec.error().text();
  }
}

// Issue 29, defect 3: a field of the wrong YAML type aborted the process (an uncaught
// YAML::TypedBadConversion); each must be an error naming the file, the line and the field.
TEST_F(SpecTest, WrongYamlTypesAreErrorsThatNameTheField) {
  struct Case {
    const char* yaml;
    const char* field;
  };
  const std::string base = "name: t\nsources: [kernel.cu]\n";
  for (const auto& c : std::initializer_list<Case>{
           {"language: [cuda]\nrun: {command: [x]}\n", "language"},
           {"arch: {a: 1}\nrun: {command: [x]}\n", "arch"},
           {"run: {command: [x], timeout_s: 5m}\n", "run.timeout_s"},
           {"run: {command: [x], success: {exit_code: zero}}\n", "run.success.exit_code"},
           {"run: {command: [x], success: yes}\n", "run.success"},
           {"run: {command: [x], success: {stdout_contains: [a]}}\n",
            "run.success.stdout_contains"},
           {"run: {command: [x], skip_exit_code: [77]}\n", "run.skip_exit_code"},
           {"run: {command: [x], gpus: [1]}\n", "run.gpus"},
           {"run: {command: [x], env: {A: [1, 2]}}\n", "run.env.A"},
           {"run: {command: [x]}\nkernels: [{name: [k]}]\n", "kernels[0].name"},
           {"run: {command: [x]}\nkernels: [{name: k, regions: [{path: {a: b}}]}]\n",
            "kernels[0].regions[].path"},
           {"run: {command: [x]}\nkernels: [{name: k, regions: main}]\n", "kernels[0].regions"},
           {"run: {command: [x]}\nkernels: [k]\n", "kernels[0].name"}}) {
    auto spec = load(base + c.yaml);
    ASSERT_FALSE(spec) << c.yaml;
    EXPECT_NE(spec.error().message.find(fmt::format("field `{}`", c.field)), std::string::npos)
        << c.yaml << " -> " << spec.error().text();
    EXPECT_NE(spec.error().message.find("argus.yaml"), std::string::npos) << spec.error().text();
  }
  // The line and column of the offending value, as an editor shows them.
  auto located = load(base + "run:\n  command: [x]\n  timeout_s: 5m\n");
  ASSERT_FALSE(located);
  EXPECT_NE(located.error().message.find("argus.yaml:5:14: field `run.timeout_s`: is `5m`"),
            std::string::npos)
      << located.error().text();
}

// Issue 29, defect 6: `timeout_s` took negative, NaN and huge values (a duration that overflows).
TEST_F(SpecTest, TimeoutMustBePositiveAndAtMostAWeek) {
  const std::string base = "name: t\nsources: [kernel.cu]\nrun:\n  command: [x]\n  timeout_s: ";
  for (const char* value : {"-5", "0", ".nan", ".inf", "1e300", "604801"}) {
    auto spec = load(base + value + "\n");
    ASSERT_FALSE(spec) << value;
    EXPECT_NE(spec.error().message.find(fmt::format(
                  "argus.yaml:5:14: field `run.timeout_s`: is `{}`; give a number of seconds "
                  "greater than 0 and at most 604800 (a week)",
                  value)),
              std::string::npos)
        << spec.error().text();
  }
  for (const char* value : {"0.5", "300", "604800"}) {
    auto spec = load(base + value + "\n");
    ASSERT_TRUE(spec) << value << ": " << spec.error().text();
    EXPECT_EQ(spec->run.timeoutSeconds, std::stod(value));
  }
}

TEST_F(SpecTest, ASpecPathThatIsADirectorySaysSo) {
  auto spec = loadProgramSpec(dir_);
  ASSERT_FALSE(spec);
  EXPECT_NE(spec.error().message.find(fmt::format(
                "{} is a directory; give a program spec file (a YAML file such as argus.yaml",
                dir_.string())),
            std::string::npos)
      << spec.error().text();
  ASSERT_TRUE(writeFile(dir_ / "argus.yaml",
                        "name: t\nsources: [kernel.cu]\nrun: {command: [\"{exe}\"]}\n"));
  spec = loadProgramSpec(dir_);
  ASSERT_FALSE(spec);
  EXPECT_NE(spec.error().message.find(
                fmt::format("this directory has one: {}", (dir_ / "argus.yaml").string())),
            std::string::npos)
      << spec.error().text();
}

// Issue 29, defect 6: `sources` could name any file on the machine (`/etc/passwd`), which Argus
// then read, compiled and stored; by default every file a spec lists stays under its folder.
TEST_F(SpecTest, SourcesOutsideTheSpecsFolderAreRefusedUnlessAllowed) {
  auto outside = makeTempDir("argus-spec-outside");
  ASSERT_TRUE(outside);
  ASSERT_TRUE(writeFile(*outside / "other.cu", "__global__ void o() {}\n"));
  fs::create_directories(dir_ / "sub");
  fs::create_symlink(*outside / "other.cu", dir_ / "sub" / "link.cu");
  const std::string run = "run: {command: [\"{exe}\"]}\n";
  struct Case {
    std::string yaml;
    std::string field;
  };
  for (const auto& c : std::vector<Case>{
           {"sources: [/etc/passwd]\n", "sources"},
           {"sources: [" + (*outside / "other.cu").string() + "]\n", "sources"},
           {"sources: [../" + outside->filename().string() + "/other.cu]\n", "sources"},
           {"sources: [sub/link.cu]\n", "sources"},
           {"sources: [kernel.cu]\nhost_sources: [/etc/passwd]\n", "host_sources"}}) {
    auto spec = load("name: t\n" + c.yaml + run);
    ASSERT_FALSE(spec) << c.yaml;
    const std::string& msg = spec.error().message;
    EXPECT_NE(msg.find("argus.yaml: field `" + c.field + "`"), std::string::npos) << msg;
    EXPECT_NE(msg.find("is outside the spec's folder " + dir_.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("ARGUS_ALLOW_OUTSIDE_SOURCES=1"), std::string::npos) << msg;
  }
  // Inside the folder, also through `..` that comes back, is fine.
  auto inside = load("name: t\nsources: [sub/../kernel.cu]\n" + run);
  EXPECT_TRUE(inside) << inside.error().text();
  // The person running Argus may allow it.
  ::setenv("ARGUS_ALLOW_OUTSIDE_SOURCES", "1", 1);
  auto allowed = load("name: t\nsources: [sub/link.cu]\n" + run);
  ::unsetenv("ARGUS_ALLOW_OUTSIDE_SOURCES");
  ASSERT_TRUE(allowed) << allowed.error().text();
  EXPECT_EQ(allowed->sources.front(), fs::canonical(*outside / "other.cu"));
  fs::remove_all(*outside);
}

TEST_F(SpecTest, LoadsRunAndCheck) {
  auto spec = load(
      "name: t\nsources: [kernel.cu]\nrun:\n  command: [\"{exe}\", \"--n\", \"4\"]\n"
      "  success: {exit_code: 0, stdout_contains: PASS}\n  env: {A: \"1\"}\n"
      "check:\n  command: [python3, check.py]\nkernels:\n  - name: k\n");
  ASSERT_TRUE(spec) << spec.error().text();
  EXPECT_EQ(spec->name, "t");
  EXPECT_EQ(spec->run.command, (std::vector<std::string>{"{exe}", "--n", "4"}));
  EXPECT_EQ(spec->run.stdoutContains, "PASS");
  EXPECT_EQ(spec->run.environment.at("A"), "1");
  EXPECT_EQ(spec->check, (std::vector<std::string>{"python3", "check.py"}));
  ASSERT_EQ(spec->kernels.size(), 1u);
  EXPECT_TRUE(spec->sources.front().is_absolute());
  EXPECT_EQ(spec->run.gpus, 1u);  // one GPU unless the spec says otherwise
  auto two = load("name: t\nsources: [kernel.cu]\nrun: {command: [\"{exe}\"], gpus: 2}\n");
  ASSERT_TRUE(two) << two.error().text();
  EXPECT_EQ(two->run.gpus, 2u);
  auto all = load("name: t\nsources: [kernel.cu]\nrun: {command: [\"{exe}\"], gpus: all}\n");
  ASSERT_TRUE(all) << all.error().text();
  EXPECT_EQ(all->run.gpus, 0u);
  EXPECT_FALSE(spec->kernels.front().block);
  auto shaped = load(
      "name: t\nsources: [kernel.cu]\nrun: {command: [\"{exe}\"]}\n"
      "kernels:\n  - name: k\n    block: [384]\n  - name: j\n    block: [32, 4, 2]\n");
  ASSERT_TRUE(shaped) << shaped.error().text();
  EXPECT_EQ(shaped->kernels[0].block, (std::array<std::uint32_t, 3>{384, 1, 1}));
  EXPECT_EQ(shaped->kernels[1].block, (std::array<std::uint32_t, 3>{32, 4, 2}));
  EXPECT_EQ(blockShapes(*shaped), (std::map<std::string, std::array<std::uint32_t, 3>>{
                                      {"k", {384, 1, 1}}, {"j", {32, 4, 2}}}));
  EXPECT_TRUE(blockShapes(*spec).empty());
}

TEST_F(SpecTest, ErrorsNameTheFileAndField) {
  struct Case {
    std::string yaml;
    std::string expected;
  };
  const std::string run = "run: {command: [\"{exe}\"]}\n";
  for (const auto& c : std::vector<Case>{
           {"name: t\nsources: [kernel.cu]\n" + run + "nam: x\n",
            "field `nam`: is not a spec field"},
           {"sources: [kernel.cu]\n" + run, "field `name`: is required"},
           {"name: t\nsources: [missing.cu]\n" + run, "field `sources`: `missing.cu`"},
           {"name: t\nsources: []\n" + run, "field `sources`: must list at least one"},
           {"name: t\nsources: [kernel.cu]\n", "field `run.command`: is required"},
           {"name: t\nsources: [kernel.cu]\n" + run + "check: {command: []}\n",
            "field `check.command`: must not be empty"},
           {"name: t\nsources: [kernel.cu\n", "not valid YAML"},
           {"name: t\nsources: [kernel.cu, kernel.cu]\n" + run,
            "field `sources`: lists 2 files; Argus transforms one device source"},
           {"name: t\nsources: [kernel.cu]\nrun: {command: [\"{exe}\"], gpus: 0}\n",
            "field `run.gpus`: is `0`; give a count (1, 2, ...) or `all`"},
           {"name: t\nsources: [kernel.cu]\nrun: {command: [\"{exe}\"], gpus: two}\n",
            "field `run.gpus`: is `two`"},
           {"name: t\nsources: [kernel.cu]\nrun: {command: [\"{exe}\"], gpu: 2}\n",
            "field `run.gpu`: is not a run field"},
           {"name: t\nsources: [kernel.cu]\n" + run + "kernels:\n  - name: k\n    block: [0]\n",
            "field `kernels[0].block`: must be a list of 1 to 3 positive integers"},
           {"name: t\nsources: [kernel.cu]\n" + run +
                "kernels:\n  - name: k\n    block: [128, 1, 1, 1]\n",
            "field `kernels[0].block`"},
           {"name: t\nsources: [kernel.cu]\n" + run + "kernels:\n  - name: k\n    block: 128\n",
            "field `kernels[0].block`"},
           {"name: t\nsources: [kernel.cu]\n" + run +
                "kernels:\n  - name: k\n    block: [128, -1]\n",
            "field `kernels[0].block`"},
       }) {
    auto spec = load(c.yaml);
    ASSERT_FALSE(spec) << c.yaml;
    EXPECT_EQ(spec.error().component, "program");
    EXPECT_NE(spec.error().message.find("argus.yaml"), std::string::npos) << spec.error().message;
    EXPECT_NE(spec.error().message.find(c.expected), std::string::npos) << spec.error().message;
  }
}

}  // namespace
}  // namespace argus::program

namespace argus::program {
namespace {

TEST_F(SpecTest, TritonProgramsNameTheirScript) {
  ASSERT_TRUE(writeFile(dir_ / "run.py", "print('PASS')\n"));
  auto spec = load(
      "name: t\nlanguage: triton\nscript: run.py\nrun:\n  skip_exit_code: 77\n"
      "kernels:\n  - name: k\n");
  ASSERT_TRUE(spec) << spec.error().text();
  EXPECT_EQ(spec->language, "triton");
  EXPECT_EQ(spec->script.filename(), "run.py");
  EXPECT_EQ(spec->python, "python3");
  EXPECT_EQ(spec->run.command, std::vector<std::string>{"{exe}"});  // the variant's wrapper
  ASSERT_FALSE(spec->sources.empty());
  EXPECT_EQ(spec->sources.front().filename(), "run.py");  // the program's content
  EXPECT_EQ(spec->run.skipExitCode, 77);

  auto noScript = load("name: t\nlanguage: triton\n");
  ASSERT_FALSE(noScript);
  EXPECT_NE(noScript.error().message.find("field `script`"), std::string::npos);
  auto cudaOnly = load("name: t\nlanguage: triton\nscript: run.py\nnvcc_flags: [-O3]\n");
  ASSERT_FALSE(cudaOnly);
  EXPECT_NE(cudaOnly.error().message.find("do not apply to a Triton program"), std::string::npos);
  auto scriptInCuda = load("name: t\nsources: [kernel.cu]\nscript: run.py\nrun: {command: [x]}\n");
  ASSERT_FALSE(scriptInCuda);
  EXPECT_NE(scriptInCuda.error().message.find("language: triton"), std::string::npos);
  auto other = load("name: t\nlanguage: julia\n");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("use `cuda` or `triton`"), std::string::npos);
  // Its PTX only exists after a GPU run; the front-end verbs say so.
  auto ptx = frontEndPtx(*spec);
  ASSERT_FALSE(ptx);
  EXPECT_NE(ptx.error().message.find("on a GPU"), std::string::npos);
}

TEST_F(SpecTest, TritonPlanningRegionsComeFromTheSpecOrItsTtgir) {
  ASSERT_TRUE(writeFile(dir_ / "run.py", "print('PASS')\n"));
  auto spec = load(
      "name: t\nlanguage: triton\nscript: run.py\n"
      "kernels:\n  - name: k\n    regions:\n      - path: a/b\n      - path: c\n");
  ASSERT_TRUE(spec) << spec.error().text();
  auto regions = tritonPlanningRegions(*spec);
  ASSERT_TRUE(regions) << regions.error().text();
  ASSERT_EQ(regions->size(), 1u);
  const auto& k = regions->front();
  EXPECT_EQ(k.function, "k");
  EXPECT_TRUE(k.isEntry);
  ASSERT_EQ(k.regions.size(), 3u);  // the parent `a` is added before `a/b`
  EXPECT_EQ(k.regions[0].path, "a");
  EXPECT_EQ(k.regions[1].path, "a/b");
  EXPECT_EQ(k.regions[1].name, "b");
  EXPECT_EQ(k.regions[1].parent, std::optional<uint32_t>(0));
  EXPECT_EQ(k.regions[0].children, std::vector<uint32_t>{1});
  EXPECT_EQ(k.regions[2].path, "c");
  EXPECT_EQ(k.regions[1].id, ptx::regionId("k", "a/b"));

  // The version covers every source: editing the script makes a new one.
  auto before = tritonProgramVersion(*spec);
  ASSERT_TRUE(before) << before.error().text();
  ASSERT_TRUE(writeFile(dir_ / "run.py", "print('PASS') # edited\n"));
  auto after = tritonProgramVersion(*spec);
  ASSERT_TRUE(after) << after.error().text();
  EXPECT_NE(*before, *after);

  // And the Triton its Python imports: the spec's `python` asked through importlib.metadata (a
  // stand-in interpreter here, printing a version whatever it is asked).
  for (const char* version : {"3.6.0", "3.7.0"}) {
    const fs::path python = dir_ / (std::string("python-") + version);
    ASSERT_TRUE(writeFile(python, fmt::format("#!/bin/sh\necho {}\n", version)));
    fs::permissions(python, fs::perms::owner_all);
    spec->python = python.string();
    EXPECT_EQ(tritonPackageVersion(*spec), version);
  }
  const auto with370 = tritonProgramVersion(*spec);
  spec->python = (dir_ / "python-3.6.0").string();
  EXPECT_NE(*tritonProgramVersion(*spec), *with370) << "another Triton, another program version";
  spec->python = (dir_ / "no-such-python").string();
  EXPECT_EQ(tritonPackageVersion(*spec), "unknown");

  // A dumped PTX must have the declared regions.
  const std::string ptx =
      ".version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry k()\n{\n"
      "\t.reg .b32 %r<2>;\n\t// @argus begin a\n\tmov.b32 %r1, 0;\n\t// @argus end a\n"
      "\tret;\n}\n";
  auto mismatch = checkDumpedRegions(*spec, "k", ptx);
  ASSERT_FALSE(mismatch);
  EXPECT_NE(mismatch.error().message.find("`a/b`"), std::string::npos) << mismatch.error().text();
  auto onlyA = load(
      "name: t\nlanguage: triton\nscript: run.py\n"
      "kernels:\n  - name: k\n    regions:\n      - path: a\n");
  ASSERT_TRUE(onlyA) << onlyA.error().text();
  auto ok = checkDumpedRegions(*onlyA, "k", ptx);
  EXPECT_TRUE(ok) << ok.error().text();

  // Without regions in the spec Argus says what to add.
  auto none = load("name: t\nlanguage: triton\nscript: run.py\nkernels:\n  - name: k\n");
  ASSERT_TRUE(none) << none.error().text();
  auto missing = tritonPlanningRegions(*none);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("kernels"), std::string::npos);
  EXPECT_NE(missing.error().message.find(".ttgir"), std::string::npos);

  // A TTGIR listed in `sources` is read instead (Triton 3.6 fixture with Argus markers).
  auto ttgir = readFile(fs::path(ARGUS_EXAMPLES_DIR) / ".." / "tests" / "data" / "triton" /
                        "matmul_tma_argus.ttgir");
  ASSERT_TRUE(ttgir) << ttgir.error().text();
  ASSERT_TRUE(writeFile(dir_ / "kernel.ttgir", *ttgir));
  auto withTtgir = load("name: t\nlanguage: triton\nscript: run.py\nsources: [kernel.ttgir]\n");
  ASSERT_TRUE(withTtgir) << withTtgir.error().text();
  auto fromTtgir = tritonPlanningRegions(*withTtgir);
  ASSERT_TRUE(fromTtgir) << fromTtgir.error().text();
  bool found = false;
  for (const auto& f : *fromTtgir)
    for (const auto& r : f.regions)
      found = found || (f.function == "matmul_tma_argus" && r.path == "mainloop/iteration");
  EXPECT_TRUE(found);
  // It is also the IR the kernel is compiled from.
  ASSERT_TRUE(tritonKernelIr(*withTtgir));
  EXPECT_EQ(tritonKernelIr(*withTtgir)->filename(), "kernel.ttgir");
  EXPECT_FALSE(tritonKernelIr(*none));

  // Two IR files: which one the kernel is compiled from would be a guess.
  ASSERT_TRUE(writeFile(dir_ / "other.ttgir", *ttgir));
  auto two =
      load("name: t\nlanguage: triton\nscript: run.py\nsources: [kernel.ttgir, other.ttgir]\n");
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message.find("lists 2 Triton IR files"), std::string::npos)
      << two.error().text();
}

TEST_F(SpecTest, TritonVariantWrapperOverridesTheEditedIrToo) {
  ASSERT_TRUE(writeFile(dir_ / "run.py", "print('PASS')\n"));
  auto spec = load("name: t\nlanguage: triton\nscript: run.py\n");
  ASSERT_TRUE(spec) << spec.error().text();
  TritonKernelDump dump;
  dump.kernel = "k";
  dump.sourceHash = "HASH";
  auto plain = writeTritonVariant(*spec, dump, "// ptx\n", dir_ / "plain");
  ASSERT_TRUE(plain) << plain.error().text();
  auto plainText = readFile(*plain);
  ASSERT_TRUE(plainText);
  EXPECT_NE(plainText->find("$dir/HASH/k.ptx"), std::string::npos);
  EXPECT_EQ(plainText->find("k.ttgir"), std::string::npos);
  EXPECT_NE(plainText->find(std::string("PYTHONPATH='") + ARGUS_PYTHON_DIR), std::string::npos)
      << *plainText;

  dump.irStage = "ttgir";
  dump.ir = "module { // edited\n}";
  auto edited = writeTritonVariant(*spec, dump, "// ptx\n", dir_ / "edited");
  ASSERT_TRUE(edited) << edited.error().text();
  auto text = readFile(*edited);
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("cat > \"$dir/HASH/k.ttgir\" <<'ARGUS_IR_END'\nmodule { // edited\n}\n"
                       "ARGUS_IR_END\n"),
            std::string::npos)
      << *text;
  // The wrapper is a shell script that writes both files: run it with a stand-in interpreter
  // that lists the override folder instead of running Python.
  spec->python = "sh";
  ASSERT_TRUE(
      writeFile(dir_ / "run.py",
                "find \"$TRITON_OVERRIDE_DIR\" -type f | sort\n"
                "echo; echo \"Overriding kernel with file $TRITON_OVERRIDE_DIR/HASH/k.ptx\"\n"
                "echo; echo kept; echo; echo\n"
                "exit 3\n"));
  auto listing = writeTritonVariant(*spec, dump, "// ptx\n", dir_ / "listing");
  ASSERT_TRUE(listing);
  auto ran = runProcess(
      {listing->string()},
      {.workingDirectory = std::nullopt, .timeout = std::chrono::seconds(20), .environment = {}});
  ASSERT_TRUE(ran) << ran.error().text();
  EXPECT_EQ(ran->exitCode, 3) << ran->err;  // the script's own exit status
  // Triton's notice (an empty line, then the line naming a temporary folder) is dropped, so equal
  // runs print equal output; the program's own empty lines stay.
  EXPECT_EQ(ran->out.find("Overriding kernel"), std::string::npos) << ran->out;
  EXPECT_TRUE(ran->out.ends_with("k.ttgir\n\nkept\n\n\n")) << ran->out;
  EXPECT_NE(ran->out.find("/HASH/k.ptx"), std::string::npos) << ran->out;
  EXPECT_NE(ran->out.find("/HASH/k.ttgir"), std::string::npos) << ran->out;
}

// Issue 30: a spec's own derived regions, `regions: FILE` beside it and `derive:`.
TEST_F(SpecTest, DerivedRegionsFieldsAreCheckedAndKept) {
  ASSERT_TRUE(writeFile(dir_ / "regions.yaml", "derive: [loops]\n"));
  auto spec = load(
      "name: k\nsources: [kernel.cu]\nrun: {command: [\"{exe}\"]}\n"
      "regions: regions.yaml\nderive: [ops, \"loop:kernel.cu:3\"]\n");
  ASSERT_TRUE(spec) << spec.error().text();
  EXPECT_EQ(spec->derive.file, fs::weakly_canonical(dir_ / "regions.yaml"));
  EXPECT_EQ(spec->derive.list, "ops,loop:kernel.cu:3");

  auto missing = load(
      "name: k\nsources: [kernel.cu]\nrun: {command: [\"{exe}\"]}\n"
      "regions: nowhere.yaml\n");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("field `regions`"), std::string::npos)
      << missing.error().message;
  auto badSelector = load(
      "name: k\nsources: [kernel.cu]\nrun: {command: [\"{exe}\"]}\n"
      "derive: \"loop:x\"\n");
  ASSERT_FALSE(badSelector);
  EXPECT_NE(badSelector.error().message.find("field `derive`"), std::string::npos);
  EXPECT_NE(badSelector.error().message.find("selector `loop:x`"), std::string::npos);
}

TEST_F(SpecTest, RegionFileErrorsNameTheirPlace) {
  auto check = [&](const std::string& yaml, const std::string& expected) {
    ASSERT_TRUE(writeFile(dir_ / "r.yaml", yaml));
    auto defs = loadRegionFile(dir_ / "r.yaml");
    ASSERT_FALSE(defs) << yaml;
    EXPECT_NE(defs.error().message.find(expected), std::string::npos) << defs.error().message;
  };
  check("regions:\n  - name: a\n", "needs `select: SELECTOR`");
  check("regions:\n  - {name: a, select: loops, refine: main}\n", "not both");
  check("regions:\n  - {refine: main}\n", "`refine` without `regions`");
  check("regions:\n  - {name: 9x, select: loops}\n", "must match");
  check("regions:\n  - {name: a, select: \"op:tensor\"}\n", "unknown op kind `tensor`");
  check("kernel: [a]\nregions: []\n", "field `kernel` must be a string");
  check("regions: [\n", "r.yaml:");
  check("{}\n", "defines no region");
  // The material a program version takes from a request changes with the file's bytes.
  ASSERT_TRUE(writeFile(dir_ / "ok.yaml", "derive: loops\n"));
  auto a = deriveMaterial({"", dir_ / "ok.yaml"});
  ASSERT_TRUE(writeFile(dir_ / "ok.yaml", "derive: ops\n"));
  auto b = deriveMaterial({"", dir_ / "ok.yaml"});
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(*deriveMaterial({}), "");
}

}  // namespace
}  // namespace argus::program
