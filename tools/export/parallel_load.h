// LoadTreesInParallel: trees.jsonl -> the tree tables of the export database, written by one
// thread per group of tables, each into its own SQLite file, then gathered into the output.
//
// Why: one SQLite connection inserts and indexes on one thread; that thread limited the export
// (see table_writer.h). Here the parser thread feeds one TableWriter per group of tables
// (TableGroups): the first group goes straight into the output database, the others into
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

// The groups of kTreeTables for `writers` writer threads (1 to 3; others are clamped), every
// table in exactly one group; the first group is written into the output itself. One writer
// writes every table (no temporary file, nothing to copy); three split the bytes about 40/30/30
// (kernel_rows alone first, as the largest, so that the most bytes need no copy).
std::vector<std::vector<std::string>> TableGroups(int writers);
// Writer threads for `threads` threads in all (0: one per core): one thread parses, the others
// write, at most 3. Two cores or fewer get one writer: the copy into the output costs more CPU
// than the overlap saves when no core is free (10 M events: +2.4 s CPU).
int WritersFor(int threads);

// Loads `trees_path` into `out` (whose tables exist and which is the file `output_path` is
// being built as) with `writer_count` writer threads (TableGroups), `pragmas` run on each temporary database.
// `rows` counts what was read.
// The reader's error sets *input_failed; other errors name the database file.
Status LoadTreesInParallel(const std::string& trees_path, SqliteDb* out, const std::string& output_path,
                           int writer_count, const char* pragmas, TreeRows* rows, bool* input_failed);

}  // namespace truffld::exporter
