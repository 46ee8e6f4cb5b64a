// Workspace metadata as read back from disk: the input is a reader byte, then a list of byte
// patches (u32 little-endian offset, then one byte) applied to a real workspace's argus.db, the
// bit flips and overwrites a damaged or tampered file holds. The patched database is opened and
// its rows are read the ways the verbs read them; the reader byte picks which (versions and
// their files and lineage; artifacts and their bytes; provenance; tasks and runs; stats and
// verify), so that each execution does a fifth of the reading and the campaign reaches its 10^7
// executions (docs/hardening.md), every reader still getting every kind of damage. Any answer is
// fine except a crash, a hang or a read of something the rows do not name; the seed workspace
// is ARGUS_FUZZ_WORKSPACE, else tests/data/workspace (its README says how it was made).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "argus/workspace/workspace.h"
#include "fuzz_util.h"

namespace {

namespace fs = std::filesystem;

struct Seed {
  std::string db;    // argus.db of the seed workspace
  fs::path blobs;    // its blobs/ directory
  fs::path scratch;  // the workspace each input is written to
};

const Seed& seed() {
  static const Seed s = [] {
    const char* env = std::getenv("ARGUS_FUZZ_WORKSPACE");
    fs::path dir = env != nullptr ? fs::path(env) : fs::path(ARGUS_FUZZ_WORKSPACE_SEED);
    std::ifstream in(dir / "argus.db", std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "fuzz_workspace: no seed workspace at %s (set ARGUS_FUZZ_WORKSPACE)\n",
                   dir.c_str());
      std::abort();
    }
    Seed out;
    out.db.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    out.blobs = fs::absolute(dir / "blobs");
    const fs::path tmp =
        fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    out.scratch = tmp / ("argus-fuzz-ws-" + std::to_string(getpid()));
    static const fs::path removeAtExit = out.scratch;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(removeAtExit, ec);
    });
    return out;
  }();
  return s;
}

/// The readers of one group (see the header comment).
void read(const argus::workspace::Workspace& ws, int group) {
  using namespace argus::workspace;
  if (group == 3) {
    if (auto tasks = ws.tasks())
      for (const TaskRecord& t : *tasks) (void)ws.runsOf(t.id);
    return;
  }
  if (group == 4) {
    (void)ws.stats();
    (void)ws.verify();
    return;
  }
  auto versions = ws.versions();
  if (!versions) return;
  for (const VersionRecord& v : *versions) {
    if (group == 0) {
      (void)ws.versionFiles(v.id);
      (void)ws.lineage(v.id);
      continue;
    }
    if (auto artifacts = ws.artifactsOf(v.id))
      for (const ArtifactRecord& a : *artifacts) {
        if (group == 1) (void)ws.readArtifact(a.id);
        if (group == 2) (void)ws.provenance(a.id);
      }
  }
}

constexpr int kReaderGroups = 5;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace argus;
  if (size < 1 || size > fuzz::kMaxInput) return -1;
  const int group = data[0] % kReaderGroups;
  ++data;
  --size;
  const Seed& s = seed();
  std::string db = s.db;
  for (size_t i = 0; i + 5 <= size; i += 5) {
    const uint32_t offset =
        static_cast<uint32_t>(data[i]) | static_cast<uint32_t>(data[i + 1]) << 8 |
        static_cast<uint32_t>(data[i + 2]) << 16 | static_cast<uint32_t>(data[i + 3]) << 24;
    if (!db.empty()) db[offset % db.size()] = static_cast<char>(data[i + 4]);
  }
  // The scratch workspace is made once; each input rewrites its argus.db and removes whatever
  // an open left beside it (SQLite's journal files, anything else), keeping the blobs link.
  std::error_code ec;
  if (!fs::is_directory(s.scratch)) {
    fs::create_directories(s.scratch);
    if (fs::is_directory(s.blobs)) fs::create_directory_symlink(s.blobs, s.scratch / "blobs", ec);
  }
  for (const auto& entry : fs::directory_iterator(s.scratch, ec))
    if (entry.path().filename() != "blobs") fs::remove_all(entry.path(), ec);
  {
    std::ofstream out(s.scratch / "argus.db", std::ios::binary);
    out.write(db.data(), static_cast<std::streamsize>(db.size()));
  }
  // Read-only, as the verbs that show a workspace (ws list, show, cat, check) open one.
  workspace::OpenOptions options;
  options.readOnly = true;
  options.create = false;
  options.syncBlobs = false;
  options.busyTimeout = std::chrono::milliseconds(0);
  if (auto ws = workspace::Workspace::open(s.scratch, options)) read(*ws, group);
  return 0;
}
