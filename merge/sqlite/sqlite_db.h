// SqliteDb / SqliteStmt: the thin adapter truffld-export and its summaries use for SQLite.
//
// Why: the export writes millions of rows and the summaries read them back; keeping every
// sqlite3_* call here leaves the row building and the statistics free of the C API, and gives
// one place for the error wording ("FILE: SQLite: message"). Only what truffld needs: open
// (create, read-only), run a script, prepared statements with typed binds and columns,
// transactions. Open never follows a symbolic link (SQLITE_OPEN_NOFOLLOW). Connections are opened
// without SQLite's per-connection mutex (SQLITE_OPEN_NOMUTEX) and memory statistics are off.
// Thread-safety: one SqliteDb and its statements belong to one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "truffld/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace truffld::rundb {

class SqliteStmt {
 public:
  SqliteStmt() = default;
  SqliteStmt(SqliteStmt&& o) noexcept;
  SqliteStmt& operator=(SqliteStmt&& o) noexcept;
  SqliteStmt(const SqliteStmt&) = delete;
  SqliteStmt& operator=(const SqliteStmt&) = delete;
  ~SqliteStmt();

  // Binds parameter `i` (1-based). Text is NOT copied: it must stay valid until Run/Next/Reset
  // (every caller binds and runs at once).
  void Bind(int i, int64_t v);
  void BindDouble(int i, double v);
  void Bind(int i, std::string_view v);
  void BindNull(int i);
  void Bind(int i, const std::optional<int64_t>& v) { v ? Bind(i, *v) : BindNull(i); }
  // Runs a statement that returns no rows, then resets it for the next binds.
  Status Run();
  // Steps once: true with a row, false when done (check `status` for an error).
  bool Next(Status* status);
  void Reset();

  bool IsNull(int col) const;
  int64_t Int(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  int columns() const;

 private:
  friend class SqliteDb;
  SqliteStmt(sqlite3_stmt* s, std::string where) : s_(s), where_(std::move(where)) {}
  sqlite3_stmt* s_ = nullptr;
  std::string where_;  // the database path, for messages
};

class SqliteDb {
 public:
  enum class Mode { kCreate, kReadWrite, kReadOnly };
  // Opens `path` (kCreate: read-write, created when absent; kReadWrite: an existing file).
  // kIoError naming the path.
  static Result<std::unique_ptr<SqliteDb>> Open(const std::string& path, Mode mode);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Runs one or more statements separated by ';' (no rows returned).
  Status Exec(const std::string& sql);
  Result<SqliteStmt> Prepare(const std::string& sql);
  const std::string& path() const { return path_; }

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

}  // namespace truffld::rundb
