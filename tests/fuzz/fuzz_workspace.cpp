// Workspace metadata as read back from disk: the input is a reader byte, then a list of byte
// patches (u32 little-endian offset, then one byte) applied to a real workspace's argus.db, the
// bit flips and overwrites a damaged or tampered file holds. The patched database is opened and
// its rows are read the ways the verbs read them; the reader byte picks which (versions and
// their files and lineage; artifacts and their bytes; provenance; tasks and runs; stats and
// verify), so that each execution does a fifth of the reading and the campaign reaches its 10^7
// executions (docs/hardening.md), every reader still getting every kind of damage. Any answer is
// fine except a crash, a hang or a read of something the rows do not name; the seed workspace
// is ARGUS_FUZZ_WORKSPACE, else tests/data/workspace (its README says how it was made).
//
// The patched bytes reach SQLite through an in-memory file system of this harness (MemoryVfs,
// registered as SQLite's default): the workspace on disk keeps the seed's argus.db, which the
// workspace's own checks (exists, not empty, access) see, and every page SQLite reads comes from
// the patched image. Writing a file and opening it per input cost two thirds of each execution
// (the kernel's file system, locks, SQLite's -shm); SQLite reads the same bytes either way. The
// seed's header is set to rollback-journal mode (bytes 18-19), which needs no -shm; a patch that
// sets WAL mode back is one more damage (this file system has no -wal or -shm to offer).
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "argus/workspace/workspace.h"
#include "fuzz_util.h"

namespace {

namespace fs = std::filesystem;

// --- MemoryVfs: SQLite's files, served from the current input's image ----------------------

std::string gImage;  // the patched argus.db of the execution in progress

struct MemoryFile {
  sqlite3_file base;  // first: SQLite sees a sqlite3_file*
};

int memClose(sqlite3_file*) {
  return SQLITE_OK;
}

int memRead(sqlite3_file*, void* out, int amount, sqlite3_int64 offset) {
  const auto size = static_cast<sqlite3_int64>(gImage.size());
  const sqlite3_int64 n = offset >= size ? 0 : std::min<sqlite3_int64>(amount, size - offset);
  if (n > 0) std::memcpy(out, gImage.data() + offset, static_cast<size_t>(n));
  if (n == amount) return SQLITE_OK;
  // SQLite's contract for a short read: zero the rest and say so.
  std::memset(static_cast<char*>(out) + n, 0, static_cast<size_t>(amount - n));
  return SQLITE_IOERR_SHORT_READ;
}

int memWrite(sqlite3_file*, const void*, int, sqlite3_int64) {
  return SQLITE_READONLY;
}
int memTruncate(sqlite3_file*, sqlite3_int64) {
  return SQLITE_READONLY;
}
int memSync(sqlite3_file*, int) {
  return SQLITE_OK;
}
int memFileSize(sqlite3_file*, sqlite3_int64* size) {
  *size = static_cast<sqlite3_int64>(gImage.size());
  return SQLITE_OK;
}
int memLock(sqlite3_file*, int) {
  return SQLITE_OK;
}
int memCheckReservedLock(sqlite3_file*, int* reserved) {
  *reserved = 0;
  return SQLITE_OK;
}
int memFileControl(sqlite3_file*, int, void*) {
  return SQLITE_NOTFOUND;
}
int memSectorSize(sqlite3_file*) {
  return 4096;
}
int memDeviceCharacteristics(sqlite3_file*) {
  return SQLITE_IOCAP_IMMUTABLE;
}

const sqlite3_io_methods kMemoryMethods = {
    .iVersion = 1,
    .xClose = memClose,
    .xRead = memRead,
    .xWrite = memWrite,
    .xTruncate = memTruncate,
    .xSync = memSync,
    .xFileSize = memFileSize,
    .xLock = memLock,
    .xUnlock = memLock,
    .xCheckReservedLock = memCheckReservedLock,
    .xFileControl = memFileControl,
    .xSectorSize = memSectorSize,
    .xDeviceCharacteristics = memDeviceCharacteristics,
    // Version 1: no shared memory (so no WAL) and no memory-mapped reads.
    .xShmMap = nullptr,
    .xShmLock = nullptr,
    .xShmBarrier = nullptr,
    .xShmUnmap = nullptr,
    .xFetch = nullptr,
    .xUnfetch = nullptr,
};

sqlite3_vfs* gDisk = nullptr;  // the default VFS, for what is not a file

int memOpen(sqlite3_vfs*, const char*, sqlite3_file* file, int flags, int* outFlags) {
  // Only the main database exists here: a journal, a -wal or a -shm cannot be opened.
  if ((flags & SQLITE_OPEN_MAIN_DB) == 0) return SQLITE_CANTOPEN;
  file->pMethods = &kMemoryMethods;
  if (outFlags != nullptr) *outFlags = SQLITE_OPEN_READONLY;
  return SQLITE_OK;
}
int memDelete(sqlite3_vfs*, const char*, int) {
  return SQLITE_IOERR_DELETE;
}
int memAccess(sqlite3_vfs*, const char*, int, int* result) {
  *result = 0;  // no hot journal, no -wal beside the database
  return SQLITE_OK;
}
int memFullPathname(sqlite3_vfs*, const char* name, int size, char* out) {
  sqlite3_snprintf(size, out, "%s", name);
  return SQLITE_OK;
}
void* memDlOpen(sqlite3_vfs*, const char* name) {
  return gDisk->xDlOpen(gDisk, name);
}
void memDlError(sqlite3_vfs*, int size, char* out) {
  gDisk->xDlError(gDisk, size, out);
}
void (*memDlSym(sqlite3_vfs*, void* handle, const char* symbol))() {
  return gDisk->xDlSym(gDisk, handle, symbol);
}
void memDlClose(sqlite3_vfs*, void* handle) {
  gDisk->xDlClose(gDisk, handle);
}
int memRandomness(sqlite3_vfs*, int size, char* out) {
  return gDisk->xRandomness(gDisk, size, out);
}
int memSleep(sqlite3_vfs*, int us) {
  return gDisk->xSleep(gDisk, us);
}
int memCurrentTime(sqlite3_vfs*, double* now) {
  return gDisk->xCurrentTime(gDisk, now);
}
int memGetLastError(sqlite3_vfs*, int, char*) {
  return 0;
}

void registerMemoryVfs() {
  // Before SQLite initializes: page buffers from one static pool and a small lookaside, instead
  // of a 120 KiB lookaside and a malloc per page for every connection (under ASan, allocation
  // was a fifth of each execution).
  static char pages[64 * (4096 + 512)];
  sqlite3_config(SQLITE_CONFIG_PAGECACHE, pages, 4096 + 512, 64);
  sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 128, 64);
  static sqlite3_vfs vfs;
  gDisk = sqlite3_vfs_find(nullptr);
  vfs.iVersion = 1;
  vfs.szOsFile = sizeof(MemoryFile);
  vfs.mxPathname = gDisk->mxPathname;
  vfs.zName = "argus-fuzz-memory";
  vfs.xOpen = memOpen;
  vfs.xDelete = memDelete;
  vfs.xAccess = memAccess;
  vfs.xFullPathname = memFullPathname;
  vfs.xDlOpen = memDlOpen;
  vfs.xDlError = memDlError;
  vfs.xDlSym = memDlSym;
  vfs.xDlClose = memDlClose;
  vfs.xRandomness = memRandomness;
  vfs.xSleep = memSleep;
  vfs.xCurrentTime = memCurrentTime;
  vfs.xGetLastError = memGetLastError;
  if (sqlite3_vfs_register(&vfs, 1) != SQLITE_OK) {
    std::fprintf(stderr, "fuzz_workspace: cannot register the memory VFS\n");
    std::abort();
  }
}

// --- The seed workspace -----------------------------------------------------------------------

struct Seed {
  std::string db;    // argus.db of the seed workspace, in rollback-journal mode
  fs::path scratch;  // the workspace opened: the seed's argus.db and a link to its blobs
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
    if (out.db.size() > 19 && out.db[18] == 2 && out.db[19] == 2) out.db[18] = out.db[19] = 1;
    const fs::path tmp =
        fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    out.scratch = tmp / ("argus-fuzz-ws-" + std::to_string(getpid()));
    static const fs::path removeAtExit = out.scratch;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(removeAtExit, ec);
    });
    std::error_code ec;
    fs::create_directories(out.scratch);
    const fs::path blobs = fs::absolute(dir / "blobs");
    if (fs::is_directory(blobs)) fs::create_directory_symlink(blobs, out.scratch / "blobs", ec);
    std::ofstream copy(out.scratch / "argus.db", std::ios::binary);
    copy.write(out.db.data(), static_cast<std::streamsize>(out.db.size()));
    registerMemoryVfs();
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
  gImage.assign(s.db);  // the capacity stays: no allocation per input
  std::string& db = gImage;
  for (size_t i = 0; i + 5 <= size; i += 5) {
    const uint32_t offset =
        static_cast<uint32_t>(data[i]) | static_cast<uint32_t>(data[i + 1]) << 8 |
        static_cast<uint32_t>(data[i + 2]) << 16 | static_cast<uint32_t>(data[i + 3]) << 24;
    if (!db.empty()) db[offset % db.size()] = static_cast<char>(data[i + 4]);
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
