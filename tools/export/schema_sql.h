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
// Indexes on step_id, then the other CREATE INDEX statements (strings' unique text among them),
// both run after the rows are inserted: one sorted build per index costs less than keeping the
// index during millions of inserts, even for step_id whose keys arrive in order (10 M events:
// about 2.3 s CPU to build the step_id indexes afterwards, 4.5 s more for the inserts with them).
extern const char* const kCreateStepIndexes;
extern const char* const kCreateIndexes;

}  // namespace truffld::exporter
