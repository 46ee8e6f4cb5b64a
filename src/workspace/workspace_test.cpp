#include "argus/workspace/workspace.h"

#include <sqlite3.h>

#include <chrono>
#include <fstream>

#include <gtest/gtest.h>

#include "workspace_test_util.h"

namespace fs = std::filesystem;

namespace argus::workspace {
namespace {

using testing::must;
using testing::randomBytes;
using testing::rawSql;
using testing::repetitiveText;
using testing::WorkspaceTest;

VersionId addProgram(Workspace& ws, std::string label = "baseline") {
  NewVersion v;
  v.label = std::move(label);
  v.files = {{"kernel.cu", "cuda_source", repetitiveText(4000, "__global__ void k() {}\n")},
             {"kernel.ptx", "ptx", repetitiveText(8000)}};
  return must(ws.addVersion(v));
}

TEST_F(WorkspaceTest, CreatesLayout) {
  auto ws = openWorkspace();
  EXPECT_TRUE(fs::exists(dir_ / "argus.db"));
  EXPECT_TRUE(fs::is_directory(dir_ / "blobs"));
  EXPECT_TRUE(fs::is_directory(dir_ / "tmp"));
  EXPECT_EQ(ws.directory(), dir_);
  EXPECT_EQ(Workspace::defaultDirectory("/x/prog/kernel.cu"), fs::path("/x/prog/.argus"));
}

TEST_F(WorkspaceTest, ANewWorkspaceIgnoresItselfInGit) {
  // The default workspace sits beside a spec, often inside a repository (examples/x/.argus).
  fs::path nested = root_ / "examples" / "tma_gemm" / ".argus";
  ASSERT_TRUE(Workspace::open(nested));
  auto ignore = readFile(nested / ".gitignore");
  ASSERT_TRUE(ignore) << ignore.error().text();
  EXPECT_NE(ignore->find("\n*\n"), std::string::npos) << *ignore;
  EXPECT_FALSE(fs::exists(root_ / "examples" / ".gitignore"));  // only the workspace itself
  // Opening it again (or an older workspace without one) leaves the directory as it is, and
  // verify and gc see nothing amiss.
  fs::remove(nested / ".gitignore");
  {
    auto again = Workspace::open(nested);
    ASSERT_TRUE(again);
    EXPECT_FALSE(fs::exists(nested / ".gitignore"));
    auto report = again->verify();
    ASSERT_TRUE(report);
    EXPECT_TRUE(report->ok());
  }
  // A directory that already exists may hold the user's files: nothing is written into it.
  fs::create_directories(dir_);
  { std::ofstream(dir_ / ".gitignore") << "mine\n"; }
  ASSERT_TRUE(Workspace::open(dir_));
  EXPECT_EQ(*readFile(dir_ / ".gitignore"), "mine\n");

  // What git makes of it, where git is installed.
  if (auto git = runProcess({"git", "--version"}); !git || git->exitCode != 0)
    GTEST_SKIP() << "git is not installed";
  fs::path repo = root_ / "repo";
  fs::create_directories(repo / "spec");
  { std::ofstream(repo / "spec" / "argus.yaml") << "kernel: k\n"; }
  ASSERT_TRUE(Workspace::open(Workspace::defaultDirectory(repo / "spec" / "argus.yaml")));
  ProcessOptions in{.workingDirectory = repo};
  ASSERT_EQ(runProcess({"git", "init", "-q"}, in)->exitCode, 0);
  auto status = runProcess({"git", "status", "--porcelain", "--untracked-files=all"}, in);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->out, "?? spec/argus.yaml\n");
}

TEST_F(WorkspaceTest, MissingWorkspaceIsAClearError) {
  auto ws = Workspace::open(dir_, OpenOptions{.create = false});
  ASSERT_FALSE(ws);
  EXPECT_EQ(ws.error().component, "workspace");
  EXPECT_NE(ws.error().message.find(dir_.string()), std::string::npos) << ws.error().message;
  EXPECT_NE(ws.error().message.find("does not exist"), std::string::npos);
  fs::create_directories(dir_);
  auto empty = Workspace::open(dir_, OpenOptions{.create = false});
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("not an Argus workspace"), std::string::npos);
}

TEST_F(WorkspaceTest, BlobRoundTripCompressed) {
  auto ws = openWorkspace();
  std::string text = repetitiveText(100'000);
  auto a = must(ws.publishArtifact({"ptx", "kernel.ptx", "", std::nullopt, text}));
  EXPECT_EQ(a.compression, Compression::zstd);
  EXPECT_EQ(a.size, text.size());
  EXPECT_LT(a.storedSize, text.size() / 10);
  EXPECT_EQ(a.hash, hashBytes(text));
  EXPECT_TRUE(fs::exists(dir_ / "blobs" / a.hash.hex().substr(0, 2) / (a.hash.hex() + ".zst")));
  EXPECT_EQ(must(ws.readArtifact(a.id)), text);
}

TEST_F(WorkspaceTest, BlobRoundTripUncompressed) {
  auto ws = openWorkspace();
  for (std::string bytes : {randomBytes(50'000, 1), std::string(), std::string("tiny")}) {
    auto a = must(ws.publishArtifact({"cubin", "k.cubin", "", std::nullopt, bytes}));
    EXPECT_EQ(a.compression, Compression::none);
    EXPECT_EQ(a.storedSize, bytes.size());
    EXPECT_EQ(a.storedInline, bytes.size() <= kInlineBlobLimit);
    EXPECT_EQ(fs::exists(dir_ / "blobs" / a.hash.hex().substr(0, 2) / a.hash.hex()),
              !a.storedInline);
    EXPECT_EQ(must(ws.readArtifact(a.id)), bytes);
  }
}

TEST_F(WorkspaceTest, SameContentIsStoredOnce) {
  auto ws = openWorkspace();
  std::string bytes = randomBytes(10'000, 7);
  auto a = must(ws.publishArtifact({"cubin", "a.cubin", "", std::nullopt, bytes}));
  auto b = must(ws.publishArtifact({"cubin", "b.cubin", "", std::nullopt, bytes}));
  EXPECT_NE(a.id, b.id);
  EXPECT_EQ(a.hash, b.hash);
  auto stats = must(ws.stats());
  EXPECT_EQ(stats.artifacts, 2u);
  EXPECT_EQ(stats.blobs, 1u);
  EXPECT_EQ(stats.blobBytes, bytes.size());
  EXPECT_EQ(stats.artifactBytes, 2 * bytes.size());
}

TEST_F(WorkspaceTest, VersionsLineageAndFork) {
  auto ws = openWorkspace();
  VersionId root = addProgram(ws);
  NewVersion painted;
  painted.kind = VersionKind::variant;
  painted.base = root;
  painted.transform = "paint";
  painted.optionsJson = R"({"regions": ["mainloop"], "arch": "sm_90a"})";
  painted.files = {{"kernel.ptx", "ptx", repetitiveText(9000, "// painted\n")}};
  VersionId variant = must(ws.addVersion(painted));
  VersionId forked = must(ws.fork(root, "try unroll"));

  auto v = must(ws.version(variant));
  EXPECT_EQ(v.kind, VersionKind::variant);
  EXPECT_EQ(v.base, root);
  EXPECT_EQ(v.optionsJson, R"({"arch":"sm_90a","regions":["mainloop"]})");

  auto chain = must(ws.lineage(variant));
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].id, variant);
  EXPECT_EQ(chain[1].id, root);

  // A fork has the same files (the same artifacts) and records where it came from.
  auto f = must(ws.version(forked));
  EXPECT_EQ(f.transform, "fork");
  EXPECT_EQ(f.label, "try unroll");
  EXPECT_EQ(f.kind, VersionKind::program);
  auto rootFiles = must(ws.versionFiles(root));
  auto forkFiles = must(ws.versionFiles(forked));
  ASSERT_EQ(forkFiles.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(forkFiles[i].name, rootFiles[i].name);
    EXPECT_EQ(forkFiles[i].artifact.id, rootFiles[i].artifact.id);
  }

  // The optimizer edits kernel.cu on top of the fork; kernel.ptx is dropped (to be rebuilt).
  NewVersion edit;
  edit.base = forked;
  edit.transform = "edit";
  edit.label = "unrolled x4";
  edit.files = {{"kernel.cu", "cuda_source", "__global__ void k() { /* unrolled */ }\n"}};
  edit.removedFiles = {"kernel.ptx"};
  VersionId edited = must(ws.addVersion(edit));
  auto editedFiles = must(ws.versionFiles(edited));
  ASSERT_EQ(editedFiles.size(), 1u);
  EXPECT_EQ(editedFiles[0].name, "kernel.cu");
  EXPECT_EQ(editedFiles[0].artifact.version, edited);
  EXPECT_EQ(must(ws.readArtifact(editedFiles[0].artifact.id)),
            "__global__ void k() { /* unrolled */ }\n");
  // The root is untouched.
  EXPECT_EQ(must(ws.versionFiles(root)).size(), 2u);

  auto editedChain = must(ws.lineage(edited));
  ASSERT_EQ(editedChain.size(), 3u);
  EXPECT_EQ(editedChain[1].id, forked);
  EXPECT_EQ(editedChain[2].id, root);
  EXPECT_EQ(must(ws.versions()).size(), 4u);

  auto missing = ws.fork(VersionId(99), "x");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no version v99"), std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().message.find("argus ws list"), std::string::npos);
  NewVersion badRemove;
  badRemove.base = root;
  badRemove.removedFiles = {"nope.cu"};
  EXPECT_FALSE(ws.addVersion(badRemove));
  NewVersion badOptions;
  badOptions.optionsJson = "{not json";
  EXPECT_FALSE(ws.addVersion(badOptions));
  // Issue 29, defect 1: a file name that is a path would make a checkout write outside its
  // directory (`ws fork --file ../../../x.cu=PATH`); only plain names are kept.
  for (const char* name : {"../../../x.cu", "/tmp/x.cu", "a/b.cu", "..", ".", "a\\b.cu"}) {
    NewVersion escape;
    escape.base = root;
    escape.files = {{name, "cuda_source", "//"}};
    auto refused = ws.addVersion(escape);
    ASSERT_FALSE(refused) << name;
    EXPECT_NE(refused.error().message.find("is not a plain file name"), std::string::npos)
        << refused.error().text();
  }
  EXPECT_EQ(must(ws.versions()).size(), 4u);  // failed adds left nothing behind
}

TEST_F(WorkspaceTest, EvidenceIsBoundToExactlyOneVersionAndScope) {
  auto ws = openWorkspace();
  VersionId v1 = addProgram(ws, "one");
  VersionId v2 = must(ws.fork(v1, "two"));
  auto publish = [&](VersionId v, std::string scope, std::string bytes) {
    TaskId t = must(ws.createTask(
        {TaskType::collect, hashBytes(v.text() + scope + bytes), R"({"recipe":"trace"})", {}, v}));
    TaskResult r{.task = t, .outputs = {{"region_trace", "trace.bin", scope, {}, bytes}}};
    must(ws.finishTask(r));
    return must(ws.task(t)).outputs.at(0).id;
  };
  ArtifactId a1 = publish(v1, "iter=3", "v1 iter3");
  ArtifactId a2 = publish(v2, "iter=3", "v2 iter3");
  ArtifactId a3 = publish(v1, "iter=4", "v1 iter4");
  // Same bytes in another version: deduplicated blob, but still separate evidence.
  ArtifactId a4 = publish(v2, "iter=4", "v1 iter4");

  auto e = must(ws.evidence(v1, "region_trace", "iter=3"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].id, a1);
  e = must(ws.evidence(v2, "region_trace", "iter=3"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].id, a2);
  e = must(ws.evidence(v2, "region_trace", "iter=4"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].id, a4);
  EXPECT_EQ(e[0].hash, must(ws.artifact(a3)).hash);
  EXPECT_TRUE(must(ws.evidence(v1, "region_trace", "")).empty());
  EXPECT_TRUE(must(ws.evidence(v1, "ptx", "iter=3")).empty());
  for (VersionId v : {v1, v2})
    for (const auto& a : must(ws.artifactsOf(v))) EXPECT_EQ(a.version, v);

  // A failed task's log is not evidence.
  TaskId failed = must(ws.createTask({TaskType::collect, hashBytes("f"), "{}", {}, v1}));
  must(ws.finishTask({.task = failed,
                      .status = TaskStatus::failed,
                      .error = "ncu crashed",
                      .log = "stderr of ncu"}));
  EXPECT_TRUE(must(ws.evidence(v1, "log", "")).empty());
  auto t = must(ws.task(failed));
  ASSERT_TRUE(t.log);
  EXPECT_EQ(must(ws.readArtifact(*t.log)), "stderr of ncu");
  EXPECT_TRUE(t.outputs.empty());
}

TEST_F(WorkspaceTest, MemoLookupFindsOnlySucceededTasks) {
  auto ws = openWorkspace();
  VersionId v = addProgram(ws);
  auto ptx = must(ws.versionFiles(v)).at(1).artifact;
  nlohmann::json descriptor = {{"arch", "sm_90a"}, {"flags", {"-lineinfo"}}};
  ContentHash key = memoKey(TaskType::transform, descriptor, std::vector{ptx.hash});
  EXPECT_FALSE(must(ws.findSucceededTask(key)));

  // First attempt fails; it is not a memo hit and can be retried.
  TaskId first = must(ws.createTask({TaskType::transform, key, descriptor.dump(), {ptx.id}, v}));
  must(ws.startTask(first));
  must(ws.finishTask(
      {.task = first, .status = TaskStatus::timed_out, .error = "ptxas ran over 60 s"}));
  EXPECT_FALSE(must(ws.findSucceededTask(key)));

  TaskId second = must(ws.createTask({TaskType::transform, key, descriptor.dump(), {ptx.id}, v}));
  EXPECT_EQ(must(ws.task(second)).attempt, 2);
  must(ws.startTask(second));
  TaskResult result{second,
                    TaskStatus::succeeded,
                    {{"cubin", "kernel.cubin", "", {}, randomBytes(3000, 3)},
                     {"sass", "kernel.sass", "", {}, repetitiveText(5000, "IMAD R1, R2;\n")}},
                    "",
                    "ptxas info: 32 registers",
                    NewRun{"H200", R"({"ptxas":"12.4"})", "{}"}};
  must(ws.finishTask(result));

  auto hit = must(ws.findSucceededTask(key));
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->id, second);
  EXPECT_EQ(hit->status, TaskStatus::succeeded);
  EXPECT_EQ(hit->memoKey, key);
  EXPECT_EQ(hit->attempt, 2);
  ASSERT_EQ(hit->inputs.size(), 1u);
  EXPECT_EQ(hit->inputs[0], ptx.id);
  ASSERT_EQ(hit->outputs.size(), 2u);  // the log is not an output
  EXPECT_EQ(hit->outputs[0].name, "kernel.cubin");
  EXPECT_EQ(hit->outputs[0].version, v);  // defaults to the task's version
  EXPECT_EQ(hit->outputs[0].task, second);
  EXPECT_EQ(must(ws.readArtifact(hit->outputs[0].id)), randomBytes(3000, 3));
  EXPECT_TRUE(hit->log);
  EXPECT_TRUE(hit->startedAt && hit->endedAt);
  auto runs = must(ws.runsOf(second));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].device, "H200");
  EXPECT_EQ(must(ws.run(runs[0].id)).task, second);

  // Finished tasks are immutable.
  auto again = ws.finishTask(result);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("already finished"), std::string::npos);
  EXPECT_FALSE(ws.startTask(second));
  EXPECT_FALSE(ws.finishTask({.task = first}));
  EXPECT_FALSE(ws.finishTask({.task = second, .status = TaskStatus::running}));
  EXPECT_FALSE(ws.finishTask(
      {.task = first, .status = TaskStatus::failed, .outputs = {{"x", "", "", {}, "y"}}}));
  EXPECT_EQ(must(ws.task(first)).status, TaskStatus::timed_out);

  // Another key misses.
  EXPECT_FALSE(must(ws.findSucceededTask(
      memoKey(TaskType::transform, {{"arch", "sm_80"}}, std::vector{ptx.hash}))));
  auto unknownInput = ws.createTask({TaskType::collect, key, "{}", {ArtifactId(999)}, v});
  ASSERT_FALSE(unknownInput);
  EXPECT_NE(unknownInput.error().message.find("a999"), std::string::npos);
}

TEST_F(WorkspaceTest, BatchPublishIsAllOrNothing) {
  auto ws = openWorkspace();
  TaskId a = must(ws.createTask({TaskType::control, hashBytes("a"), "{}", {}, {}}));
  TaskId b = must(ws.createTask({TaskType::control, hashBytes("b"), "{}", {}, {}}));
  must(ws.finishTask({.task = b, .status = TaskStatus::cancelled, .error = "user interrupt"}));
  std::vector<TaskResult> batch{{.task = a, .outputs = {{"json", "", "", {}, "{}"}}}, {.task = b}};
  EXPECT_FALSE(ws.finishTasks(batch));  // b is already finished: nothing of the batch commits
  EXPECT_EQ(must(ws.task(a)).status, TaskStatus::queued);
  EXPECT_EQ(must(ws.stats()).artifacts, 0u);
  batch.pop_back();
  must(ws.finishTasks(batch));
  EXPECT_EQ(must(ws.task(a)).status, TaskStatus::succeeded);
}

TEST_F(WorkspaceTest, RowsAreImmutableEvenBehindTheApisBack) {
  auto ws = openWorkspace();
  auto a = must(ws.publishArtifact({"ptx", "", "", std::nullopt, "x"}));
  TaskId t = must(ws.createTask({TaskType::control, hashBytes("t"), "{}", {a.id}, {}}));
  must(ws.finishTask({.task = t}));
  fs::path db = dir_ / "argus.db";
  EXPECT_NE(rawSql(db, "UPDATE artifacts SET hash = 'x'"), SQLITE_OK);
  EXPECT_NE(rawSql(db, "DELETE FROM artifacts"), SQLITE_OK);
  EXPECT_NE(rawSql(db, "UPDATE tasks SET status = 'failed'"), SQLITE_OK);
  EXPECT_NE(rawSql(db, "DELETE FROM task_inputs"), SQLITE_OK);
  EXPECT_EQ(must(ws.task(t)).status, TaskStatus::succeeded);
}

TEST_F(WorkspaceTest, ProvenanceFollowsTasksAndInputs) {
  auto ws = openWorkspace();
  VersionId v = addProgram(ws);
  auto source = must(ws.versionFiles(v)).at(0).artifact;  // kernel.cu
  TaskId compile = must(ws.createTask({TaskType::transform, hashBytes("c"), "{}", {source.id}, v}));
  must(ws.finishTask({.task = compile, .outputs = {{"cubin", "k.cubin", "", {}, "CUBIN"}}}));
  ArtifactId cubin = must(ws.task(compile)).outputs.at(0).id;
  TaskId collect = must(ws.createTask({TaskType::collect, hashBytes("m"), "{}", {cubin}, v}));
  must(ws.finishTask(
      {.task = collect, .outputs = {{"sass_metrics", "", "region=mainloop", {}, "M"}}}));
  ArtifactId metrics = must(ws.task(collect)).outputs.at(0).id;

  auto p = must(ws.provenance(metrics));
  EXPECT_EQ(p.artifact.id, metrics);
  ASSERT_TRUE(p.version && p.task);
  EXPECT_EQ(p.version->id, v);
  EXPECT_EQ(p.task->id, collect);
  ASSERT_EQ(p.inputs.size(), 1u);
  EXPECT_EQ(p.inputs[0].artifact.id, cubin);
  ASSERT_TRUE(p.inputs[0].task);
  EXPECT_EQ(p.inputs[0].task->id, compile);
  ASSERT_EQ(p.inputs[0].inputs.size(), 1u);
  EXPECT_EQ(p.inputs[0].inputs[0].artifact.id, source.id);
  EXPECT_FALSE(p.inputs[0].inputs[0].task);  // a user input
  EXPECT_FALSE(p.truncated);

  auto bounded = must(ws.provenance(metrics, 0));
  EXPECT_TRUE(bounded.inputs.empty());
  EXPECT_TRUE(bounded.truncated);

  auto missing = ws.provenance(ArtifactId(4242));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no artifact a4242 in " + dir_.string()),
            std::string::npos)
      << missing.error().message;
}

TEST_F(WorkspaceTest, NewerSchemaIsRefused) {
  { auto ws = openWorkspace(); }
  ASSERT_EQ(rawSql(dir_ / "argus.db", "UPDATE meta SET value = '99' WHERE key = 'schema_version'"),
            SQLITE_OK);
  auto ws = Workspace::open(dir_);
  ASSERT_FALSE(ws);
  EXPECT_NE(ws.error().message.find("newer Argus"), std::string::npos) << ws.error().message;
  EXPECT_NE(ws.error().message.find("schema 99"), std::string::npos);
  EXPECT_NE(ws.error().message.find((dir_ / "argus.db").string()), std::string::npos);
}

TEST_F(WorkspaceTest, GcFreesOnlyUnreferencedBlobs) {
  auto ws = openWorkspace();
  std::string kept = randomBytes(4096, 11);
  auto a = must(ws.publishArtifact({"cubin", "", "", std::nullopt, kept}));
  // A publish whose row is rejected (unknown version) leaves its blob file unreferenced.
  std::string orphan = randomBytes(5000, 12);
  EXPECT_FALSE(ws.publishArtifact({"cubin", "", "", VersionId(77), orphan}));
  EXPECT_EQ(must(ws.stats()).blobs, 2u);
  // Inline blobs are written in the row's transaction, so a rejected publish leaves none.
  EXPECT_FALSE(ws.publishArtifact({"json", "", "", VersionId(77), "{}"}));
  EXPECT_EQ(must(ws.stats()).blobs, 2u);
  // A killed writer's temp file.
  { std::ofstream(dir_ / "tmp" / "deadbeef.123.tmp") << "partial"; }
  auto verified = must(ws.verify());
  EXPECT_TRUE(verified.ok());
  EXPECT_EQ(verified.strayTempFiles, 1u);

  auto report = must(ws.gc());
  EXPECT_EQ(report.blobsRemoved, 1u);
  EXPECT_EQ(report.tempFilesRemoved, 1u);
  EXPECT_EQ(report.bytesFreed, orphan.size() + std::string("partial").size());
  EXPECT_EQ(report.blobsKept, 1u);
  EXPECT_EQ(must(ws.readArtifact(a.id)), kept);
  EXPECT_EQ(must(ws.stats()).blobs, 1u);
  auto second = must(ws.gc());
  EXPECT_EQ(second.bytesFreed, 0u);
  EXPECT_EQ(second.blobsRemoved, 0u);
  EXPECT_TRUE(must(ws.verify()).ok());
}

TEST_F(WorkspaceTest, CorruptedBlobIsDetected) {
  auto ws = openWorkspace();
  auto raw = must(ws.publishArtifact({"cubin", "", "", std::nullopt, randomBytes(10'000, 5)}));
  auto small = must(ws.publishArtifact({"json", "", "", std::nullopt, "{\"cycles\": 1234}"}));
  ASSERT_TRUE(small.storedInline);
  auto packed = must(ws.publishArtifact({"ptx", "", "", std::nullopt, repetitiveText(20'000)}));
  fs::path rawPath = dir_ / "blobs" / raw.hash.hex().substr(0, 2) / raw.hash.hex();
  fs::path packedPath =
      dir_ / "blobs" / packed.hash.hex().substr(0, 2) / (packed.hash.hex() + ".zst");
  {
    std::fstream f(rawPath, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(500);
    f.put('\x42');
  }
  { std::ofstream(packedPath, std::ios::binary | std::ios::trunc) << "garbage"; }
  for (auto [id, path] : {std::pair{raw.id, rawPath}, std::pair{packed.id, packedPath}}) {
    auto read = ws.readArtifact(id);
    ASSERT_FALSE(read);
    EXPECT_EQ(read.error().component, "workspace");
    EXPECT_NE(read.error().message.find(path.string()), std::string::npos) << read.error().message;
    EXPECT_NE(read.error().message.find("corrupt"), std::string::npos) << read.error().message;
  }
  ASSERT_EQ(rawSql(dir_ / "argus.db",
                   "UPDATE inline_blobs SET data = CAST('{\"cycles\": 4321}' AS BLOB)"),
            SQLITE_OK);
  auto inlineRead = ws.readArtifact(small.id);
  ASSERT_FALSE(inlineRead);
  EXPECT_NE(inlineRead.error().message.find("argus.db (inline blob " + small.hash.hex()),
            std::string::npos)
      << inlineRead.error().message;
  auto report = must(ws.verify());
  EXPECT_EQ(report.problems.size(), 3u);
  fs::remove(rawPath);
  auto missing = ws.readArtifact(raw.id);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("missing"), std::string::npos);
}

TEST_F(WorkspaceTest, TaskCanBeCreatedRunning) {
  auto ws = openWorkspace();
  VersionId v = addProgram(ws);
  nlohmann::json descriptor = {{"recipe", "time"}};
  NewTask nt{
      TaskType::collect, memoKey(TaskType::collect, descriptor, {}), descriptor.dump(), {}, v};
  nt.running = true;
  TaskId id = must(ws.createTask(nt));
  auto t = must(ws.task(id));
  EXPECT_EQ(t.status, TaskStatus::running);
  EXPECT_TRUE(t.startedAt.has_value());
  must(ws.startTask(id));  // starting a running task changes nothing
  EXPECT_EQ(must(ws.task(id)).startedAt, t.startedAt);
  must(ws.finishTask({.task = id, .status = TaskStatus::succeeded}));
  EXPECT_EQ(must(ws.task(id)).status, TaskStatus::succeeded);
}

// Correctness only: how fast memo lookups are is a benchmark's question, not a test's.
TEST_F(WorkspaceTest, TenThousandTasksPublishedAtOnceAreAllFoundByTheirMemoKeys) {
  auto ws = openWorkspace(OpenOptions{.syncBlobs = false});
  constexpr int kTasks = 10'000;
  std::vector<ContentHash> keys;
  std::vector<TaskResult> results;
  for (int i = 0; i < kTasks; ++i) {
    nlohmann::json d = {{"task", i}};
    keys.push_back(memoKey(TaskType::collect, d, {}));
    TaskId t = must(ws.createTask({TaskType::collect, keys.back(), d.dump(), {}, {}}));
    results.push_back({.task = t, .outputs = {{"json", "", "", {}, d.dump()}}});
  }
  must(ws.finishTasks(results));
  int hits = 0;
  for (int i = 0; i < kTasks; ++i) {
    auto found = must(ws.findSucceededTask(keys[i]));
    if (found && found->descriptorJson == nlohmann::json({{"task", i}}).dump()) ++hits;
  }
  EXPECT_EQ(hits, kTasks);
}

}  // namespace
}  // namespace argus::workspace
