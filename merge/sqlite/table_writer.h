// TableWriter: one thread that inserts the rows of some tables (a group of kTreeTables) from every
// RowBatch into its own SQLite connection, then builds those tables' indexes.
//
// Why: SQLite writes one database file from one thread at a time, and the export's single
// writing connection was its bottleneck (10 M events: 10.6 s of inserts on one thread while the
// parser idled 30 %, then 6.4 s of index builds one after another). Each group of tables gets
// its own thread and its own file, so the inserts of the groups, and then their index builds,
// run at once; ParallelLoad copies the groups into the output file afterwards (SQLite copies the
// records and index entries of identical tables without decoding them).
// The batches are shared with the other groups' writers (read-only); at most kQueued wait here,
// so a slow writer holds the parser back rather than piling batches up in memory.
// Thread-safety: Push and Finish are called from one thread (the one that created the writer);
// the database belongs to the writer's thread from Start to Finish.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "row_batch.h"
#include "sqlite_db.h"

namespace truffld::rundb {

class TableWriter {
 public:
  // Begins a transaction on `db` (its tables created) and starts the thread that writes
  // `tables` (names of kTreeTables). `db` must outlive Finish.
  static Result<std::unique_ptr<TableWriter>> Start(SqliteDb* db, std::vector<std::string> tables);
  ~TableWriter();  // without Finish: stops the thread (the rows written so far stay uncommitted)
  TableWriter(const TableWriter&) = delete;
  TableWriter& operator=(const TableWriter&) = delete;

  // Queues a batch; blocks while kQueued batches wait. False once the writer has failed (the
  // batch is dropped; Finish reports the error).
  bool Push(std::shared_ptr<const RowBatch> batch);
  // No more batches: writes what is queued, commits, builds the tables' indexes, joins the
  // thread. The first error met (naming the database file), or Ok.
  Status Finish();
  const std::vector<std::string>& tables() const { return tables_; }

 private:
  static constexpr size_t kQueued = 3;
  TableWriter(SqliteDb* db, std::vector<std::string> tables) : db_(db), tables_(std::move(tables)) {}
  void Run();
  Status Write();
  std::shared_ptr<const RowBatch> Pop();  // null at the end of the input
  SqliteDb* db_;
  std::vector<std::string> tables_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<const RowBatch>> queue_;
  bool done_ = false;
  Status status_;  // the thread's result, read after join
  std::thread thread_;
};

// The CREATE INDEX script of `tables` (kTreeTables' statements).
std::string IndexSqlOf(const std::vector<std::string>& tables);

}  // namespace truffld::rundb
