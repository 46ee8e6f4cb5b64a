#include "sqlite.h"

#include <fmt/format.h>

namespace argus::workspace::sql {

Result<bool> Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(stmt_);
  return std::unexpected(db_->error(rc, sqlite3_sql(stmt_)));
}

Result<void> Statement::run() {
  for (;;) {
    auto row = step();
    if (!row) return std::unexpected(row.error());
    if (!*row) {
      reset();
      return {};
    }
  }
}

Database::~Database() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Result<void> Database::open(const std::filesystem::path& file, OpenMode mode, int busyTimeoutMs) {
  file_ = file;
  busyTimeoutMs_ = busyTimeoutMs;
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
  // A URI, so that read-only opens can say mode=ro / immutable=1; the path is percent-encoded
  // where a URI would read it otherwise.
  std::string uri = "file:";
  for (char c : file.string()) {
    if (c == '%' || c == '?' || c == '#')
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else
      uri += c;
  }
  switch (mode) {
    case OpenMode::readWrite:
      flags |= SQLITE_OPEN_READWRITE;
      break;
    case OpenMode::create:
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
      break;
    case OpenMode::readOnly:
      flags |= SQLITE_OPEN_READONLY;
      uri += "?mode=ro";
      break;
    case OpenMode::immutable:
      flags |= SQLITE_OPEN_READONLY;
      uri += "?mode=ro&immutable=1";
      break;
  }
  int rc = sqlite3_open_v2(uri.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) return std::unexpected(error(rc, "opening the database"));
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, busyTimeoutMs);
  return {};
}

Result<void> Database::exec(std::string_view sql) {
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return std::unexpected(error(rc, text));
  return {};
}

Result<Statement> Database::prepare(const char* sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return std::unexpected(error(rc, sql));
    it = cache_.emplace(sql, stmt).first;
  }
  return Statement(*this, it->second);
}

Error Database::error(int rc, std::string_view what) const {
  int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
    return Error{"workspace",
                 fmt::format("{} is locked by another process for more than {} s; wait for the "
                             "other argus to finish (or stop it) and try again",
                             file_.string(), busyTimeoutMs_ / 1000)};
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
    return Error{"workspace", fmt::format("{} is damaged or not an Argus database ({}); restore "
                                          "it from a backup, or move it away (its history is "
                                          "lost) and rerun to start a new workspace",
                                          file_.string(), sqlite3_errstr(rc))};
  if (primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY || primary == SQLITE_PERM ||
      primary == SQLITE_IOERR || primary == SQLITE_FULL)
    return Error{"workspace", fmt::format("{}: {}; check that the directory exists, is writable "
                                          "and its disk is not full",
                                          file_.string(), sqlite3_errstr(rc))};
  std::string detail = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  std::string shortWhat(what.substr(0, 120));
  return Error{"workspace",
               fmt::format("{}: {} (while running `{}`)", file_.string(), detail, shortWhat)};
}

Transaction::~Transaction() {
  if (open_) (void)db_.exec("ROLLBACK");
}

Result<void> Transaction::begin() {
  if (auto ok = db_.exec("BEGIN IMMEDIATE"); !ok) return ok;
  open_ = true;
  return {};
}

Result<void> Transaction::commit() {
  if (auto ok = db_.exec("COMMIT"); !ok) return ok;
  open_ = false;
  return {};
}

}  // namespace argus::workspace::sql
