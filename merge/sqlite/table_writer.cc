// TableWriter: one group of tables written by its own thread (see table_writer.h).
#include "table_writer.h"

#include "db_sink.h"
#include "schema_sql.h"

namespace truffld::rundb {

std::string IndexSqlOf(const std::vector<std::string>& tables) {
  std::string sql;
  for (const TableIndexes& t : kTreeTables) {
    for (const std::string& name : tables) {
      if (name == t.table) sql += t.sql;
    }
  }
  return sql;
}

Result<std::unique_ptr<TableWriter>> TableWriter::Start(SqliteDb* db, std::vector<std::string> tables) {
  std::unique_ptr<TableWriter> w(new TableWriter(db, std::move(tables)));
  TRUFFLD_RETURN_IF_ERROR(db->Exec("BEGIN"));
  w->thread_ = std::thread(&TableWriter::Run, w.get());
  return w;
}

TableWriter::~TableWriter() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    status_ = Internal(db_->path() + ": export stopped");  // the thread drops what is queued
    cv_.notify_all();
  }
  thread_.join();
}

bool TableWriter::Push(std::shared_ptr<const RowBatch> batch) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return queue_.size() < kQueued; });
  if (!status_.ok()) return false;
  queue_.push_back(std::move(batch));
  cv_.notify_all();
  return true;
}

std::shared_ptr<const RowBatch> TableWriter::Pop() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !queue_.empty() || done_; });
  if (queue_.empty()) return nullptr;
  auto b = std::move(queue_.front());
  queue_.pop_front();
  cv_.notify_all();
  return b;
}

Status TableWriter::Write() {
  auto sink = DbSink::Create(db_, tables_);
  if (!sink.ok()) return sink.status();
  while (auto batch = Pop()) TRUFFLD_RETURN_IF_ERROR(batch->Replay(sink->get()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status_.ok()) return status_;  // stopped by the destructor
  }
  TRUFFLD_RETURN_IF_ERROR((*sink)->Flush());
  TRUFFLD_RETURN_IF_ERROR(db_->Exec("COMMIT"));
  return db_->Exec(IndexSqlOf(tables_));
}

void TableWriter::Run() {
  Status st = Write();
  std::lock_guard<std::mutex> lock(mu_);
  if (status_.ok()) status_ = std::move(st);
  queue_.clear();  // Push drops batches from now on
  done_ = true;
  cv_.notify_all();
}

Status TableWriter::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  thread_.join();
  return status_;
}

}  // namespace truffld::rundb
