// RowBatch: a RowSink that copies every row into its own memory, to be replayed into another sink
// on another thread (the SQLite writer: TableWriter).
//
// Why: building rows (parsing trees.jsonl, or walking the merge's trees) and inserting them
// into SQLite each take about half of an export's CPU time; handing rows over in batches lets
// the two overlap. A RowBatch copies every row, its texts into its own arena (chunks that never
// move, so the rows' views stay valid), and replays them in the order tables were filled. Names
// and families are interned on the producer's thread (StringIds): a row carries their ids, and a
// batch carries only the texts first seen in it, replayed before its rows (RowSink::String).
// Thread-safety: a RowBatch is filled by one thread; once handed over it is read-only, and
// several threads may replay it at once (each table group's TableWriter).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "row_builder.h"
#include "truffld/string_pool.h"

namespace truffld::rundb {

// Ids of names and families, 1, 2, ... in order of first sight (a StringPool: flat table, no
// allocation per name). Used by one thread.
// With `stable_texts`, the caller promises that a text's bytes never change or move while the
// StringIds lives (truffld-merge's string pools): a text met again at the same address is then
// found without hashing its bytes (kernel names are often hundreds of bytes, met millions of
// times). Parsed lines reuse their buffer, so truffld-export leaves it off.
class StringIds {
 public:
  explicit StringIds(bool stable_texts = false) : stable_(stable_texts) {}
  // The id of `text` (0 for ""); *fresh says whether it was new.
  int64_t Id(std::string_view text, bool* fresh);

 private:
  struct Seen {
    const char* data = nullptr;
    size_t size = 0;
    int64_t id = 0;
  };
  static constexpr size_t kSeenSlots = 4096;  // direct-mapped by address
  bool stable_;
  std::vector<Seen> seen_;
  StringPool pool_;
};

// Rows per batch a producer hands over (about 64 Ki: large enough to amortise the hand-over,
// small enough to bound memory with a few batches queued).
inline constexpr size_t kBatchRows = size_t{1} << 16;

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
  // Empties the batch for reuse, keeping its vectors' memory and its first text chunk: a new
  // batch of 64 Ki rows takes about 13 MB of fresh pages, which the kernel zeroes on first
  // touch and the C library unmaps again when the batch is freed.
  void Clear();
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

}  // namespace truffld::rundb
