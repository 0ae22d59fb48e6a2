// The run database's `run` table (what was read and every problem met) and the connection
// settings of a bulk load; shared by truffld-export and truffld-merge --sqlite, so both write
// the same keys.
// Thread-safety: one call per database connection.
#pragma once

#include <string>
#include <vector>

#include "row_builder.h"
#include "sqlite_db.h"

namespace truffld::rundb {

// Fast bulk load: the file is private until renamed, so a crash loses only the temporary file.
inline constexpr const char* kBulkPragmas =
    "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
    "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-262144; PRAGMA threads=2;";

struct RunTableInfo {
  std::string truffld_version, trees_path, summary_path, diagnosis_path;
  TreeRowCounts trees;
  uint64_t bad_diagnosis_lines = 0;
  std::vector<std::string> problems;  // after the trees' own, "file[:line]: problem"
  std::string summary_json;           // summary.json's text ("" when there is none)
};

// Inserts one row per key (schema, truffld_version, trees_path, ... summary_json) into `run`.
Status WriteRunTable(SqliteDb* db, const RunTableInfo& info);

}  // namespace truffld::rundb
