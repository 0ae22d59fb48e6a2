// The SQLite schema truffld-export writes (truffld.sqlite/1): tables, views and indexes.
//
// Why one place: the DDL is the documentation users read through `.schema` in sqlite3 (each
// column carries its comment), the writer's INSERTs follow it, and the stats queries and tests
// name its columns. docs/sqlite.md lists the same tables for readers of the README.
// Thread-safety: constants only.
#pragma once

#include <cstdint>
#include <string>

namespace truffld::rundb {

inline constexpr const char* kSqliteSchemaVersion = "truffld.sqlite/1";
// The database header's application id (bytes 68-71, big-endian; `PRAGMA application_id`),
// 'trfl': how truffld-merge tells its own run database from an Nsight Systems export when a
// directory of inputs holds one.
inline constexpr uint32_t kSqliteApplicationId = 0x7472666C;

// CREATE TABLE / VIEW statements, run before the rows are inserted.
extern const char* const kCreateTables;
// The tables the trees fill, each with its CREATE INDEX statements ("" for none), run after the
// table's rows are inserted: one sorted build per index costs less than keeping the index during
// millions of inserts, even for step_id whose keys arrive in order (10 M events: about 2.3 s CPU
// to build the step_id indexes afterwards, 4.5 s more for the inserts with them). strings' unique
// index on text is among them.
struct TableIndexes {
  const char* table;
  const char* sql;
};
inline constexpr int kTreeTableCount = 9;
extern const TableIndexes kTreeTables[kTreeTableCount];
// Every index of kTreeTables, as one script.
std::string TreeIndexSql();
// The indexes of the diagnosis tables (verdicts, faulty_ops), run after they are filled.
extern const char* const kCreateDiagnosisIndexes;

}  // namespace truffld::rundb
