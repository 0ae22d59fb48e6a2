// TreeRows: turns trees.jsonl lines (truffld.trees/1) into the rows of truffld-export's tables.
//
// Why: trees repeat what several requests share (per-request lines, or request groups whose
// trees differ in one range), and every view of a step lists its own calls and device work; a
// table needs each step, operator, call, kernel and copy once. So TreeRows numbers steps by
// (rank, process, step_index) and keeps, per step, the nodes already emitted, keyed by their
// layer, times, thread or stream, correlation id and name: a node seen again reuses its id and
// emits nothing. Pure logic: lines in (string_view), rows out through a RowSink; no files, no
// SQLite. Bad lines are counted with "file:line: problem" (first kMaxProblems kept), never
// dropped silently; the rest of the file is still read.
// Dedup state is kept for the kOpenSteps steps seen last: merge writes a step's lines together,
// and a step whose lines come back after that is counted in `reopened_steps`.
// Thread-safety: one TreeRows per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "truffld/status.h"

namespace truffld::exporter {

using OptInt = std::optional<int64_t>;

struct StepRow {
  int64_t step_id = 0;
  OptInt rank, process_id, tokens, batch, ctx;
  int64_t step_index = 0, start = 0, end = 0;
  std::string_view host, name, phase, source;
  bool device_detail = true;
};
// A *_id of a name or family is 0 until a RowBatch interns it (then the text may be empty).
struct OpRow {
  int64_t op_id = 0, step_id = 0, depth = 0, family_id = 0, name_id = 0;
  OptInt parent_op_id, thread_id;
  std::string_view view, layer, family, name, domain;
  int64_t start = 0, end = 0;
};
struct CallRow {
  int64_t call_id = 0, step_id = 0, name_id = 0, family_id = 0;
  OptInt op_id, parent_call_id, thread_id, correlation_id, cbid, return_code;
  std::string_view layer, name, family;
  int64_t start = 0, end = 0;
};
// A kernel, memcpy, memset or sync node (layer says which).
struct DeviceRow {
  int64_t id = 0, step_id = 0, name_id = 0, family_id = 0;
  OptInt op_id, call_id, device, stream, correlation_id, bytes, graph_id, graph_node_id;
  std::string_view layer, name, family, copy_kind;
  int64_t start = 0, end = 0;
  OptInt grid[3], block[3];
  bool is_comm = false;
};
struct CollectiveRow {
  int64_t op_id = 0, step_id = 0;
  OptInt rank, comm_rank, bytes, world_size, root, peer;
  std::optional<std::string> comm, op;
  std::string family;  // the comm range's family, e.g. ncclAllReduce
  int64_t start = 0, end = 0;
};

// Receives rows as TreeRows makes them; the views are valid during the call only.
class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual Status Step(const StepRow& r) = 0;
  virtual Status Request(int64_t step_id, std::string_view request_id, int64_t position) = 0;
  virtual Status Op(const OpRow& r) = 0;
  virtual Status Call(const CallRow& r) = 0;
  virtual Status Device(const DeviceRow& r) = 0;
  virtual Status Collective(const CollectiveRow& r) = 0;
  // A text interned before the rows that use its id (RowBatch); ignored by default.
  virtual Status String(int64_t id, std::string_view text) {
    (void)id;
    (void)text;
    return Status::Ok();
  }
};

struct TreeRowCounts {
  uint64_t lines = 0, trees = 0, bad_lines = 0;
  uint64_t steps = 0, requests = 0, ops = 0, calls = 0, kernels = 0, copies = 0, syncs = 0, collectives = 0;
  uint64_t duplicate_nodes = 0;  // nodes already emitted through another tree of their step
  uint64_t unknown_layers = 0;   // nodes whose layer is none of the schema's (skipped, counted)
  uint64_t reopened_steps = 0;   // steps whose lines were not together (duplicates may remain)
  std::vector<std::string> problems;  // "file:line: problem", the first kMaxProblems
  static constexpr size_t kMaxProblems = 20;
};

class TreeRows {
 public:
  static constexpr size_t kOpenSteps = 16;
  TreeRows();
  ~TreeRows();
  TreeRows(const TreeRows&) = delete;
  TreeRows& operator=(const TreeRows&) = delete;

  // Parses one line; `file`/`line_no` name it in problems. A line that is not a tree is counted
  // and described; only a sink error is returned (it stops the export).
  Status AddLine(std::string_view line, std::string_view file, long long line_no, RowSink* sink);
  // Records a problem that is not a line of trees (a truncated last line, a reader warning).
  void AddProblem(std::string message);
  const TreeRowCounts& counts() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace truffld::exporter
