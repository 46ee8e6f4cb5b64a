#include "argus/program/checkout.h"

#include <sqlite3.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "argus/program/program.h"
#include "argus/program/triton.h"
#include "argus/support/process.h"

namespace argus::program {
namespace {

namespace fs = std::filesystem;

class Checkout : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = makeTempDir("argus-checkout-test");
    ASSERT_TRUE(dir);
    dir_ = *dir;
    auto ws = workspace::Workspace::open(dir_ / ".argus", {.syncBlobs = false});
    ASSERT_TRUE(ws) << ws.error().text();
    ws_.emplace(std::move(*ws));
    // The TTGIR Triton 3.6 made for examples/triton_matmul (tests/data/triton/
    // make_argus_marker_fixture.py).
    auto ttgir = readFile(fs::path(ARGUS_EXAMPLES_DIR) / ".." / "tests" / "data" / "triton" /
                          "matmul_tma_argus.ttgir");
    ASSERT_TRUE(ttgir) << ttgir.error().text();
    ttgir_ = *ttgir;
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// A root version like `argus query --program` makes for a Triton spec.
  workspace::VersionId tritonRoot() {
    auto id = ws_->addVersion(
        {.kind = workspace::VersionKind::program,
         .label = "t",
         .files = {{"argus.yaml", "program_spec",
                    "name: t\nlanguage: triton\nscript: launch/run.py\nsources: [src/kernel.py]\n"
                    "kernels:\n  - name: matmul_tma_argus\n    regions:\n      - path: mainloop\n"},
                   {"run.py", "python_source", "print('PASS')\n"},
                   {"kernel.py", "python_source", "# kernel\n"}}});
    EXPECT_TRUE(id) << id.error().text();
    return *id;
  }

  fs::path dir_;
  std::optional<workspace::Workspace> ws_;
  std::string ttgir_;
};

/// Renames a version's file to `name` in the database behind the API's back, as someone who
/// hands over a workspace could; with `reseal`, also with the row checksum recomputed (the
/// checksum catches damage and careless edits, not a forger who knows the format).
void tamperFileName(const fs::path& db, std::string_view from, const std::string& name,
                    bool reseal) {
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
  std::string sql = fmt::format(
      "DROP TRIGGER IF EXISTS version_files_immutable; DROP TRIGGER IF EXISTS "
      "version_files_sealed; UPDATE "
      "version_files SET name = '{}' WHERE name = '{}';",
      name, from);
  if (reseal) {
    sqlite3_stmt* q = nullptr;
    ASSERT_EQ(sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sql.clear();
    ASSERT_EQ(sqlite3_prepare_v2(handle,
                                 "SELECT version_id, artifact_id FROM version_files WHERE name = ?",
                                 -1, &q, nullptr),
              SQLITE_OK);
    sqlite3_bind_text(q, 1, name.c_str(), -1, SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    const std::string canonical =
        fmt::format("version_files\ni{};t{}:{}i{};", sqlite3_column_int64(q, 0), name.size(), name,
                    sqlite3_column_int64(q, 1));
    sqlite3_finalize(q);
    sql = fmt::format("UPDATE version_files SET checksum = '{}' WHERE name = '{}';",
                      workspace::hashBytes(canonical).hex(), name);
  }
  EXPECT_EQ(sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(handle);
}

TEST_F(Checkout, ATamperedFileNameInTheDatabaseIsRefused) {
  // A fork with one more file, which nothing in the spec names (so only its name can stop it).
  workspace::NewVersion fork;
  fork.base = tritonRoot();
  fork.transform = "fork";
  fork.files = {{"notes.txt", "file", "remember\n"}};
  const auto root = ws_->addVersion(fork);
  ASSERT_TRUE(root) << root.error().text();
  const fs::path db = ws_->directory() / "argus.db";
  const fs::path escaped = dir_ / "escaped.py";  // where `../../../escaped.py` would land
  for (bool reseal : {false, true}) {
    SCOPED_TRACE(reseal ? "checksum recomputed" : "checksum left");
    ws_.reset();
    // The first pass renames notes.txt; the second reseals that renamed row.
    tamperFileName(db, reseal ? "../../../escaped.py" : "notes.txt", "../../../escaped.py", reseal);
    auto ws = workspace::Workspace::open(dir_ / ".argus", {.syncBlobs = false});
    ASSERT_TRUE(ws) << ws.error().text();
    ws_.emplace(std::move(*ws));
    const fs::path out = dir_ / ".argus" / "checkouts" / root->text();
    auto spec = checkoutVersion(*ws_, *root, out);
    ASSERT_FALSE(spec) << "a checkout wrote a file named ../../../escaped.py";
    const std::string& m = spec.error().message;
    if (reseal)  // the row is intact as far as its checksum tells: the name check refuses it
      EXPECT_NE(m.find("`../../../escaped.py` is not a plain file name"), std::string::npos) << m;
    else
      EXPECT_NE(m.find("fails its checksum"), std::string::npos) << m;
    EXPECT_FALSE(fs::exists(escaped));
    EXPECT_FALSE(fs::exists(out));
  }
}

TEST_F(Checkout, ForkWithEditedTtgirCompilesFromIt) {
  const auto root = tritonRoot();
  // The optimizer's edit: the epilogue region renamed `store`.
  std::string edited = ttgir_;
  for (const std::string what : {"begin", "end"}) {
    const std::string from = "@argus " + what + " epilogue";
    const size_t at = edited.find(from);
    ASSERT_NE(at, std::string::npos);
    edited.replace(at, from.size(), "@argus " + what + " store");
  }
  auto fork = ws_->addVersion({.kind = workspace::VersionKind::program,
                               .base = root,
                               .transform = "fork",
                               .files = {{"kernel.ttgir", "ttgir", edited}}});
  ASSERT_TRUE(fork) << fork.error().text();

  auto specPath = checkoutVersion(*ws_, *fork, dir_ / "co");
  ASSERT_TRUE(specPath) << specPath.error().text();
  EXPECT_EQ(*specPath, dir_ / "co" / "argus.yaml");
  auto spec = loadProgramSpec(*specPath);
  ASSERT_TRUE(spec) << spec.error().text();
  EXPECT_EQ(spec->script.filename(), "run.py");
  ASSERT_TRUE(tritonKernelIr(*spec));
  EXPECT_EQ(*tritonKernelIr(*spec), fs::weakly_canonical(dir_ / "co" / "kernel.ttgir"));
  auto regions = tritonPlanningRegions(*spec);
  ASSERT_TRUE(regions) << regions.error().text();
  std::vector<std::string> paths;
  for (const auto& f : *regions)
    for (const auto& r : f.regions) paths.push_back(r.path);
  EXPECT_NE(std::find(paths.begin(), paths.end(), "store"), paths.end());
  EXPECT_EQ(std::find(paths.begin(), paths.end(), "epilogue"), paths.end());
  // The checkout's content differs from the root's, so its measurements are its own.
  auto rootSpec = checkoutVersion(*ws_, root, dir_ / "root");
  ASSERT_TRUE(rootSpec) << rootSpec.error().text();
  auto rootLoaded = loadProgramSpec(*rootSpec);
  ASSERT_TRUE(rootLoaded) << rootLoaded.error().text();
  EXPECT_FALSE(tritonKernelIr(*rootLoaded));
  EXPECT_NE(*tritonProgramVersion(*rootLoaded), *tritonProgramVersion(*spec));

  // A spec that names its files by their own names needs no rewriting: the checkout's is the
  // version's, byte for byte (so a query of the checkout and of the original spec hash alike).
  const std::string plain =
      "name: t\nlanguage: triton\nscript: run.py\nsources: [kernel.py]\n# comment kept\n";
  auto plainRoot = ws_->addVersion({.kind = workspace::VersionKind::program,
                                    .files = {{"argus.yaml", "program_spec", plain},
                                              {"run.py", "python_source", "print('PASS')\n"},
                                              {"kernel.py", "python_source", "# kernel\n"}}});
  ASSERT_TRUE(plainRoot);
  auto plainSpec = checkoutVersion(*ws_, *plainRoot, dir_ / "plain");
  ASSERT_TRUE(plainSpec) << plainSpec.error().text();
  EXPECT_EQ(*readFile(*plainSpec), plain);

  // A complete checkout is reused as it is: a query may be running on its files.
  ASSERT_TRUE(writeFile(dir_ / "co" / "in-use.txt", "x"));
  auto again = checkoutVersion(*ws_, *fork, dir_ / "co");
  ASSERT_TRUE(again) << again.error().text();
  EXPECT_EQ(*again, *specPath);
  EXPECT_TRUE(fs::exists(dir_ / "co" / "in-use.txt"));
  // One left incomplete (no marker: an interrupted writer) is replaced.
  fs::remove(dir_ / "co" / ".argus-checkout");
  ASSERT_TRUE(checkoutVersion(*ws_, *fork, dir_ / "co"));
  EXPECT_FALSE(fs::exists(dir_ / "co" / "in-use.txt"));
  EXPECT_TRUE(fs::exists(dir_ / "co" / "kernel.ttgir"));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_FALSE(e.path().filename().string().starts_with(".co.tmp")) << e.path();
}

TEST_F(Checkout, SaysWhatIsWrong) {
  const auto root = tritonRoot();
  auto two =
      ws_->addVersion({.kind = workspace::VersionKind::program,
                       .base = root,
                       .transform = "fork",
                       .files = {{"a.ttgir", "ttgir", ttgir_}, {"b.ttgir", "ttgir", ttgir_}}});
  ASSERT_TRUE(two);
  auto twoIrs = checkoutVersion(*ws_, *two, dir_ / "two");
  ASSERT_FALSE(twoIrs);
  EXPECT_NE(twoIrs.error().message.find("holds 2 Triton IR files (a.ttgir, b.ttgir)"),
            std::string::npos)
      << twoIrs.error().text();

  auto noSpec = ws_->addVersion(
      {.kind = workspace::VersionKind::program, .files = {{"kernel.cu", "cuda_source", "//"}}});
  ASSERT_TRUE(noSpec);
  auto none = checkoutVersion(*ws_, *noSpec, dir_ / "none");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("holds no program spec"), std::string::npos);

  auto variant = ws_->addVersion(
      {.kind = workspace::VersionKind::variant, .base = root, .transform = "trace"});
  ASSERT_TRUE(variant);
  auto notProgram = checkoutVersion(*ws_, *variant, dir_ / "variant");
  ASSERT_FALSE(notProgram);
  EXPECT_NE(notProgram.error().message.find("not a program version"), std::string::npos);

  auto missing =
      ws_->addVersion({.kind = workspace::VersionKind::program,
                       .files = {{"argus.yaml", "program_spec",
                                  "name: c\nsources: [gone.cu]\nrun: {command: [x]}\n"}}});
  ASSERT_TRUE(missing);
  auto gone = checkoutVersion(*ws_, *missing, dir_ / "gone");
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().message.find("names gone.cu, which the version does not hold"),
            std::string::npos)
      << gone.error().text();
}

// A CUDA spec's include_dirs are not in the version: they resolve against the directory the
// root version's spec was in (its options record it).
TEST_F(Checkout, IncludeDirsResolveAgainstTheOriginalSpecsDirectory) {
  ASSERT_TRUE(fs::create_directories(dir_ / "project" / "inc"));
  const std::string spec =
      "name: c\nsources: [src/k.cu]\ninclude_dirs: [inc, /abs/elsewhere]\n"
      "run: {command: [\"{exe}\"]}\n";
  auto recorded = ws_->addVersion(
      {.kind = workspace::VersionKind::program,
       .optionsJson =
           nlohmann::json{{"content", "x"}, {"directory", (dir_ / "project").string()}}.dump(),
       .files = {{"argus.yaml", "program_spec", spec}, {"k.cu", "cuda_source", "// k\n"}}});
  ASSERT_TRUE(recorded) << recorded.error().text();
  auto fork = ws_->addVersion({.kind = workspace::VersionKind::program,
                               .base = *recorded,
                               .transform = "fork",
                               .files = {{"k.cu", "cuda_source", "// edited\n"}}});
  ASSERT_TRUE(fork);
  auto specPath = checkoutVersion(*ws_, *fork, dir_ / "co");
  ASSERT_TRUE(specPath) << specPath.error().text();
  auto loaded = readFile(*specPath);
  ASSERT_TRUE(loaded);
  EXPECT_NE(loaded->find((dir_ / "project" / "inc").string()), std::string::npos) << *loaded;
  EXPECT_NE(loaded->find("/abs/elsewhere"), std::string::npos) << *loaded;
  EXPECT_NE(loaded->find("- k.cu"), std::string::npos) << *loaded;
  auto edited = readFile(dir_ / "co" / "k.cu");
  ASSERT_TRUE(edited);
  EXPECT_EQ(*edited, "// edited\n");

  // Without the directory recorded, the checkout says why it cannot build.
  auto unrecorded = ws_->addVersion(
      {.kind = workspace::VersionKind::program,
       .files = {{"argus.yaml", "program_spec", spec}, {"k.cu", "cuda_source", "// k\n"}}});
  ASSERT_TRUE(unrecorded);
  auto refused = checkoutVersion(*ws_, *unrecorded, dir_ / "co2");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("does not record the spec's directory"), std::string::npos)
      << refused.error().text();
}

}  // namespace
}  // namespace argus::program
