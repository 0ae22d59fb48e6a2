// LoadTreesInParallel: table groups written by their own threads, then gathered (see
// parallel_load.h).
#include "parallel_load.h"

#include <algorithm>
#include <memory>
#include <thread>

#include "row_batches.h"
#include "schema_sql.h"
#include "table_writer.h"
#include "truffld/atomic_file.h"

namespace truffld::exporter {

std::vector<std::vector<std::string>> TableGroups(int writers) {
  if (writers <= 1) {
    std::vector<std::string> all;
    for (const TableIndexes& t : kTreeTables) all.push_back(t.table);
    return {all};
  }
  if (writers == 2) {
    return {{"kernel_rows", "call_rows", "strings", "copy_rows", "sync_rows"},
            {"op_rows", "collectives", "steps", "requests"}};
  }
  return {{"kernel_rows"},
          {"op_rows", "collectives", "steps", "requests"},
          {"call_rows", "strings", "copy_rows", "sync_rows"}};
}

int WritersFor(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(threads - 1, 1, 3);
}

namespace {

// A temporary database beside the output, with the export's tables.
struct Part {
  AtomicFile file;
  std::unique_ptr<SqliteDb> db;
};

Result<Part> CreatePart(const std::string& output_path, const char* pragmas) {
  auto file = AtomicFile::Create(output_path);
  if (!file.ok()) return file.status();
  TRUFFLD_RETURN_IF_ERROR(file->Close());
  auto db = SqliteDb::Open(file->temp_path(), SqliteDb::Mode::kCreate);
  if (!db.ok()) return db.status();
  TRUFFLD_RETURN_IF_ERROR((*db)->Exec(pragmas));
  TRUFFLD_RETURN_IF_ERROR((*db)->Exec(kCreateTables));
  return Part{std::move(file).value(), std::move(db).value()};
}

// Copies `tables` of the closed database `path` into `out`'s empty tables (their indexes made).
Status CopyPart(SqliteDb* out, const std::string& path, const std::vector<std::string>& tables) {
  auto attach = out->Prepare("ATTACH ? AS part");
  if (!attach.ok()) return attach.status();
  attach->Bind(1, std::string_view(path));
  TRUFFLD_RETURN_IF_ERROR(attach->Run());
  std::string sql = "BEGIN;";
  for (const std::string& t : tables) sql += "INSERT INTO main." + t + " SELECT * FROM part." + t + ";";
  sql += "COMMIT;";
  Status st = out->Exec(sql);
  Status detach = out->Exec("DETACH part");
  return st.ok() ? detach : st;
}

}  // namespace

Status LoadTreesInParallel(const std::string& trees_path, SqliteDb* out, const std::string& output_path,
                           int writer_count, const char* pragmas, TreeRows* rows, bool* input_failed) {
  const std::vector<std::vector<std::string>> groups = TableGroups(writer_count);
  std::vector<Part> parts;
  std::vector<std::unique_ptr<TableWriter>> writers;
  for (size_t g = 0; g < groups.size(); ++g) {
    SqliteDb* db = out;
    if (g > 0) {
      auto part = CreatePart(output_path, pragmas);
      if (!part.ok()) return part.status();
      parts.push_back(std::move(part).value());
      db = parts.back().db.get();
    }
    auto w = TableWriter::Start(db, groups[g]);
    if (!w.ok()) return w.status();
    writers.push_back(std::move(w).value());
  }
  Status parsed = ParseTreesInBackground(
      trees_path, rows,
      [&](std::shared_ptr<const RowBatch> b) {
        for (auto& w : writers) {
          if (!w->Push(b)) return Internal(output_path + ": a table writer failed");
        }
        return Status::Ok();
      },
      input_failed);
  Status written;
  for (auto& w : writers) {
    Status st = w->Finish();
    if (written.ok()) written = std::move(st);
  }
  if (*input_failed || written.ok()) TRUFFLD_RETURN_IF_ERROR(parsed);
  TRUFFLD_RETURN_IF_ERROR(written);
  for (size_t g = 1; g < groups.size(); ++g) {
    Part& p = parts[g - 1];
    p.db.reset();  // closed: its exclusive lock released before the output attaches it
    TRUFFLD_RETURN_IF_ERROR(out->Exec(IndexSqlOf(groups[g])));
    TRUFFLD_RETURN_IF_ERROR(CopyPart(out, p.file.temp_path(), groups[g]));
  }
  return Status::Ok();
}

}  // namespace truffld::exporter
