// BulkInsert: the rows of one table written kRows at a time by one multi-row INSERT
// ("INSERT INTO t VALUES (?,..),(?,..),...").
//
// Why: a bulk export inserts millions of short rows; one sqlite3_step per row pays the
// statement's start and end (cursors opened and closed, the VDBE reset) for every row. A
// statement of kRows rows pays them once per kRows rows (the perf profile of a 10 M-event export:
// the inserting thread is the export's bottleneck). The caller adds a row's values in column
// order then ends the row; values are kept (texts copied) until the full statement runs, and
// Flush() writes what is left, one single-row statement per row. The multi-row statement's
// parameters keep their values from one run to the next (sqlite3_reset leaves bindings alone):
// an integer or NULL equal to what its parameter already holds is not bound again (NULL
// columns, devices, streams, launch dimensions and step ids repeat from row to row).
// Thread-safety: one BulkInsert belongs to one thread, with its database.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sqlite_db.h"

namespace truffld::rundb {

class BulkInsert {
 public:
  static constexpr int kRows = 64;
  BulkInsert() = default;
  // Prepares the INSERTs into `table`, which has `columns` columns (kIoError when it cannot).
  static Result<BulkInsert> Create(SqliteDb* db, const std::string& table, int columns);

  void Int(int64_t v) { values_[used_++] = Value{Value::kInt, v, 0}; }
  void Int(const std::optional<int64_t>& v) { v ? Int(*v) : Null(); }
  void Null() { values_[used_++] = Value{Value::kNull, 0, 0}; }
  // Copies `v`; an empty text is NULL.
  void Text(std::string_view v) { v.empty() ? Null() : TextKeepEmpty(v); }
  // Copies `v`; an empty text stays an empty TEXT.
  void TextKeepEmpty(std::string_view v);
  // Ends a row of exactly `columns` values (kInternal when it had another count); runs the statement when kRows rows are waiting.
  Status EndRow();
  // Writes the rows still waiting.
  Status Flush();
  // False for a default-constructed BulkInsert (a table this sink does not write).
  bool active() const { return columns_ > 0; }

 private:
  struct Value {
    enum Type : uint8_t { kNull, kInt, kText } type;
    int64_t v;    // the integer, or the text's offset in texts_
    uint32_t n;   // the text's length
  };
  // Binds the row at values_[first_value] to parameters first_param...; `held` (or nullptr: bind
  // every value) is what those parameters hold, updated.
  void BindRow(SqliteStmt* s, size_t first_value, int first_param, Value* held) const;
  SqliteStmt many_, one_;
  std::vector<Value> held_;    // what many_'s parameters hold; a kText is always bound again
  std::string table_;
  int columns_ = 0, rows_ = 0;
  std::vector<Value> values_;  // kRows rows of columns_ values, the first used_ set
  size_t used_ = 0;
  std::string texts_;
};

}  // namespace truffld::rundb
