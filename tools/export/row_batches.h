// RowBatch / ParseTreesInBackground: trees.jsonl parsed on a second thread while the caller
// inserts the rows of the previous batch into SQLite.
//
// Why: reading and walking the JSON and inserting into SQLite each take about half of an
// export's CPU time; overlapping them brings the export's wall time towards the larger half
// (truffld-merge also runs two threads by default). A RowBatch is a RowSink that copies every
// row, its texts into its own arena (chunks that never move, so the rows' views stay valid), and
// replays them into another sink in the order tables were filled. Names and families are
// interned on the parser thread (StringIds): a row carries their ids, and a batch carries only
// the texts first seen in it, replayed before its rows (RowSink::String). The parser thread fills
// batches of about kBatchRows rows and hands them over through a queue of at most kQueued
// batches, so memory stays bounded whatever the file's size.
// Thread-safety: a RowBatch is filled by the parser thread only; once handed over it is
// read-only, and several threads may replay it at once (each table group's TableWriter).
// ParseTreesInBackground's callback runs on the calling thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tree_rows.h"
#include "truffld/string_pool.h"

namespace truffld::exporter {

// Ids of names and families, 1, 2, ... in order of first sight (a StringPool: flat table, no
// allocation per name). Used by one thread.
class StringIds {
 public:
  // The id of `text` (0 for ""); *fresh says whether it was new.
  int64_t Id(std::string_view text, bool* fresh);

 private:
  StringPool pool_;
};

class RowBatch : public RowSink {
 public:
  explicit RowBatch(StringIds* ids) : ids_(ids) {}
  Status Step(const StepRow& r) override;
  Status Request(int64_t step_id, std::string_view request_id, int64_t position) override;
  Status Op(const OpRow& r) override;
  Status Call(const CallRow& r) override;
  Status Device(const DeviceRow& r) override;
  Status Collective(const CollectiveRow& r) override;
  // Reserves room for as many rows of each table as `other` holds (the previous batch: the
  // vectors then grow without copying their rows).
  void ReserveLike(const RowBatch& other);
  // Sends every row to `sink`, table by table.
  Status Replay(RowSink* sink) const;
  size_t rows() const { return rows_; }

 private:
  std::string_view Keep(std::string_view s);
  int64_t Intern(std::string_view s);
  StringIds* ids_;
  std::vector<std::pair<int64_t, std::string_view>> strings_;  // texts first seen here
  struct RequestRow {
    int64_t step_id, position;
    std::string_view id;
  };
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t chunk_used_ = 0, chunk_size_ = 0, rows_ = 0;
  std::vector<StepRow> steps_;
  std::vector<RequestRow> requests_;
  std::vector<OpRow> ops_;
  std::vector<CallRow> calls_;
  std::vector<DeviceRow> devices_;
  std::vector<CollectiveRow> collectives_;
};

// Reads `path` line by line into `rows` on a background thread and calls `consume` on the
// calling thread with each full batch, in file order (shared: the consumer may hand it on). Returns the reader's status (naming the
// file; *reader_failed is then set), or the first error `consume` returned (the parser is then
// stopped).
Status ParseTreesInBackground(const std::string& path, TreeRows* rows,
                              const std::function<Status(std::shared_ptr<const RowBatch>)>& consume, bool* reader_failed);

}  // namespace truffld::exporter
