// The SQLite schema truffld-export writes (truffld.sqlite/1): tables, views and indexes.
//
// Why one place: the DDL is the documentation users read through `.schema` in sqlite3 (each
// column carries its comment), the writer's INSERTs follow it, and the stats queries and tests
// name its columns. docs/sqlite.md lists the same tables for readers of the README.
// Thread-safety: constants only.
#pragma once

namespace truffld::exporter {

inline constexpr const char* kSqliteSchemaVersion = "truffld.sqlite/1";

// CREATE TABLE / VIEW statements, run before the rows are inserted.
extern const char* const kCreateTables;
// Indexes on step_id, created with the tables: rows arrive step by step, so their keys are
// appended in order and maintaining them costs less than sorting afterwards.
extern const char* const kCreateStepIndexes;
// The other CREATE INDEX statements, run after the rows are inserted (their keys arrive in no
// order: sorting once is cheaper than maintaining them).
extern const char* const kCreateIndexes;

}  // namespace truffld::exporter
