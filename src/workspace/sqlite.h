// A thin RAII layer over the SQLite C API for the workspace: cached prepared statements,
// immediate transactions and errors that name the database file.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "argus/support/status.h"

namespace argus::workspace::sql {

class Database;

/// A prepared statement in use; reset (and unbound) when it goes out of scope.
class Statement {
 public:
  Statement(Database& db, sqlite3_stmt* stmt) : db_(&db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept
      : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& operator=(Statement&&) = delete;
  ~Statement() {
    if (stmt_ == nullptr) return;
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  Statement& bind(int index, std::int64_t value) {
    sqlite3_bind_int64(stmt_, index, value);
    return *this;
  }
  Statement& bind(int index, std::string_view value) {
    sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  /// Binds bytes as a BLOB (not text: blob contents need not be UTF-8).
  Statement& bindBlob(int index, std::string_view value) {
    sqlite3_bind_blob64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int index, std::optional<std::int64_t> value) {
    if (value) return bind(index, *value);
    sqlite3_bind_null(stmt_, index);
    return *this;
  }

  /// Makes the statement ready to be bound and run again (bindings are kept).
  void reset() { sqlite3_reset(stmt_); }
  /// Advances: true when a row is available, false when done.
  [[nodiscard]] Result<bool> step();
  /// Runs a statement that returns no rows.
  [[nodiscard]] Result<void> run();

  /// SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB or SQLITE_NULL.
  [[nodiscard]] int type(int column) const { return sqlite3_column_type(stmt_, column); }
  [[nodiscard]] double real(int column) const { return sqlite3_column_double(stmt_, column); }
  [[nodiscard]] bool isNull(int column) const {
    return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
  }
  [[nodiscard]] std::int64_t integer(int column) const {
    return sqlite3_column_int64(stmt_, column);
  }
  [[nodiscard]] std::optional<std::int64_t> optionalInteger(int column) const {
    if (isNull(column)) return std::nullopt;
    return integer(column);
  }
  [[nodiscard]] std::string text(int column) const {
    if (sqlite3_column_type(stmt_, column) == SQLITE_BLOB) {
      const auto* blob = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
      return std::string(blob, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
    }
    const auto* data = sqlite3_column_text(stmt_, column);
    if (data == nullptr) return {};
    return std::string(reinterpret_cast<const char*>(data),
                       static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
  }

 private:
  Database* db_;
  sqlite3_stmt* stmt_;
};

/// How a connection may use its file.
enum class OpenMode {
  readWrite,  ///< The file must exist.
  create,     ///< Created when missing.
  readOnly,   ///< SQLite `mode=ro`: reads only, still sees other processes' commits.
  immutable,  ///< `mode=ro&immutable=1`: no locks or -shm at all, for a directory that cannot
              ///< be written (nobody else can be changing it either).
};

/// One connection. Not thread-safe by itself; the Workspace serializes access.
class Database {
 public:
  Database() = default;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  /// Opens the database file in `mode` with the busy timeout set.
  [[nodiscard]] Result<void> open(const std::filesystem::path& file, OpenMode mode,
                                  int busyTimeoutMs);
  /// Runs one or more statements without results.
  [[nodiscard]] Result<void> exec(std::string_view sql);
  /// A cached prepared statement.
  [[nodiscard]] Result<Statement> prepare(const char* sql);
  [[nodiscard]] std::int64_t lastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  /// Rows the last INSERT, UPDATE or DELETE changed.
  [[nodiscard]] std::int64_t changes() const { return sqlite3_changes64(db_); }

  /// The Error for SQLite result code `rc` while doing `what`.
  [[nodiscard]] Error error(int rc, std::string_view what) const;
  [[nodiscard]] const std::filesystem::path& file() const { return file_; }

 private:
  sqlite3* db_ = nullptr;
  std::filesystem::path file_;
  int busyTimeoutMs_ = 0;
  std::map<const char*, sqlite3_stmt*> cache_;  // keyed by the literal's address
};

/// BEGIN IMMEDIATE ... COMMIT; rolls back unless committed. Immediate so that two writers
/// never deadlock upgrading read locks (which SQLite reports as SQLITE_BUSY without waiting).
class Transaction {
 public:
  explicit Transaction(Database& db) : db_(db) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  [[nodiscard]] Result<void> begin();
  [[nodiscard]] Result<void> commit();

 private:
  Database& db_;
  bool open_ = false;
};

}  // namespace argus::workspace::sql
