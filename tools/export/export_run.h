// ExportRun: a truffld-merge output directory (and optionally a truffld-diagnose one) -> one
// SQLite database (schema_sql.h). The file-system adapter of truffld-export: it resolves the
// inputs, reads trees.jsonl[.gz|.zst] line by line into TreeRows, inserts the rows and builds
// the indexes one thread per group of tables (LoadTreesInParallel), adds
// diagnosis.jsonl's verdicts and faulty operators, and records what was read (and every
// problem, file:line) in `run`.
// The database is built under a temporary name in the destination directory (AtomicFile:
// created O_EXCL|O_NOFOLLOW, opened by SQLite with SQLITE_OPEN_NOFOLLOW) and renamed over the
// final name when complete, so a planted symlink is replaced, never followed, and a failed run
// leaves the previous database as it was.
// Thread-safety: one export per thread.
#pragma once

#include <string>
#include <vector>

#include "tree_rows.h"
#include "truffld/status.h"

namespace truffld::exporter {

struct ExportOptions {
  std::string merge_dir;     // truffld-merge -o directory, or a trees.jsonl file
  std::string diagnose_dir;  // truffld-diagnose -o directory, or diagnosis.jsonl; "" for none
  std::string output;        // the .sqlite file to write
  int threads = 0;           // threads in all, the parser's included (0: one per core; WritersFor)
};

struct ExportResult {
  TreeRowCounts trees;
  std::string trees_path, summary_path, diagnosis_path;
  uint64_t verdicts = 0, faulty_ops = 0, bad_diagnosis_lines = 0;
  std::vector<std::string> problems;  // diagnosis and summary problems, "file[:line]: problem"
};

// On failure the status names the file and the problem, and *input_failed says whether an
// input was at fault (missing, unreadable, no tree at all) rather than the output (cannot be
// created or written).
Result<ExportResult> ExportRun(const ExportOptions& options, bool* input_failed);

// Adds the verdicts and faulty operators of `diagnose_dir` (a truffld-diagnose -o directory or
// its diagnosis.jsonl) to the existing database `db_path` (truffld-merge --sqlite's, or an
// export made without --diagnosis) in one transaction, and records them in its `run` table.
// Fails, changing nothing, on a file that is not a truffld.sqlite/1 database or already holds
// verdicts (*input_failed set), or on an error writing it.
Result<ExportResult> AddDiagnosis(const std::string& db_path, const std::string& diagnose_dir, bool* input_failed);

}  // namespace truffld::exporter
