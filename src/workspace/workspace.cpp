#include "argus/workspace/workspace.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_set>
#include <variant>

#include <fmt/format.h>

#include "blob_store.h"
#include "schema.h"
#include "sqlite.h"

namespace fs = std::filesystem;

namespace argus::workspace {

// Column lists shared by the queries that build records (macros so that the statements stay
// string literals, which is what the statement cache keys on). Each ends with the row's
// checksum, which covers the columns before it in this order (the order of TableSeal::select).
#define ARGUS_ARTIFACT_COLUMNS                                                              \
  "a.id, a.kind, a.name, a.scope, a.version_id, a.task_id, a.hash, a.size, a.stored_size, " \
  "a.compression, a.created_at, a.location, a.checksum"
#define ARGUS_TASK_COLUMNS                                                           \
  "t.id, t.type, t.memo_key, t.descriptor_json, t.status, t.attempt, t.version_id, " \
  "t.queued_at, t.started_at, t.ended_at, t.error, t.log_artifact_id, t.owner, "     \
  "t.checksum, (SELECT group_concat(artifact_id) FROM (SELECT artifact_id FROM "     \
  "task_inputs i WHERE i.task_id = t.id ORDER BY i.position))"
#define ARGUS_VERSION_COLUMNS                                                                \
  "v.id, v.kind, v.base_id, v.transform, v.options_json, v.label, v.task_id, v.created_at, " \
  "v.content_key, v.checksum"
#define ARGUS_RUN_COLUMNS \
  "id, task_id, device, backend_config_json, environment_json, created_at, checksum"

namespace {

constexpr int kArtifactFields = 12;  // checksummed columns of ARGUS_ARTIFACT_COLUMNS
constexpr int kTaskFields = 13;
constexpr int kTaskColumnCount = kTaskFields + 2;  // + checksum + inputs
constexpr int kVersionFields = 9;
constexpr int kRunFields = 6;

constexpr std::string_view kVersionKinds[] = {"program", "variant"};
constexpr std::string_view kTaskTypes[] = {"transform", "collect", "synthesize", "control"};
constexpr std::string_view kTaskStatuses[] = {"queued", "running",   "succeeded",
                                              "failed", "timed_out", "cancelled"};
constexpr std::string_view kCompressions[] = {"none", "zstd"};

/// How one table's rows are sealed: the checksummed columns (in the record queries' order) of
/// the row with key ?1 (and ?2), and how its checksum (?3) is stored.
struct TableSeal {
  const char* table;
  const char* select;
  const char* update;
  const char* scan;        ///< Every row: the checksummed columns, then the checksum.
  const char* keysSelect;  ///< Every row's key.
  int fields;
  int keys;
};

constexpr TableSeal kVersionsSeal{
    "versions",
    "SELECT id, kind, base_id, transform, options_json, label, task_id, created_at, content_key "
    "FROM versions WHERE id = ?1",
    "UPDATE versions SET checksum = ?3 WHERE id = ?1",
    "SELECT id, kind, base_id, transform, options_json, label, task_id, created_at, content_key, "
    "checksum FROM versions",
    "SELECT id FROM versions",
    kVersionFields,
    1};
constexpr TableSeal kTasksSeal{
    "tasks",
    "SELECT id, type, memo_key, descriptor_json, status, attempt, version_id, queued_at, "
    "started_at, ended_at, error, log_artifact_id, owner FROM tasks WHERE id = ?1",
    "UPDATE tasks SET checksum = ?3 WHERE id = ?1",
    "SELECT id, type, memo_key, descriptor_json, status, attempt, version_id, queued_at, "
    "started_at, ended_at, error, log_artifact_id, owner, checksum FROM tasks",
    "SELECT id FROM tasks",
    kTaskFields,
    1};
constexpr TableSeal kArtifactsSeal{
    "artifacts",
    "SELECT id, kind, name, scope, version_id, task_id, hash, size, stored_size, compression, "
    "created_at, location FROM artifacts WHERE id = ?1",
    "UPDATE artifacts SET checksum = ?3 WHERE id = ?1",
    "SELECT id, kind, name, scope, version_id, task_id, hash, size, stored_size, compression, "
    "created_at, location, checksum FROM artifacts",
    "SELECT id FROM artifacts",
    kArtifactFields,
    1};
constexpr TableSeal kVersionFilesSeal{
    "version_files",
    "SELECT version_id, name, artifact_id FROM version_files WHERE version_id = ?1 AND name = ?2",
    "UPDATE version_files SET checksum = ?3 WHERE version_id = ?1 AND name = ?2",
    "SELECT version_id, name, artifact_id, checksum FROM version_files",
    "SELECT version_id, name FROM version_files",
    3,
    2};
constexpr TableSeal kTaskInputsSeal{
    "task_inputs",
    "SELECT task_id, position, artifact_id FROM task_inputs WHERE task_id = ?1 AND position = ?2",
    "UPDATE task_inputs SET checksum = ?3 WHERE task_id = ?1 AND position = ?2",
    "SELECT task_id, position, artifact_id, checksum FROM task_inputs",
    "SELECT task_id, position FROM task_inputs",
    3,
    2};
constexpr TableSeal kRunsSeal{
    "runs",
    "SELECT id, task_id, device, backend_config_json, environment_json, created_at FROM runs "
    "WHERE id = ?1",
    "UPDATE runs SET checksum = ?3 WHERE id = ?1",
    "SELECT " ARGUS_RUN_COLUMNS " FROM runs",
    "SELECT id FROM runs",
    kRunFields,
    1};
constexpr const TableSeal* kSealedTables[] = {&kVersionsSeal,     &kTasksSeal,      &kArtifactsSeal,
                                              &kVersionFilesSeal, &kTaskInputsSeal, &kRunsSeal};

/// The checksum of columns [first, first + count) of the current row: a hash of the table name
/// and each value with its SQLite type, so that no change of a value (nor of its type) keeps it.
std::string rowChecksum(std::string_view table, const sql::Statement& s, int first, int count) {
  std::string canonical(table);
  canonical += '\n';
  for (int i = first; i < first + count; ++i) {
    switch (s.type(i)) {
      case SQLITE_INTEGER:
        canonical += fmt::format("i{};", s.integer(i));
        break;
      case SQLITE_FLOAT:
        canonical += fmt::format("f{};", s.real(i));
        break;
      case SQLITE_NULL:
        canonical += "n;";
        break;
      default: {
        const char tag = s.type(i) == SQLITE_BLOB ? 'b' : 't';
        std::string value = s.text(i);
        canonical += fmt::format("{}{}:", tag, value.size());
        canonical += value;
      }
    }
  }
  return hashBytes(canonical).hex();
}

/// Checks the checksum at column first + count against columns [first, first + count).
Result<void> checkRow(const sql::Statement& s, int first, int count, std::string_view table,
                      std::string_view object, const fs::path& dbFile) {
  if (rowChecksum(table, s, first, count) == s.text(first + count)) return {};
  return fail("workspace",
              fmt::format("{}: {} fails its checksum (the row was changed outside argus, or the "
                          "disk damaged it), so it is not used; `argus ws check --workspace {}` "
                          "lists every damaged row; restore argus.db from a backup",
                          dbFile.string(), object, dbFile.parent_path().string()));
}

template <class Enum, std::size_t N>
Enum enumFrom(const std::string_view (&names)[N], std::string_view text) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == text) return static_cast<Enum>(i);
  return static_cast<Enum>(0);  // CHECK constraints and row checksums keep other values out
}

TimestampMs nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

template <class IdType>
std::optional<IdType> optionalId(const sql::Statement& s, int column) {
  if (auto v = s.optionalInteger(column)) return IdType(*v);
  return std::nullopt;
}

template <class IdType>
std::optional<std::int64_t> rawId(const std::optional<IdType>& id) {
  if (id) return id->value();
  return std::nullopt;
}

Result<ArtifactRecord> artifactFrom(const sql::Statement& s, int c, const fs::path& dbFile) {
  if (auto ok = checkRow(s, c, kArtifactFields, "artifacts",
                         fmt::format("artifact a{}", s.integer(c)), dbFile);
      !ok)
    return std::unexpected(ok.error());
  ArtifactRecord a;
  a.id = ArtifactId(s.integer(c));
  a.kind = s.text(c + 1);
  a.name = s.text(c + 2);
  a.scope = s.text(c + 3);
  a.version = optionalId<VersionId>(s, c + 4);
  a.task = optionalId<TaskId>(s, c + 5);
  a.hash = ContentHash::fromHex(s.text(c + 6)).value_or(ContentHash{});
  a.size = static_cast<std::uint64_t>(s.integer(c + 7));
  a.storedSize = static_cast<std::uint64_t>(s.integer(c + 8));
  a.compression = enumFrom<Compression>(kCompressions, s.text(c + 9));
  a.createdAt = s.integer(c + 10);
  a.storedInline = s.text(c + 11) == "inline";
  return a;
}

Result<TaskRecord> taskFrom(const sql::Statement& s, int c, const fs::path& dbFile) {
  if (auto ok = checkRow(s, c, kTaskFields, "tasks", fmt::format("task t{}", s.integer(c)), dbFile);
      !ok)
    return std::unexpected(ok.error());
  TaskRecord t;
  t.id = TaskId(s.integer(c));
  t.type = enumFrom<TaskType>(kTaskTypes, s.text(c + 1));
  t.memoKey = ContentHash::fromHex(s.text(c + 2)).value_or(ContentHash{});
  t.descriptorJson = s.text(c + 3);
  t.status = enumFrom<TaskStatus>(kTaskStatuses, s.text(c + 4));
  t.attempt = static_cast<int>(s.integer(c + 5));
  t.version = optionalId<VersionId>(s, c + 6);
  t.queuedAt = s.integer(c + 7);
  t.startedAt = s.optionalInteger(c + 8);
  t.endedAt = s.optionalInteger(c + 9);
  t.error = s.text(c + 10);
  t.log = optionalId<ArtifactId>(s, c + 11);
  t.owner = s.text(c + 12);
  const std::string inputs = s.text(c + 14);
  for (std::size_t pos = 0; pos < inputs.size();) {
    std::size_t comma = inputs.find(',', pos);
    if (comma == std::string::npos) comma = inputs.size();
    std::int64_t id = 0;
    auto [end, ec] = std::from_chars(inputs.data() + pos, inputs.data() + comma, id);
    if (ec != std::errc{} || end != inputs.data() + comma)
      return fail("workspace", fmt::format("{}: the inputs of task t{} are damaged (`{}`); "
                                           "restore argus.db from a backup",
                                           dbFile.string(), s.integer(c), inputs));
    t.inputs.emplace_back(id);
    pos = comma + 1;
  }
  return t;
}

Result<VersionRecord> versionFrom(const sql::Statement& s, int c, const fs::path& dbFile) {
  if (auto ok = checkRow(s, c, kVersionFields, "versions", fmt::format("version v{}", s.integer(c)),
                         dbFile);
      !ok)
    return std::unexpected(ok.error());
  VersionRecord v;
  v.id = VersionId(s.integer(c));
  v.kind = enumFrom<VersionKind>(kVersionKinds, s.text(c + 1));
  v.base = optionalId<VersionId>(s, c + 2);
  v.transform = s.text(c + 3);
  v.optionsJson = s.text(c + 4);
  v.label = s.text(c + 5);
  v.task = optionalId<TaskId>(s, c + 6);
  v.createdAt = s.integer(c + 7);
  return v;
}

/// A random 64-bit value for names no other process picks.
std::uint64_t randomToken() {
  static std::mt19937_64 rng(std::random_device{}() ^ static_cast<std::uint64_t>(::getpid()) << 32 ^
                             static_cast<std::uint64_t>(nowMs()));
  static std::mutex m;
  std::lock_guard lock(m);
  return rng();
}

bool isFinal(TaskStatus status) {
  return status != TaskStatus::queued && status != TaskStatus::running;
}

}  // namespace

std::string_view toString(VersionKind kind) {
  return kVersionKinds[static_cast<int>(kind)];
}
std::string_view toString(TaskType type) {
  return kTaskTypes[static_cast<int>(type)];
}
std::string_view toString(TaskStatus status) {
  return kTaskStatuses[static_cast<int>(status)];
}
std::string_view toString(Compression c) {
  return kCompressions[static_cast<int>(c)];
}

ContentHash memoKey(TaskType type, const nlohmann::json& descriptor,
                    std::span<const ContentHash> inputHashes) {
  return memoKey(toString(type), descriptor, inputHashes);
}

struct Workspace::Impl {
  fs::path dir;
  fs::path dbFile;
  OpenOptions options;
  BlobStore blobs;
  mutable sql::Database db;
  mutable std::mutex mutex;
  int lockFd = -1;
  // The lease of this process (owners/<token>.lock, flocked while open) and its scratch folder.
  std::string token;
  int leaseFd = -1;
  fs::path scratch;

  Impl(fs::path directory, const OpenOptions& opts)
      : dir(std::move(directory)), dbFile(dir / "argus.db"), options(opts), blobs(dir, opts) {}
  ~Impl() {
    if (leaseFd >= 0) {
      std::error_code ec;
      fs::remove_all(scratch, ec);
      ::unlink((ownersDir() / (token + ".lock")).c_str());
      ::close(leaseFd);
    }
    if (lockFd >= 0) ::close(lockFd);
  }

  fs::path ownersDir() const { return dir / "owners"; }

  Error error(std::string message) const { return Error{"workspace", std::move(message)}; }

  Error notFound(std::string_view what) const {
    return error(fmt::format("no {} in {}; `argus ws list` shows what exists", what, dir.string()));
  }

  Result<void> writable(std::string_view what) const {
    if (!options.readOnly) return {};
    return std::unexpected(error(
        fmt::format("{}: cannot {}: the workspace was opened read-only (by a verb that only reads)",
                    dir.string(), what)));
  }

  /// flock on dir/lock: publishers share it while their blobs are not yet referenced by a
  /// committed row; gc holds it exclusively so it never deletes such a blob.
  Result<void> lock(int operation) const {
    auto deadline = std::chrono::steady_clock::now() + options.busyTimeout;
    for (;;) {
      if (::flock(lockFd, operation | LOCK_NB) == 0) return {};
      if (errno != EWOULDBLOCK && errno != EINTR)
        return std::unexpected(error(
            fmt::format("{}: flock failed: {}", (dir / "lock").string(), std::strerror(errno))));
      if (std::chrono::steady_clock::now() > deadline)
        return std::unexpected(error(fmt::format(
            "{} is locked by another process for more than {} s ({}); wait for the other argus "
            "to finish and try again",
            (dir / "lock").string(), options.busyTimeout.count() / 1000,
            operation == LOCK_EX ? "publishing" : "garbage collection")));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  void unlock() const { ::flock(lockFd, LOCK_UN); }

  struct LockGuard {
    const Impl* impl;
    ~LockGuard() { impl->unlock(); }
  };

  Result<void> openAll() {
    std::error_code ec;
    const bool mayCreate = options.create && !options.readOnly;
    if (!fs::is_directory(dir, ec)) {
      if (!mayCreate)
        return std::unexpected(error(fmt::format(
            "{} does not exist; run an `argus` query first to create it, or point --workspace "
            "at an existing workspace",
            dir.string())));
      const bool created = fs::create_directories(dir, ec);
      if (ec)
        return std::unexpected(error(
            fmt::format("cannot create {}: {}; check permissions", dir.string(), ec.message())));
      // Only a directory made here: an existing one may hold the user's own files.
      if (created)
        if (auto ok = ignoreInGit(); !ok) return ok;
    }
    if (!fs::exists(dbFile, ec)) {
      if (!mayCreate)
        return std::unexpected(error(fmt::format(
            "{} is not an Argus workspace (no argus.db); point --workspace at one", dir.string())));
      // Only a missing workspace is made: blobs without their database are a lost history.
      if (std::size_t n = countFiles(dir / "blobs"); n > 0)
        return std::unexpected(error(fmt::format(
            "{} is missing but {} holds {} blob files, so this was a workspace whose history is "
            "gone; restore argus.db from a backup, or move {} away to start a new workspace",
            dbFile.string(), (dir / "blobs").string(), n, dir.string())));
      if (auto ok = createDatabase(); !ok) return ok;
    }
    if (fs::file_size(dbFile, ec) == 0 && !ec)
      return std::unexpected(error(fmt::format(
          "{} is empty (0 bytes): the workspace's history is gone (the file was truncated or "
          "replaced); restore it from a backup, or move it away (`mv {} {}.empty`) to start a "
          "new workspace in {}",
          dbFile.string(), dbFile.string(), dbFile.string(), dir.string())));
    int timeoutMs = static_cast<int>(options.busyTimeout.count());
    if (options.readOnly) {
      // Without write access to the directory SQLite cannot make the -shm file a WAL reader
      // needs; nobody can be writing there either, so the database is read as immutable.
      const bool dirWritable =
          ::access(dir.c_str(), W_OK) == 0 && ::access(dbFile.c_str(), W_OK) == 0;
      auto mode = dirWritable ? sql::OpenMode::readOnly : sql::OpenMode::immutable;
      if (auto ok = db.open(dbFile, mode, timeoutMs); !ok) return ok;
      return checkSchema();
    }
    for (const fs::path& p : {dir, dbFile})
      if (::access(p.c_str(), W_OK) != 0)
        return std::unexpected(error(fmt::format(
            "{} is not writable ({}), and this command changes the workspace; make it writable "
            "(or copy the workspace somewhere writable and point --workspace there); the "
            "reading verbs (`argus ws list|show|cat|check`) work on it as it is",
            p.string(), std::strerror(errno))));
    if (auto ok = blobs.prepare(); !ok) return ok;
    fs::path lockFile = dir / "lock";
    lockFd = ::open(lockFile.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lockFd < 0)
      return std::unexpected(error(fmt::format("cannot open {}: {}; check permissions",
                                               lockFile.string(), std::strerror(errno))));
    if (auto ok = db.open(dbFile, sql::OpenMode::readWrite, timeoutMs); !ok) return ok;
    if (auto ok = db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                          "PRAGMA foreign_keys=ON;");
        !ok)
      return ok;
    if (auto ok = checkSchema(); !ok) return ok;
    if (auto ok = acquireLease(); !ok) return ok;
    if (options.recover)
      if (auto r = recoverLocked(true); !r) return std::unexpected(r.error());
    return {};
  }

  static std::size_t countFiles(const fs::path& root) {
    std::size_t n = 0;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) ++n;
    return n;
  }

  /// Makes argus.db atomically: the schema is written to a temporary file that is then linked
  /// into place (link, unlike rename, never replaces a database another process made first), so
  /// a process killed at any point leaves either no argus.db or a complete, empty one.
  Result<void> createDatabase() {
    const std::string prefix = "argus.db.creating.";
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      // Left by a process killed while creating; one younger than a minute may still be in use.
      if (!it->path().filename().string().starts_with(prefix)) continue;
      std::error_code timeEc;
      auto age = fs::file_time_type::clock::now() - fs::last_write_time(it->path(), timeEc);
      if (!timeEc && age > std::chrono::minutes(1)) fs::remove(it->path(), timeEc);
    }
    const fs::path temp = dir / fmt::format("{}{}-{:x}", prefix, ::getpid(), randomToken());
    {
      sql::Database fresh;
      if (auto ok = fresh.open(temp, sql::OpenMode::create, 1000); !ok) return ok;
      if (auto ok = fresh.exec("PRAGMA journal_mode=WAL; BEGIN IMMEDIATE;"); !ok) return ok;
      if (auto ok = fresh.exec(kSchemaSql); !ok) return ok;
      auto put = fresh.prepare("INSERT INTO meta(key, value) VALUES ('schema_version', ?)");
      if (!put) return std::unexpected(put.error());
      if (auto ok = put->bind(1, std::to_string(kSchemaVersion)).run(); !ok) return ok;
      if (auto ok = fresh.exec("COMMIT"); !ok) return ok;
    }  // closed: checkpointed into the file, its -wal removed
    if (options.syncBlobs) {
      int fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
      }
    }
    int rc = ::link(temp.c_str(), dbFile.c_str());
    int err = errno;
    ::unlink(temp.c_str());
    if (rc != 0 && err != EEXIST)
      return std::unexpected(
          error(fmt::format("cannot create {}: {}; check permissions and free "
                            "disk space",
                            dbFile.string(), std::strerror(err))));
    return {};
  }

  /// A workspace is local state wherever it is made (beside a spec inside a repository, most
  /// often): a `.gitignore` of `*` in it keeps git from listing it, as Python's venv does.
  Result<void> ignoreInGit() const {
    const fs::path file = dir / ".gitignore";
    std::ofstream out(file, std::ios::binary);
    out << "# Created by Argus: a workspace is local state, not source.\n*\n";
    out.close();
    if (!out)
      return std::unexpected(
          error(fmt::format("cannot write {}; check permissions", file.string())));
    return {};
  }

  Result<int> storedSchemaVersion() {
    auto exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'");
    if (!exists) return std::unexpected(exists.error());
    auto row = exists->step();
    if (!row) return std::unexpected(row.error());
    exists->reset();
    const auto damaged = [&](std::string_view why) {
      return error(
          fmt::format("{} {}: it is not an Argus workspace database, or it is damaged; "
                      "restore it from a backup, or move it away to start a new "
                      "workspace",
                      dbFile.string(), why));
    };
    if (!*row) return std::unexpected(damaged("has no meta table"));
    auto q = db.prepare("SELECT value FROM meta WHERE key='schema_version'");
    if (!q) return std::unexpected(q.error());
    auto has = q->step();
    if (!has) return std::unexpected(has.error());
    if (!*has) return std::unexpected(damaged("records no schema version"));
    const std::string text = q->text(0);
    q->reset();
    int version = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
    if (ec != std::errc{} || end != text.data() + text.size() || version < 1)
      return std::unexpected(damaged(fmt::format("records schema version `{}`", text)));
    return version;
  }

  Result<void> checkSchema() {
    auto version = storedSchemaVersion();
    if (!version) return std::unexpected(version.error());
    if (*version > kSchemaVersion)
      return std::unexpected(error(fmt::format(
          "{} was written by a newer Argus (workspace schema {}; this build understands up to "
          "{}); upgrade argus, or use another --workspace",
          dbFile.string(), *version, kSchemaVersion)));
    if (*version == kSchemaVersion) return {};
    if (options.readOnly)
      return std::unexpected(error(fmt::format(
          "{} has workspace schema {}, older than this build's {}; it is upgraded the first "
          "time a writing command opens it (e.g. `argus ws gc --workspace {}`), which needs "
          "write access",
          dbFile.string(), *version, kSchemaVersion, dir.string())));
    return migrate(*version);
  }

  /// Schema 1 -> 2 in one transaction: new columns, then every existing row sealed.
  Result<void> migrate(int from) {
    sql::Transaction tx(db);
    if (auto ok = tx.begin(); !ok) return ok;
    if (auto again = storedSchemaVersion(); !again || *again != from)  // another process did it
      return again ? Result<void>{} : std::unexpected(again.error());
    if (auto ok = db.exec(kMigrateFrom1Sql); !ok) return ok;
    if (auto ok = db.exec(kSchemaSql); !ok) return ok;
    for (const TableSeal* t : kSealedTables) {
      auto rows = db.prepare(t->keysSelect);
      if (!rows) return std::unexpected(rows.error());
      std::vector<std::pair<std::int64_t, std::string>> all;
      for (;;) {
        auto row = rows->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        all.emplace_back(rows->integer(0), t->keys == 2 ? rows->text(1) : std::string());
      }
      rows->reset();
      for (const auto& [key, second] : all) {
        std::int64_t position = 0;
        std::from_chars(second.data(), second.data() + second.size(), position);
        auto ok = t == &kVersionFilesSeal ? seal(*t, key, std::string_view(second))
                  : t == &kTaskInputsSeal ? seal(*t, key, position)
                                          : seal(*t, key);
        if (!ok) return ok;
      }
    }
    if (auto ok = db.exec(fmt::format("UPDATE meta SET value = '{}' WHERE key = 'schema_version'",
                                      kSchemaVersion));
        !ok)
      return ok;
    return tx.commit();
  }

  /// Sets the checksum of one row from its stored columns (inside the writer's transaction).
  Result<void> seal(const TableSeal& t, std::int64_t key,
                    std::optional<std::variant<std::int64_t, std::string>> second = {}) const {
    auto bindKeys = [&](sql::Statement& q) {
      q.bind(1, key);
      if (second) {
        if (const auto* i = std::get_if<std::int64_t>(&*second))
          q.bind(2, *i);
        else
          q.bind(2, std::get<std::string>(*second));
      }
    };
    auto q = db.prepare(t.select);
    if (!q) return std::unexpected(q.error());
    bindKeys(*q);
    auto row = q->step();
    if (!row) return std::unexpected(row.error());
    if (!*row)
      return std::unexpected(
          error(fmt::format("{}: sealing a {} row that is not there", dbFile.string(), t.table)));
    std::string checksum = rowChecksum(t.table, *q, 0, t.fields);
    q->reset();
    auto u = db.prepare(t.update);
    if (!u) return std::unexpected(u.error());
    bindKeys(*u);
    return u->bind(3, checksum).run();
  }
  Result<void> seal(const TableSeal& t, std::int64_t key, std::string_view second) const {
    return seal(t, key, std::variant<std::int64_t, std::string>(std::string(second)));
  }
  Result<void> seal(const TableSeal& t, std::int64_t key, std::int64_t second) const {
    return seal(t, key, std::variant<std::int64_t, std::string>(second));
  }

  // --- owners: leases and recovery ----------------------------------------------------------

  /// Takes this process's lease: owners/<token>.lock, flocked before it becomes visible (made as
  /// .lock.new, locked, renamed), so a lock that another process can take is always a dead one.
  Result<void> acquireLease() {
    std::error_code ec;
    fs::create_directories(ownersDir(), ec);
    if (ec)
      return std::unexpected(error(fmt::format("cannot create {}: {}; check permissions",
                                               ownersDir().string(), ec.message())));
    token = fmt::format("{}-{:012x}", ::getpid(), randomToken() & 0xffffffffffffULL);
    const fs::path pending = ownersDir() / (token + ".lock.new");
    const fs::path lease = ownersDir() / (token + ".lock");
    leaseFd = ::open(pending.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (leaseFd < 0)
      return std::unexpected(
          error(fmt::format("cannot create {}: {}; check permissions and "
                            "free disk space",
                            pending.string(), std::strerror(errno))));
    if (::flock(leaseFd, LOCK_EX) != 0 || ::rename(pending.c_str(), lease.c_str()) != 0) {
      int err = errno;
      ::unlink(pending.c_str());
      ::close(leaseFd);
      leaseFd = -1;
      return std::unexpected(
          error(fmt::format("cannot take {}: {}", lease.string(), std::strerror(err))));
    }
    scratch = ownersDir() / token;
    fs::create_directory(scratch, ec);
    if (ec)
      return std::unexpected(
          error(fmt::format("cannot create {}: {}; check permissions and free "
                            "disk space",
                            scratch.string(), ec.message())));
    return {};
  }

  Result<RecoveryReport> recoverLocked(bool repair);

  // --- record loading (callers hold the mutex) --------------------------------------------

  Result<ArtifactRecord> loadArtifact(ArtifactId id) const {
    auto q = db.prepare("SELECT " ARGUS_ARTIFACT_COLUMNS " FROM artifacts a WHERE a.id = ?");
    if (!q) return std::unexpected(q.error());
    auto row = q->bind(1, id.value()).step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return std::unexpected(notFound(fmt::format("artifact {}", id.text())));
    return artifactFrom(*q, 0, dbFile);
  }

  Result<VersionRecord> loadVersion(VersionId id) const {
    auto q = db.prepare("SELECT " ARGUS_VERSION_COLUMNS " FROM versions v WHERE v.id = ?");
    if (!q) return std::unexpected(q.error());
    auto row = q->bind(1, id.value()).step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return std::unexpected(notFound(fmt::format("version {}", id.text())));
    return versionFrom(*q, 0, dbFile);
  }

  /// Reads task rows joined with their outputs (log excluded), grouping rows by task.
  Result<std::vector<TaskRecord>> collectTasks(sql::Statement& q) const {
    std::vector<TaskRecord> tasks;
    for (;;) {
      auto row = q.step();
      if (!row) return std::unexpected(row.error());
      if (!*row) break;
      TaskId id(q.integer(0));
      if (tasks.empty() || tasks.back().id != id) {
        auto t = taskFrom(q, 0, dbFile);
        if (!t) return std::unexpected(t.error());
        tasks.push_back(std::move(*t));
      }
      if (!q.isNull(kTaskColumnCount)) {
        auto a = artifactFrom(q, kTaskColumnCount, dbFile);
        if (!a) return std::unexpected(a.error());
        tasks.back().outputs.push_back(std::move(*a));
      }
    }
    return tasks;
  }

  Result<TaskRecord> loadTask(TaskId id) const {
    auto q = db.prepare("SELECT " ARGUS_TASK_COLUMNS ", " ARGUS_ARTIFACT_COLUMNS
                        " FROM tasks t LEFT JOIN artifacts a ON a.task_id = t.id AND a.id IS NOT "
                        "t.log_artifact_id WHERE t.id = ? ORDER BY a.id");
    if (!q) return std::unexpected(q.error());
    q->bind(1, id.value());
    auto tasks = collectTasks(*q);
    if (!tasks) return std::unexpected(tasks.error());
    if (tasks->empty()) return std::unexpected(notFound(fmt::format("task {}", id.text())));
    return std::move(tasks->front());
  }

  Result<std::vector<VersionFile>> loadVersionFiles(VersionId id) const {
    auto q =
        db.prepare("SELECT f.version_id, f.name, f.artifact_id, f.checksum, " ARGUS_ARTIFACT_COLUMNS
                   " FROM version_files f JOIN artifacts a ON a.id = f.artifact_id"
                   " WHERE f.version_id = ? ORDER BY f.name");
    if (!q) return std::unexpected(q.error());
    q->bind(1, id.value());
    std::vector<VersionFile> files;
    for (;;) {
      auto row = q->step();
      if (!row) return std::unexpected(row.error());
      if (!*row) break;
      if (auto ok = checkRow(*q, 0, 3, "version_files",
                             fmt::format("file `{}` of version {}", q->text(1), id.text()), dbFile);
          !ok)
        return std::unexpected(ok.error());
      auto a = artifactFrom(*q, 4, dbFile);
      if (!a) return std::unexpected(a.error());
      files.push_back(VersionFile{q->text(1), std::move(*a)});
    }
    return files;
  }

  Result<std::vector<ArtifactRecord>> queryArtifacts(sql::Statement& q) const {
    std::vector<ArtifactRecord> out;
    for (;;) {
      auto row = q.step();
      if (!row) return std::unexpected(row.error());
      if (!*row) break;
      auto a = artifactFrom(q, 0, dbFile);
      if (!a) return std::unexpected(a.error());
      out.push_back(std::move(*a));
    }
    return out;
  }

  /// Inserts an artifact row for a stored blob; returns its record.
  Result<ArtifactRecord> insertArtifact(const NewArtifact& a, const BlobInfo& blob,
                                        std::optional<VersionId> version,
                                        std::optional<TaskId> task) const {
    auto q = db.prepare(
        "INSERT INTO artifacts(kind, name, scope, version_id, task_id, hash, size, stored_size, "
        "compression, created_at, location) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!q) return std::unexpected(q.error());
    ArtifactRecord r;
    r.kind = a.kind;
    r.name = a.name;
    r.scope = a.scope;
    r.version = version;
    r.task = task;
    r.hash = blob.hash;
    r.size = blob.size;
    r.storedSize = blob.storedSize;
    r.compression = blob.compression;
    r.storedInline = blob.storedInline;
    if (blob.storedInline) {
      auto put = db.prepare(
          "INSERT OR IGNORE INTO inline_blobs(hash, compression, data) VALUES (?, ?, ?)");
      if (!put) return std::unexpected(put.error());
      put->bind(1, blob.hash.hex()).bind(2, toString(blob.compression));
      put->bindBlob(3, blob.inlineData);
      if (auto ok = put->run(); !ok) return std::unexpected(ok.error());
    }
    r.createdAt = nowMs();
    q->bind(1, r.kind)
        .bind(2, r.name)
        .bind(3, r.scope)
        .bind(4, rawId(version))
        .bind(5, rawId(task))
        .bind(6, r.hash.hex())
        .bind(7, static_cast<std::int64_t>(r.size))
        .bind(8, static_cast<std::int64_t>(r.storedSize))
        .bind(9, toString(r.compression))
        .bind(10, r.createdAt)
        .bind(11, r.storedInline ? "inline" : "file");
    if (auto ok = q->run(); !ok) return std::unexpected(ok.error());
    r.id = ArtifactId(db.lastInsertId());
    if (auto ok = seal(kArtifactsSeal, r.id.value()); !ok) return std::unexpected(ok.error());
    return r;
  }

  /// The bytes of a blob file or inline blob, checked against the hash.
  Result<std::string> readBlob(const ContentHash& hash, Compression compression, std::uint64_t size,
                               bool storedInline) const {
    if (!storedInline) return blobs.read(hash, compression, size);
    std::string where = fmt::format("{} (inline blob {})", dbFile.string(), hash.hex());
    auto q = db.prepare("SELECT compression, data FROM inline_blobs WHERE hash = ?");
    if (!q) return std::unexpected(q.error());
    auto row = q->bind(1, hash.hex()).step();
    if (!row) return std::unexpected(row.error());
    if (!*row)
      return std::unexpected(error(fmt::format(
          "{} is missing; the database was edited by hand? rerun the task that produced it",
          where)));
    Compression stored = enumFrom<Compression>(kCompressions, q->text(0));
    return BlobStore::decode(q->text(1), hash, stored, size, where);
  }

  Result<void> requireVersion(std::optional<VersionId> id) const {
    if (!id) return {};
    auto v = loadVersion(*id);
    if (!v) return std::unexpected(v.error());
    return {};
  }

  Result<void> finishLocked(std::span<const TaskResult> results);
};

Workspace::Workspace(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Workspace::Workspace(Workspace&&) noexcept = default;
Workspace& Workspace::operator=(Workspace&&) noexcept = default;
Workspace::~Workspace() = default;

Result<Workspace> Workspace::open(const fs::path& directory, const OpenOptions& options) {
  std::error_code ec;
  fs::path absolute = fs::absolute(directory, ec);
  auto impl = std::make_unique<Impl>(ec ? directory : absolute.lexically_normal(), options);
  if (auto ok = impl->openAll(); !ok) return std::unexpected(ok.error());
  return Workspace(std::move(impl));
}

fs::path Workspace::defaultDirectory(const fs::path& program) {
  std::error_code ec;
  if (fs::is_directory(program, ec)) return program / ".argus";
  return program.parent_path() / ".argus";
}

const fs::path& Workspace::directory() const {
  return impl_->dir;
}

const fs::path& Workspace::scratchDirectory() const {
  return impl_->scratch;
}

// --- Versions -----------------------------------------------------------------------------

Result<void> checkVersionFileName(std::string_view name) {
  if (!name.empty() && name != "." && name != ".." &&
      name.find_first_of(std::string_view("/\\\0", 3)) == std::string_view::npos)
    return {};
  return fail("workspace",
              fmt::format("file name `{}` is not a plain file name: a version's files are named "
                          "by one path component (like kernel.cu), never a path, so that a "
                          "checkout writes only inside its own directory",
                          name));
}

Result<VersionId> Workspace::addVersion(const NewVersion& nv) {
  auto options = canonicalJson(std::string_view(nv.optionsJson));
  if (!options) return std::unexpected(options.error());
  std::set<std::string> names;
  for (const auto& f : nv.files) {
    if (f.name.empty() || f.kind.empty())
      return fail("workspace", "every file of a version needs a name and an artifact kind");
    if (auto ok = checkVersionFileName(f.name); !ok) return std::unexpected(ok.error());
    if (!names.insert(f.name).second)
      return fail("workspace", fmt::format("file `{}` is given twice for one version", f.name));
  }
  std::lock_guard guard(impl_->mutex);
  if (auto ok = impl_->writable("add a version"); !ok) return std::unexpected(ok.error());
  if (auto ok = impl_->lock(LOCK_SH); !ok) return std::unexpected(ok.error());
  Impl::LockGuard unlock{impl_.get()};
  std::vector<BlobInfo> blobs;
  for (const auto& f : nv.files) {
    auto blob = impl_->blobs.put(f.bytes);
    if (!blob) return std::unexpected(blob.error());
    blobs.push_back(*blob);
  }

  sql::Transaction tx(impl_->db);
  if (auto ok = tx.begin(); !ok) return std::unexpected(ok.error());
  if (!nv.contentKey.empty()) {
    // Inside the immediate transaction no other writer can add the same content meanwhile; the
    // unique index is the backstop. The blobs stored above are the same ones, or gc's.
    auto same = impl_->db.prepare("SELECT id FROM versions WHERE content_key = ?");
    if (!same) return std::unexpected(same.error());
    auto row = same->bind(1, nv.contentKey).step();
    if (!row) return std::unexpected(row.error());
    if (*row) {
      VersionId existing(same->integer(0));
      same->reset();
      if (auto v = impl_->loadVersion(existing); !v) return std::unexpected(v.error());
      return existing;
    }
    same->reset();
  }
  std::map<std::string, ArtifactId> files;
  if (nv.base) {
    auto base = impl_->loadVersionFiles(*nv.base);
    if (!base) return std::unexpected(base.error());
    if (base->empty())
      if (auto v = impl_->loadVersion(*nv.base); !v) return std::unexpected(v.error());
    for (const auto& f : *base) files.emplace(f.name, f.artifact.id);
  }
  for (const auto& name : nv.removedFiles)
    if (files.erase(name) == 0)
      return fail("workspace", fmt::format("cannot remove `{}`: the base version {} has no such "
                                           "file",
                                           name, nv.base ? nv.base->text() : "(none)"));
  auto insert = impl_->db.prepare(
      "INSERT INTO versions(kind, base_id, transform, options_json, label, task_id, created_at, "
      "content_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  if (!insert) return std::unexpected(insert.error());
  insert->bind(1, toString(nv.kind))
      .bind(2, rawId(nv.base))
      .bind(3, nv.transform)
      .bind(4, *options)
      .bind(5, nv.label)
      .bind(6, rawId(nv.task))
      .bind(7, nowMs())
      .bind(8, nv.contentKey);
  if (auto ok = insert->run(); !ok) return std::unexpected(ok.error());
  VersionId id(impl_->db.lastInsertId());
  if (auto ok = impl_->seal(kVersionsSeal, id.value()); !ok) return std::unexpected(ok.error());
  for (std::size_t i = 0; i < nv.files.size(); ++i) {
    const auto& f = nv.files[i];
    auto a = impl_->insertArtifact(NewArtifact{f.kind, f.name, "", id, ""}, blobs[i], id, nv.task);
    if (!a) return std::unexpected(a.error());
    files[f.name] = a->id;
  }
  auto link = impl_->db.prepare(
      "INSERT INTO version_files(version_id, name, artifact_id) VALUES (?, ?, ?)");
  if (!link) return std::unexpected(link.error());
  for (const auto& [name, artifact] : files) {
    if (auto ok = link->bind(1, id.value()).bind(2, name).bind(3, artifact.value()).run(); !ok)
      return std::unexpected(ok.error());
    if (auto ok = impl_->seal(kVersionFilesSeal, id.value(), std::string_view(name)); !ok)
      return std::unexpected(ok.error());
  }
  if (auto ok = tx.commit(); !ok) return std::unexpected(ok.error());
  return id;
}

Result<VersionId> Workspace::fork(VersionId base, std::string_view label) {
  NewVersion nv;
  nv.kind = VersionKind::program;
  nv.base = base;
  nv.transform = "fork";
  nv.label = std::string(label);
  return addVersion(nv);
}

Result<VersionRecord> Workspace::version(VersionId id) const {
  std::lock_guard guard(impl_->mutex);
  return impl_->loadVersion(id);
}

Result<std::vector<VersionFile>> Workspace::versionFiles(VersionId id) const {
  std::lock_guard guard(impl_->mutex);
  if (auto v = impl_->loadVersion(id); !v) return std::unexpected(v.error());
  return impl_->loadVersionFiles(id);
}

Result<std::vector<VersionRecord>> Workspace::lineage(VersionId id) const {
  std::lock_guard guard(impl_->mutex);
  // Bases always exist before the versions derived from them and rows never change, so the chain
  // has no cycles; the depth bound only guards against a hand-edited database.
  auto q = impl_->db.prepare(
      "WITH RECURSIVE chain(id, depth) AS (SELECT ?, 0 UNION ALL SELECT v.base_id, c.depth + 1 "
      "FROM versions v JOIN chain c ON v.id = c.id WHERE v.base_id IS NOT NULL AND c.depth < "
      "100000) SELECT " ARGUS_VERSION_COLUMNS
      " FROM chain JOIN versions v ON v.id = chain.id ORDER BY chain.depth");
  if (!q) return std::unexpected(q.error());
  q->bind(1, id.value());
  std::vector<VersionRecord> chain;
  for (;;) {
    auto row = q->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto v = versionFrom(*q, 0, impl_->dbFile);
    if (!v) return std::unexpected(v.error());
    chain.push_back(std::move(*v));
  }
  if (chain.empty()) return std::unexpected(impl_->notFound(fmt::format("version {}", id.text())));
  return chain;
}

Result<std::vector<VersionRecord>> Workspace::versions() const {
  std::lock_guard guard(impl_->mutex);
  auto q = impl_->db.prepare("SELECT " ARGUS_VERSION_COLUMNS " FROM versions v ORDER BY v.id");
  if (!q) return std::unexpected(q.error());
  std::vector<VersionRecord> out;
  for (;;) {
    auto row = q->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto v = versionFrom(*q, 0, impl_->dbFile);
    if (!v) return std::unexpected(v.error());
    out.push_back(std::move(*v));
  }
  return out;
}

// --- Artifacts ----------------------------------------------------------------------------

Result<ArtifactRecord> Workspace::publishArtifact(const NewArtifact& artifact) {
  if (artifact.kind.empty()) return fail("workspace", "an artifact needs a kind");
  std::lock_guard guard(impl_->mutex);
  if (auto ok = impl_->writable("publish an artifact"); !ok) return std::unexpected(ok.error());
  if (auto ok = impl_->lock(LOCK_SH); !ok) return std::unexpected(ok.error());
  Impl::LockGuard unlock{impl_.get()};
  auto blob = impl_->blobs.put(artifact.bytes);
  if (!blob) return std::unexpected(blob.error());
  sql::Transaction tx(impl_->db);
  if (auto ok = tx.begin(); !ok) return std::unexpected(ok.error());
  if (auto ok = impl_->requireVersion(artifact.version); !ok) return std::unexpected(ok.error());
  auto record = impl_->insertArtifact(artifact, *blob, artifact.version, std::nullopt);
  if (!record) return record;
  if (auto ok = tx.commit(); !ok) return std::unexpected(ok.error());
  return record;
}

Result<ArtifactRecord> Workspace::artifact(ArtifactId id) const {
  std::lock_guard guard(impl_->mutex);
  return impl_->loadArtifact(id);
}

Result<std::string> Workspace::readArtifact(ArtifactId id) const {
  std::lock_guard guard(impl_->mutex);
  auto a = impl_->loadArtifact(id);
  if (!a) return std::unexpected(a.error());
  return impl_->readBlob(a->hash, a->compression, a->size, a->storedInline);
}

Result<std::vector<ArtifactRecord>> Workspace::evidence(VersionId version, std::string_view kind,
                                                        std::string_view scope) const {
  std::lock_guard guard(impl_->mutex);
  auto q = impl_->db.prepare(
      "SELECT " ARGUS_ARTIFACT_COLUMNS
      " FROM artifacts a WHERE a.version_id = ? AND a.kind = ? AND a.scope = ? AND (a.task_id IS "
      "NULL OR EXISTS (SELECT 1 FROM tasks t WHERE t.id = a.task_id AND t.status = "
      "'succeeded')) ORDER BY a.id");
  if (!q) return std::unexpected(q.error());
  q->bind(1, version.value()).bind(2, kind).bind(3, scope);
  return impl_->queryArtifacts(*q);
}

Result<std::vector<ArtifactRecord>> Workspace::artifactsOf(VersionId version) const {
  std::lock_guard guard(impl_->mutex);
  auto q = impl_->db.prepare("SELECT " ARGUS_ARTIFACT_COLUMNS
                             " FROM artifacts a WHERE a.version_id = ? ORDER BY a.id");
  if (!q) return std::unexpected(q.error());
  q->bind(1, version.value());
  return impl_->queryArtifacts(*q);
}

Result<Provenance> Workspace::provenance(ArtifactId id, int maxDepth) const {
  std::lock_guard guard(impl_->mutex);
  // Bounded both in depth and in total nodes: a diamond-shaped history would otherwise expand
  // exponentially.
  int budget = 10'000;
  auto expand = [&](auto& self, ArtifactId artifactId, int depth) -> Result<Provenance> {
    --budget;
    Provenance p;
    auto a = impl_->loadArtifact(artifactId);
    if (!a) return std::unexpected(a.error());
    p.artifact = std::move(*a);
    if (p.artifact.version) {
      auto v = impl_->loadVersion(*p.artifact.version);
      if (!v) return std::unexpected(v.error());
      p.version = std::move(*v);
    }
    if (p.artifact.task) {
      auto t = impl_->loadTask(*p.artifact.task);
      if (!t) return std::unexpected(t.error());
      p.task = std::move(*t);
      if (depth >= maxDepth || budget <= 0) {
        p.truncated = !p.task->inputs.empty();
        return p;
      }
      for (ArtifactId input : p.task->inputs) {
        auto child = self(self, input, depth + 1);
        if (!child) return child;
        p.inputs.push_back(std::move(*child));
      }
    }
    return p;
  };
  return expand(expand, id, 0);
}

// --- Tasks --------------------------------------------------------------------------------

Result<std::optional<TaskRecord>> Workspace::findSucceededTask(const ContentHash& key) const {
  std::lock_guard guard(impl_->mutex);
  auto q = impl_->db.prepare(
      "SELECT " ARGUS_TASK_COLUMNS ", " ARGUS_ARTIFACT_COLUMNS
      " FROM tasks t LEFT JOIN artifacts a ON a.task_id = t.id AND a.id IS NOT t.log_artifact_id"
      " WHERE t.id = (SELECT id FROM tasks WHERE memo_key = ? AND status = 'succeeded' ORDER BY "
      "id LIMIT 1) ORDER BY a.id");
  if (!q) return std::unexpected(q.error());
  q->bind(1, key.hex());
  auto tasks = impl_->collectTasks(*q);
  if (!tasks) return std::unexpected(tasks.error());
  if (tasks->empty()) return std::optional<TaskRecord>{};
  // The row is intact (its checksum held); a damaged index could still have led to another.
  if (tasks->front().memoKey != key)
    return fail("workspace",
                fmt::format("{}: the memo index leads to task {}, whose key is not "
                            "{}; the index is damaged: run `argus ws check`",
                            impl_->dbFile.string(), tasks->front().id.text(), key.hex()));
  return std::optional<TaskRecord>(std::move(tasks->front()));
}

Result<TaskId> Workspace::createTask(const NewTask& task) {
  auto descriptor = canonicalJson(std::string_view(task.descriptorJson));
  if (!descriptor) return std::unexpected(descriptor.error());
  std::lock_guard guard(impl_->mutex);
  if (auto ok = impl_->writable("record a task"); !ok) return std::unexpected(ok.error());
  sql::Transaction tx(impl_->db);
  if (auto ok = tx.begin(); !ok) return std::unexpected(ok.error());
  if (auto ok = impl_->requireVersion(task.version); !ok) return std::unexpected(ok.error());
  auto q = impl_->db.prepare(
      "INSERT INTO tasks(type, memo_key, descriptor_json, status, attempt, version_id, queued_at, "
      "started_at, owner) VALUES (?1, ?2, ?3, ?6, (SELECT count(*) + 1 FROM tasks WHERE memo_key "
      "= ?2), ?4, ?5, CASE WHEN ?6 = 'running' THEN ?5 END, ?7)");
  if (!q) return std::unexpected(q.error());
  q->bind(1, toString(task.type))
      .bind(2, task.memoKey.hex())
      .bind(3, *descriptor)
      .bind(4, rawId(task.version))
      .bind(5, nowMs())
      .bind(6, task.running ? "running" : "queued")
      .bind(7, impl_->token);
  if (auto ok = q->run(); !ok) return std::unexpected(ok.error());
  TaskId id(impl_->db.lastInsertId());
  if (auto ok = impl_->seal(kTasksSeal, id.value()); !ok) return std::unexpected(ok.error());
  auto input = impl_->db.prepare(
      "INSERT INTO task_inputs(task_id, position, artifact_id) SELECT ?, ?, id FROM artifacts "
      "WHERE id = ?");
  if (!input) return std::unexpected(input.error());
  for (std::size_t i = 0; i < task.inputs.size(); ++i) {
    if (auto ok = input->bind(1, id.value())
                      .bind(2, static_cast<std::int64_t>(i))
                      .bind(3, task.inputs[i].value())
                      .run();
        !ok)
      return std::unexpected(ok.error());
  }
  // The INSERT ... SELECT inserts nothing for an unknown input; count to say which.
  auto count = impl_->db.prepare("SELECT count(*) FROM task_inputs WHERE task_id = ?");
  if (!count) return std::unexpected(count.error());
  auto row = count->bind(1, id.value()).step();
  if (!row) return std::unexpected(row.error());
  if (static_cast<std::size_t>(count->integer(0)) != task.inputs.size()) {
    for (ArtifactId in : task.inputs)
      if (auto a = impl_->loadArtifact(in); !a) return std::unexpected(a.error());
  }
  count->reset();
  for (std::size_t i = 0; i < task.inputs.size(); ++i)
    if (auto ok = impl_->seal(kTaskInputsSeal, id.value(), static_cast<std::int64_t>(i)); !ok)
      return std::unexpected(ok.error());
  if (auto ok = tx.commit(); !ok) return std::unexpected(ok.error());
  return id;
}

Result<void> Workspace::startTask(TaskId id) {
  std::lock_guard guard(impl_->mutex);
  if (auto ok = impl_->writable("start a task"); !ok) return ok;
  {
    sql::Transaction tx(impl_->db);
    if (auto ok = tx.begin(); !ok) return ok;
    auto q = impl_->db.prepare(
        "UPDATE tasks SET status = 'running', started_at = ? WHERE id = ? AND status = 'queued'");
    if (!q) return std::unexpected(q.error());
    if (auto ok = q->bind(1, nowMs()).bind(2, id.value()).run(); !ok) return ok;
    if (impl_->db.changes() == 1)
      if (auto ok = impl_->seal(kTasksSeal, id.value()); !ok) return ok;
    if (auto ok = tx.commit(); !ok) return ok;
  }
  auto t = impl_->loadTask(id);
  if (!t) return std::unexpected(t.error());
  if (t->status != TaskStatus::running)
    return fail("workspace", fmt::format("task {} is {}, not queued; it cannot be started again "
                                         "(create a new attempt with createTask)",
                                         id.text(), toString(t->status)));
  return {};
}

Result<void> Workspace::finishTask(const TaskResult& result) {
  return finishTasks(std::span<const TaskResult>(&result, 1));
}

Result<void> Workspace::finishTasks(std::span<const TaskResult> results) {
  for (const auto& r : results) {
    if (!isFinal(r.status))
      return fail("workspace", fmt::format("task {}: finish with a final status, not `{}`",
                                           r.task.text(), toString(r.status)));
    if (r.status != TaskStatus::succeeded && !r.outputs.empty())
      return fail("workspace", fmt::format("task {}: only a succeeded task publishes outputs "
                                           "(status is {}); publish its log instead",
                                           r.task.text(), toString(r.status)));
    for (const auto& o : r.outputs)
      if (o.kind.empty())
        return fail("workspace", fmt::format("task {}: an output has no kind", r.task.text()));
  }
  std::lock_guard guard(impl_->mutex);
  if (auto ok = impl_->writable("finish a task"); !ok) return ok;
  return impl_->finishLocked(results);
}

Result<void> Workspace::Impl::finishLocked(std::span<const TaskResult> results) {
  if (auto ok = lock(LOCK_SH); !ok) return ok;
  LockGuard unlockOnExit{this};
  // Blobs first (outside the transaction, so other writers are not held up by file I/O); the
  // shared lock keeps gc from deleting them before the rows below commit.
  std::vector<std::vector<BlobInfo>> outputBlobs(results.size());
  std::vector<std::optional<BlobInfo>> logBlobs(results.size());
  for (std::size_t i = 0; i < results.size(); ++i) {
    for (const auto& o : results[i].outputs) {
      auto blob = blobs.put(o.bytes);
      if (!blob) return std::unexpected(blob.error());
      outputBlobs[i].push_back(*blob);
    }
    if (results[i].log) {
      auto blob = blobs.put(*results[i].log);
      if (!blob) return std::unexpected(blob.error());
      logBlobs[i] = *blob;
    }
  }
  sql::Transaction tx(db);
  if (auto ok = tx.begin(); !ok) return ok;
  auto state = db.prepare("SELECT status, version_id FROM tasks WHERE id = ?");
  if (!state) return std::unexpected(state.error());
  for (std::size_t i = 0; i < results.size(); ++i) {
    const TaskResult& r = results[i];
    std::string status;
    std::optional<VersionId> taskVersion;
    {
      auto row = state->bind(1, r.task.value()).step();
      if (!row) return std::unexpected(row.error());
      if (!*row) return std::unexpected(notFound(fmt::format("task {}", r.task.text())));
      status = state->text(0);
      taskVersion = optionalId<VersionId>(*state, 1);
      state->reset();
    }
    if (status != "queued" && status != "running")
      return std::unexpected(error(fmt::format(
          "task {} already finished ({}); results are immutable, so create a new attempt with "
          "createTask to rerun it",
          r.task.text(), status)));
    for (std::size_t k = 0; k < r.outputs.size(); ++k) {
      const NewArtifact& o = r.outputs[k];
      auto version = o.version ? o.version : taskVersion;
      if (o.version)
        if (auto ok = requireVersion(o.version); !ok) return ok;
      auto a = insertArtifact(o, outputBlobs[i][k], version, r.task);
      if (!a) return std::unexpected(a.error());
    }
    std::optional<std::int64_t> logId;
    if (logBlobs[i]) {
      auto a = insertArtifact(NewArtifact{"log", "log.txt", "", taskVersion, ""}, *logBlobs[i],
                              taskVersion, r.task);
      if (!a) return std::unexpected(a.error());
      logId = a->id.value();
    }
    if (r.run) {
      auto run = db.prepare(
          "INSERT INTO runs(task_id, device, backend_config_json, environment_json, created_at) "
          "VALUES (?, ?, ?, ?, ?)");
      if (!run) return std::unexpected(run.error());
      if (auto ok = run->bind(1, r.task.value())
                        .bind(2, r.run->device)
                        .bind(3, r.run->backendConfigJson)
                        .bind(4, r.run->environmentJson)
                        .bind(5, nowMs())
                        .run();
          !ok)
        return ok;
      if (auto ok = seal(kRunsSeal, db.lastInsertId()); !ok) return ok;
    }
    auto update = db.prepare(
        "UPDATE tasks SET status = ?, ended_at = ?2, started_at = coalesce(started_at, ?2), "
        "error = ?, log_artifact_id = ? WHERE id = ?");
    if (!update) return std::unexpected(update.error());
    if (auto ok = update->bind(1, toString(r.status))
                      .bind(2, nowMs())
                      .bind(3, r.error)
                      .bind(4, logId)
                      .bind(5, r.task.value())
                      .run();
        !ok)
      return ok;
    if (auto ok = seal(kTasksSeal, r.task.value()); !ok) return ok;
  }
  return tx.commit();
}

Result<TaskRecord> Workspace::task(TaskId id) const {
  std::lock_guard guard(impl_->mutex);
  return impl_->loadTask(id);
}

Result<std::vector<TaskRecord>> Workspace::tasks() const {
  std::lock_guard guard(impl_->mutex);
  auto q = impl_->db.prepare("SELECT " ARGUS_TASK_COLUMNS ", " ARGUS_ARTIFACT_COLUMNS
                             " FROM tasks t LEFT JOIN artifacts a ON a.task_id = t.id AND a.id "
                             "IS NOT t.log_artifact_id ORDER BY t.id, a.id");
  if (!q) return std::unexpected(q.error());
  return impl_->collectTasks(*q);
}

Result<RunId> Workspace::recordRun(TaskId task, const NewRun& run) {
  std::lock_guard guard(impl_->mutex);
  if (auto ok = impl_->writable("record a run"); !ok) return std::unexpected(ok.error());
  sql::Transaction tx(impl_->db);
  if (auto ok = tx.begin(); !ok) return std::unexpected(ok.error());
  if (auto t = impl_->loadTask(task); !t) return std::unexpected(t.error());
  auto q = impl_->db.prepare(
      "INSERT INTO runs(task_id, device, backend_config_json, environment_json, created_at) "
      "VALUES (?, ?, ?, ?, ?)");
  if (!q) return std::unexpected(q.error());
  if (auto ok = q->bind(1, task.value())
                    .bind(2, run.device)
                    .bind(3, run.backendConfigJson)
                    .bind(4, run.environmentJson)
                    .bind(5, nowMs())
                    .run();
      !ok)
    return std::unexpected(ok.error());
  RunId id(impl_->db.lastInsertId());
  if (auto ok = impl_->seal(kRunsSeal, id.value()); !ok) return std::unexpected(ok.error());
  if (auto ok = tx.commit(); !ok) return std::unexpected(ok.error());
  return id;
}

namespace {
Result<RunRecord> runFrom(const sql::Statement& s, const fs::path& dbFile) {
  if (auto ok = checkRow(s, 0, kRunFields, "runs", fmt::format("run r{}", s.integer(0)), dbFile);
      !ok)
    return std::unexpected(ok.error());
  return RunRecord{RunId(s.integer(0)), TaskId(s.integer(1)), s.text(2), s.text(3),
                   s.text(4),           s.integer(5)};
}
}  // namespace

Result<RunRecord> Workspace::run(RunId id) const {
  std::lock_guard guard(impl_->mutex);
  auto q = impl_->db.prepare("SELECT " ARGUS_RUN_COLUMNS " FROM runs WHERE id = ?");
  if (!q) return std::unexpected(q.error());
  auto row = q->bind(1, id.value()).step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::unexpected(impl_->notFound(fmt::format("run {}", id.text())));
  return runFrom(*q, impl_->dbFile);
}

Result<std::vector<RunRecord>> Workspace::runsOf(TaskId task) const {
  std::lock_guard guard(impl_->mutex);
  auto q =
      impl_->db.prepare("SELECT " ARGUS_RUN_COLUMNS " FROM runs WHERE task_id = ? ORDER BY id");
  if (!q) return std::unexpected(q.error());
  q->bind(1, task.value());
  std::vector<RunRecord> out;
  for (;;) {
    auto row = q->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto r = runFrom(*q, impl_->dbFile);
    if (!r) return std::unexpected(r.error());
    out.push_back(std::move(*r));
  }
  return out;
}

// --- Maintenance --------------------------------------------------------------------------

Result<RecoveryReport> Workspace::Impl::recoverLocked(bool repair) {
  RecoveryReport report;
  // Owners: a lease that can be locked belongs to a dead process. Dead leases stay locked by us
  // until their tasks are marked, so two recovering processes never both act on one.
  std::set<std::string> live;
  std::map<std::string, int> dead;  // token -> fd holding its lock
  std::vector<fs::path> folders;
  std::error_code ec;
  const fs::path owners = ownersDir();
  for (fs::directory_iterator it(owners, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path path = it->path();
    const std::string name = path.filename().string();
    std::error_code typeEc;
    if (it->is_directory(typeEc)) {
      folders.push_back(path);
      continue;
    }
    const bool pending = name.ends_with(".lock.new");
    if (!pending && !name.ends_with(".lock")) continue;
    const std::string owner = name.substr(0, name.size() - (pending ? 9 : 5));
    if (owner == token) continue;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // its owner just closed the workspace
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      if (!pending) live.insert(owner);
      continue;
    }
    if (pending) {
      // Made by a process between creating and locking it, or killed there: only an old one is
      // stale.
      std::error_code timeEc;
      auto age = fs::file_time_type::clock::now() - fs::last_write_time(path, timeEc);
      if (!timeEc && age > std::chrono::minutes(1)) {
        report.staleFolders.push_back(path);
        if (repair && ::unlink(path.c_str()) == 0) ++report.foldersRemoved;
      }
      ::close(fd);
      continue;
    }
    dead.emplace(owner, fd);
  }
  if (!token.empty()) live.insert(token);
  const bool othersLive = live.size() > (token.empty() ? 0u : 1u);

  auto q =
      db.prepare("SELECT id, owner FROM tasks WHERE status IN ('queued', 'running') ORDER BY id");
  if (!q) return std::unexpected(q.error());
  std::vector<std::pair<std::int64_t, std::string>> stale;
  for (;;) {
    auto row = q->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    std::string owner = q->text(1);
    if (live.contains(owner)) continue;
    if (owner.empty() && othersLive) {
      ++report.tasksOfUnknownOwner;
      continue;
    }
    stale.emplace_back(q->integer(0), std::move(owner));
  }
  q->reset();
  for (const auto& [id, owner] : stale)
    report.staleTasks.push_back(fmt::format("{} (owner {}, gone)", TaskId(id).text(),
                                            owner.empty() ? "unrecorded" : owner));
  if (repair && !stale.empty()) {
    if (auto ok = writable("recover stale tasks"); !ok) return std::unexpected(ok.error());
    sql::Transaction tx(db);
    if (auto ok = tx.begin(); !ok) return std::unexpected(ok.error());
    auto mark = db.prepare(
        "UPDATE tasks SET status = 'failed', ended_at = ?, started_at = coalesce(started_at, ?1), "
        "error = ? WHERE id = ? AND status IN ('queued', 'running')");
    if (!mark) return std::unexpected(mark.error());
    for (const auto& [id, owner] : stale) {
      const std::string why =
          owner.empty() ? std::string(
                              "abandoned: the argus process that ran it ended without finishing it "
                              "(killed?); rerun the query to run it again")
                        : fmt::format(
                              "abandoned: the argus process that ran it (owner {}, pid {}) ended "
                              "without finishing it (killed?); rerun the query to run it again",
                              owner, owner.substr(0, owner.find('-')));
      if (auto ok = mark->bind(1, nowMs()).bind(2, why).bind(3, id).run(); !ok)
        return std::unexpected(ok.error());
      if (db.changes() == 1) {
        if (auto ok = seal(kTasksSeal, id); !ok) return std::unexpected(ok.error());
        ++report.tasksAbandoned;
      }
    }
    if (auto ok = tx.commit(); !ok) return std::unexpected(ok.error());
  }
  // Scratch folders of owners that are not live (dead, or whose lease is already gone).
  for (const auto& folder : folders) {
    const std::string owner = folder.filename().string();
    if (live.contains(owner)) continue;
    if (!dead.contains(owner)) {
      // Its lease may have appeared after the listing passed it (a process starting now).
      int fd = ::open((owners / (owner + ".lock")).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
        ::close(fd);
        if (held) continue;
      }
    }
    report.staleFolders.push_back(folder);
    if (!repair) continue;
    std::error_code removeEc;
    fs::remove_all(folder, removeEc);
    if (!removeEc) ++report.foldersRemoved;
  }
  for (const auto& [owner, fd] : dead) {
    const fs::path lease = owners / (owner + ".lock");
    report.staleFolders.push_back(lease);
    if (repair && ::unlink(lease.c_str()) == 0) ++report.foldersRemoved;
    ::close(fd);
  }
  return report;
}

Result<RecoveryReport> Workspace::recover(bool repair) {
  std::lock_guard guard(impl_->mutex);
  return impl_->recoverLocked(repair);
}

Result<std::uint64_t> Workspace::removeStrayTempFiles() {
  std::lock_guard guard(impl_->mutex);
  if (auto ok = impl_->writable("remove temp files"); !ok) return std::unexpected(ok.error());
  if (auto ok = impl_->lock(LOCK_EX); !ok) return std::unexpected(ok.error());
  Impl::LockGuard unlock{impl_.get()};
  auto temps = impl_->blobs.tempFiles();
  if (!temps) return std::unexpected(temps.error());
  std::uint64_t removed = 0;
  for (const auto& path : *temps) {
    std::error_code ec;
    if (fs::remove(path, ec)) ++removed;
  }
  return removed;
}

Result<VerifyReport> Workspace::verify() const {
  std::lock_guard guard(impl_->mutex);
  VerifyReport report;
  auto check = impl_->db.prepare("PRAGMA integrity_check");
  if (!check) return std::unexpected(check.error());
  for (;;) {
    auto row = check->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    if (check->text(0) != "ok")
      report.problems.push_back(fmt::format("{}: {}", impl_->dbFile.string(), check->text(0)));
  }
  auto fk = impl_->db.prepare("PRAGMA foreign_key_check");
  if (!fk) return std::unexpected(fk.error());
  for (;;) {
    auto row = fk->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    report.problems.push_back(fmt::format("{}: row {} of table {} names a missing {} row",
                                          impl_->dbFile.string(), fk->integer(1), fk->text(0),
                                          fk->text(2)));
  }
  // Every row against its checksum, and every version's file names.
  for (const TableSeal* t : kSealedTables) {
    auto rows = impl_->db.prepare(t->scan);
    if (!rows) return std::unexpected(rows.error());
    for (;;) {
      auto row = rows->step();
      if (!row) return std::unexpected(row.error());
      if (!*row) break;
      ++report.rowsChecked;
      const std::string object =
          t->keys == 1 ? fmt::format("{} row {}", t->table, rows->integer(0))
                       : fmt::format("{} row ({}, {})", t->table, rows->integer(0), rows->text(1));
      if (auto ok = checkRow(*rows, 0, t->fields, t->table, object, impl_->dbFile); !ok)
        report.problems.push_back(ok.error().message);
      if (t == &kVersionFilesSeal)
        if (auto ok = checkVersionFileName(rows->text(1)); !ok)
          report.problems.push_back(fmt::format("{}: version v{}: {}", impl_->dbFile.string(),
                                                rows->integer(0), ok.error().message));
    }
  }
  auto blobs = impl_->db.prepare(
      "SELECT hash, compression, size, count(*), min(id), location FROM artifacts GROUP BY hash, "
      "compression, size, location");
  if (!blobs) return std::unexpected(blobs.error());
  std::unordered_set<std::string> seen;
  for (;;) {
    auto row = blobs->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    report.artifactsChecked += static_cast<std::uint64_t>(blobs->integer(3));
    ++report.blobsChecked;
    auto hash = ContentHash::fromHex(blobs->text(0));
    if (!hash) {
      report.problems.push_back(
          fmt::format("artifact a{} has a malformed hash `{}`", blobs->integer(4), blobs->text(0)));
      continue;
    }
    auto bytes =
        impl_->readBlob(*hash, enumFrom<Compression>(kCompressions, blobs->text(1)),
                        static_cast<std::uint64_t>(blobs->integer(2)), blobs->text(5) == "inline");
    if (!bytes)
      report.problems.push_back(fmt::format("{} (artifact a{} and {} more use it)",
                                            bytes.error().message, blobs->integer(4),
                                            blobs->integer(3) - 1));
  }
  std::vector<fs::path> unknown;
  if (auto files = impl_->blobs.scan(&unknown); !files) return std::unexpected(files.error());
  for (const auto& path : unknown)
    report.problems.push_back(fmt::format(
        "{} is not a blob name; a file under blobs/ was not written by argus", path.string()));
  auto temps = impl_->blobs.tempFiles();
  if (!temps) return std::unexpected(temps.error());
  report.strayTempFiles = temps->size();
  return report;
}

Result<GcReport> Workspace::gc() {
  std::lock_guard guard(impl_->mutex);
  if (auto ok = impl_->writable("collect garbage"); !ok) return std::unexpected(ok.error());
  if (auto ok = impl_->lock(LOCK_EX); !ok) return std::unexpected(ok.error());
  Impl::LockGuard unlock{impl_.get()};
  GcReport report;
  std::unordered_set<std::string> referenced;
  {
    auto q = impl_->db.prepare(
        "SELECT DISTINCT hash, compression FROM artifacts WHERE location = 'file'");
    if (!q) return std::unexpected(q.error());
    for (;;) {
      auto row = q->step();
      if (!row) return std::unexpected(row.error());
      if (!*row) break;
      referenced.insert(q->text(0) + (q->text(1) == "zstd" ? ".zst" : ""));
    }
  }
  auto files = impl_->blobs.scan();
  if (!files) return std::unexpected(files.error());
  for (const auto& f : *files) {
    if (referenced.contains(f.path.filename().string())) {
      ++report.blobsKept;
      continue;
    }
    std::error_code ec;
    if (fs::remove(f.path, ec)) {
      ++report.blobsRemoved;
      report.bytesFreed += f.storedSize;
    }
  }
  {
    sql::Transaction tx(impl_->db);
    if (auto ok = tx.begin(); !ok) return std::unexpected(ok.error());
    auto unused = impl_->db.prepare(
        "SELECT count(*), total(length(data)) FROM inline_blobs WHERE hash NOT IN (SELECT hash "
        "FROM artifacts WHERE location = 'inline')");
    if (!unused) return std::unexpected(unused.error());
    if (auto row = unused->step(); !row) return std::unexpected(row.error());
    report.blobsRemoved += static_cast<std::uint64_t>(unused->integer(0));
    report.bytesFreed += static_cast<std::uint64_t>(unused->integer(1));
    unused->reset();
    if (auto ok = impl_->db.exec("DELETE FROM inline_blobs WHERE hash NOT IN (SELECT hash FROM "
                                 "artifacts WHERE location = 'inline')");
        !ok)
      return std::unexpected(ok.error());
    auto kept = impl_->db.prepare("SELECT count(*) FROM inline_blobs");
    if (!kept) return std::unexpected(kept.error());
    if (auto row = kept->step(); !row) return std::unexpected(row.error());
    report.blobsKept += static_cast<std::uint64_t>(kept->integer(0));
    kept->reset();
    if (auto ok = tx.commit(); !ok) return std::unexpected(ok.error());
  }
  // Holding the exclusive lock means no writer is between creating a temp file and renaming it,
  // so every temp file left belongs to a process that died.
  auto temps = impl_->blobs.tempFiles();
  if (!temps) return std::unexpected(temps.error());
  for (const auto& path : *temps) {
    std::error_code ec;
    auto size = fs::file_size(path, ec);
    if (fs::remove(path, ec)) {
      ++report.tempFilesRemoved;
      report.bytesFreed += ec ? 0 : size;
    }
  }
  return report;
}

Result<WorkspaceStats> Workspace::stats() const {
  std::lock_guard guard(impl_->mutex);
  WorkspaceStats s;
  auto count = [&](const char* sqlText) -> Result<std::int64_t> {
    auto q = impl_->db.prepare(sqlText);
    if (!q) return std::unexpected(q.error());
    auto row = q->step();
    if (!row) return std::unexpected(row.error());
    return q->integer(0);
  };
  auto versions = count("SELECT count(*) FROM versions");
  if (!versions) return std::unexpected(versions.error());
  auto tasks = count("SELECT count(*) FROM tasks");
  if (!tasks) return std::unexpected(tasks.error());
  s.versions = static_cast<std::uint64_t>(*versions);
  s.tasks = static_cast<std::uint64_t>(*tasks);
  auto q = impl_->db.prepare(
      "SELECT kind, count(*), total(size) FROM artifacts GROUP BY kind ORDER BY kind");
  if (!q) return std::unexpected(q.error());
  for (;;) {
    auto row = q->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    WorkspaceStats::KindCount k{q->text(0), static_cast<std::uint64_t>(q->integer(1)),
                                static_cast<std::uint64_t>(q->integer(2))};
    s.artifacts += k.count;
    s.artifactBytes += k.bytes;
    s.byKind.push_back(std::move(k));
  }
  auto files = impl_->blobs.scan();
  if (!files) return std::unexpected(files.error());
  s.blobs = files->size();
  for (const auto& f : *files) s.blobBytes += f.storedSize;
  auto inlined = impl_->db.prepare("SELECT count(*), total(length(data)) FROM inline_blobs");
  if (!inlined) return std::unexpected(inlined.error());
  if (auto row = inlined->step(); !row) return std::unexpected(row.error());
  s.blobs += static_cast<std::uint64_t>(inlined->integer(0));
  s.blobBytes += static_cast<std::uint64_t>(inlined->integer(1));
  return s;
}

}  // namespace argus::workspace
