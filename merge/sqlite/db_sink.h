// DbSink: the RowSink that inserts RowBuilder's rows into the run database through multi-row
// INSERT statements (BulkInsert: one per table, reused) inside the caller's transaction; rows
// reach the database in groups, so call Flush() before reading the tables or committing. Names and
// families are interned: each distinct text is one `strings` row and the *_rows tables hold its
// id (a kernel name is often hundreds of bytes, repeated on every launch). A sink may write only
// some tables (TableWriter: one group of tables per thread and file); rows of the others are
// dropped, and then every name must come interned (RowBatch), since `strings` may be elsewhere.
// Thread-safety: one DbSink per thread, with its database.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bulk_insert.h"
#include "sqlite_db.h"
#include "row_builder.h"

namespace truffld::rundb {

class DbSink : public RowSink {
 public:
  // Prepares the INSERTs into `tables` (names of kTreeTables; empty: all of them); the tables
  // must exist (kCreateTables).
  static Result<std::unique_ptr<DbSink>> Create(SqliteDb* db, const std::vector<std::string>& tables = {});

  Status Step(const StepRow& r) override;
  Status Request(int64_t step_id, std::string_view request_id, int64_t position) override;
  Status Op(const OpRow& r) override;
  Status Call(const CallRow& r) override;
  Status Device(const DeviceRow& r) override;
  Status Collective(const CollectiveRow& r) override;
  Status String(int64_t id, std::string_view text) override;
  // Writes every row still waiting in a multi-row statement.
  Status Flush();

 private:
  DbSink() = default;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Adds `id` when the row came interned (> 0), else the id of `text` (inserting it into
  // `strings` when new); NULL for neither.
  Status AddString(BulkInsert* s, std::string_view text, int64_t id);
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> ids_;
  BulkInsert string_, step_, request_, op_, call_, kernel_, copy_, sync_, collective_;
};

// Binds a string_view as TEXT, an empty one as NULL.
void BindText(SqliteStmt* s, int i, std::string_view v);

}  // namespace truffld::rundb
