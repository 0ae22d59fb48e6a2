// SqliteDb / SqliteStmt: every sqlite3_* call of truffld-export (see sqlite_db.h).
#include "sqlite_db.h"

#include <sqlite3.h>

#include <utility>

namespace truffld::rundb {

SqliteStmt::SqliteStmt(SqliteStmt&& o) noexcept : s_(std::exchange(o.s_, nullptr)), where_(std::move(o.where_)) {}

SqliteStmt& SqliteStmt::operator=(SqliteStmt&& o) noexcept {
  if (this != &o) {
    sqlite3_finalize(s_);
    s_ = std::exchange(o.s_, nullptr);
    where_ = std::move(o.where_);
  }
  return *this;
}

SqliteStmt::~SqliteStmt() { sqlite3_finalize(s_); }

void SqliteStmt::Bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
void SqliteStmt::BindDouble(int i, double v) { sqlite3_bind_double(s_, i, v); }
void SqliteStmt::Bind(int i, std::string_view v) {
  sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
}
void SqliteStmt::BindNull(int i) { sqlite3_bind_null(s_, i); }

Status SqliteStmt::Run() {
  const int rc = sqlite3_step(s_);
  Status st;
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    st = IoError(where_ + ": SQLite: " + sqlite3_errmsg(sqlite3_db_handle(s_)) + " in: " + sqlite3_sql(s_));
  }
  sqlite3_reset(s_);
  return st;
}

bool SqliteStmt::Next(Status* status) {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) {
    *status = IoError(where_ + ": SQLite: " + sqlite3_errmsg(sqlite3_db_handle(s_)) + " in: " + sqlite3_sql(s_));
  }
  return false;
}

void SqliteStmt::Reset() { sqlite3_reset(s_); }
bool SqliteStmt::IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
int64_t SqliteStmt::Int(int col) const { return sqlite3_column_int64(s_, col); }
double SqliteStmt::Double(int col) const { return sqlite3_column_double(s_, col); }
int SqliteStmt::columns() const { return sqlite3_column_count(s_); }

std::string SqliteStmt::Text(int col) const {
  const unsigned char* t = sqlite3_column_text(s_, col);
  if (!t) return {};
  return {reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s_, col))};
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path, Mode mode) {
  // Memory statistics take a global mutex on every allocation; truffld reads none.
  static const bool configured = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK;
  (void)configured;
  const int flags = SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX |
                    (mode == Mode::kCreate      ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                     : mode == Mode::kReadWrite ? SQLITE_OPEN_READWRITE
                                                : SQLITE_OPEN_READONLY);
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = path + ": cannot open as SQLite: " + (raw ? sqlite3_errmsg(raw) : "out of memory");
    sqlite3_close(raw);
    return IoError(std::move(msg));
  }
  return std::unique_ptr<SqliteDb>(new SqliteDb(raw, path));
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

Status SqliteDb::Exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = path_ + ": SQLite: " + (err ? err : sqlite3_errmsg(db_));
    sqlite3_free(err);
    return IoError(std::move(msg));
  }
  return Status::Ok();
}

Result<SqliteStmt> SqliteDb::Prepare(const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    // The statement's start names it; the whole of a summary query would bury the reason.
    std::string head = sql.substr(sql.find_first_not_of(" \n"), 60);
    for (char& c : head) c = c == '\n' ? ' ' : c;
    std::string msg = path_ + ": SQLite cannot prepare: " + sqlite3_errmsg(db_) + " (in: " + head + "...)";
    sqlite3_finalize(s);
    return IoError(std::move(msg));
  }
  return SqliteStmt(s, path_);
}

}  // namespace truffld::rundb
