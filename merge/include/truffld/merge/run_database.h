// RunDatabase: truffld-merge --sqlite. Writes the run database (truffld.sqlite/1: steps,
// requests, operators, calls, kernels, copies, syncs, collectives, strings and `run`; the tables
// truffld-export writes from trees.jsonl, docs/sqlite.md) from the merge's trees in memory, so
// the trees need not be written and parsed again. The rows are built as trees.jsonl lists the
// trees (same order, same request groups, the same RowBuilder as truffld-export), so the two
// databases hold the same rows with the same ids. The diagnosis tables (verdicts, faulty_ops)
// are created empty: `truffld-export --db FILE --diagnosis DIR` fills them.
// The file is built under a temporary name beside `path` (AtomicFile: O_EXCL|O_NOFOLLOW,
// SQLITE_OPEN_NOFOLLOW) and renamed by Commit, so a planted symlink is replaced, never
// followed, and a failed run leaves an earlier database as it was.
// Thread-safety: Start, Finish and Commit from one thread; the rows are built on a thread of
// its own and inserted on another, reading the MergeResult only (it must outlive Finish).
#pragma once

#include <memory>
#include <string>

#include "truffld/merge/pipeline.h"
#include "truffld/merge/writers.h"
#include "truffld/status.h"

namespace truffld::merge {

struct RunDatabaseInfo {
  std::string truffld_version;
  std::string trees_path, summary_path;  // as the `run` table names them ("" for none)
  std::string summary_json;              // summary.json's text
};

class RunDatabase {
 public:
  // Creates the database under its temporary name and starts building and inserting the rows
  // of `result`'s trees in `layout`'s order (the layout trees.jsonl is written in).
  static Result<std::unique_ptr<RunDatabase>> Start(const MergeResult& result, TreeLayout layout,
                                                   const std::string& path);
  ~RunDatabase();  // without Commit: the temporary file is removed
  RunDatabase(const RunDatabase&) = delete;
  RunDatabase& operator=(const RunDatabase&) = delete;

  // Waits for the rows and their indexes, then writes the `run` table and closes the database.
  // The first error met, naming the file.
  Status Finish(const RunDatabaseInfo& info);
  // Renames the finished database over `path`.
  Status Commit();

 private:
  struct Impl;
  explicit RunDatabase(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace truffld::merge
