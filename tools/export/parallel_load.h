// LoadTreesInParallel: trees.jsonl -> the tree tables of the export database, written by one
// thread per group of tables, each into its own SQLite file, then gathered into the output.
//
// Why: one SQLite connection inserts and indexes on one thread; that thread limited the export
// (see table_writer.h). Here the parser thread feeds kTableGroups.size() TableWriters at once:
// the largest group (kernel_rows) goes straight into the output database, the others into
// temporary files beside it, and each builds its own indexes. Then the output attaches each
// temporary file and copies its tables with `INSERT INTO main.t SELECT * FROM part.t`: the
// tables and indexes match and the targets are empty, so SQLite's transfer optimisation copies
// the records and index entries as they are (no decoding, no sorting).
// The temporary files are AtomicFiles beside the output (O_EXCL|O_NOFOLLOW, opened by SQLite
// with SQLITE_OPEN_NOFOLLOW) and are removed before LoadTreesInParallel returns, in success and
// in failure.
// Thread-safety: one call per output database; it uses `out` on the calling thread and on one
// TableWriter thread, never at once.
#pragma once

#include <string>
#include <vector>

#include "sqlite_db.h"
#include "tree_rows.h"

namespace truffld::exporter {

// The groups of tables, one writer thread each; the first is written into the output itself.
extern const std::vector<std::vector<std::string>> kTableGroups;

// Loads `trees_path` into `out` (whose tables exist and which is the file `output_path` is
// being built as), with `pragmas` run on each temporary database. `rows` counts what was read.
// The reader's error sets *input_failed; other errors name the database file.
Status LoadTreesInParallel(const std::string& trees_path, SqliteDb* out, const std::string& output_path,
                           const char* pragmas, TreeRows* rows, bool* input_failed);

}  // namespace truffld::exporter
