// RowBuilder: tree nodes in, the rows of the run database's tables out (truffld.sqlite/1), each
// step, operator, call, kernel and copy once.
//
// Why: trees repeat what several requests share (per-request lines, or request groups whose
// trees differ in one range), and every view of a step lists its own calls and device work; a
// table needs each node once. So RowBuilder numbers steps by (rank, process, step_index) and
// keeps, per step, the nodes already emitted, keyed by their layer, times, thread or stream,
// correlation id and name: a node seen again reuses its id and emits nothing. Two producers feed
// it the same plain data (NodeView), in the same order (a tree's nodes depth first, parents
// before children): truffld-export from parsed trees.jsonl lines (TreeRows), truffld-merge
// --sqlite from its trees in memory, so both write the same rows with the same ids.
// Dedup state is kept for the kOpenSteps steps seen last: merge writes a step's trees together,
// and a step whose trees come back after that is counted in `reopened_steps`.
// Pure logic: no files, no SQLite. Thread-safety: one RowBuilder per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "truffld/status.h"

namespace truffld::rundb {

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
// A comm range's payload members (trees.jsonl "payload"): texts as they are or integers in
// decimal (comm, op); integers (the others).
struct CommPayload {
  std::optional<std::string> comm, op;
  OptInt bytes, world_size, rank, root, peer;
};
struct CollectiveRow {
  int64_t op_id = 0, step_id = 0;
  OptInt rank, comm_rank, bytes, world_size, root, peer;
  std::optional<std::string> comm, op;
  std::string family;  // the comm range's family, e.g. ncclAllReduce
  int64_t start = 0, end = 0;
};

// Receives rows as they are made; the views are valid during the call only.
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

// One node of a tree, as trees.jsonl writes it (absent members: std::nullopt or "").
struct NodeView {
  std::string_view name, layer, family, domain, copy_kind;
  OptInt start, end, thread_id, correlation_id, cbid, return_code, stream, device, bytes, graph_id, graph_node_id;
  OptInt grid[3], block[3];
  // RowBuilder::NameHash(name) when the producer has it at hand (0: computed from `name`).
  uint64_t name_hash = 0;
  // A comm node's payload, read only when the node makes a collectives row: `payload(arg)`;
  // no payload when `payload` is null.
  CommPayload (*payload)(const void* arg) = nullptr;
  const void* payload_arg = nullptr;
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

class RowBuilder {
 public:
  static constexpr size_t kOpenSteps = 16;
  // Where a node sits: its innermost operator and call, operator depth, and whether a comm
  // range is above it. A tree's root (the step node) has the default context.
  struct Context {
    OptInt op_id, call_id;
    int64_t depth = 0;
    bool in_comm = false;
  };

  RowBuilder();
  ~RowBuilder();
  RowBuilder(const RowBuilder&) = delete;
  RowBuilder& operator=(const RowBuilder&) = delete;

  // Starts a tree of step (rank, process_id, step_index) in `view` ("vertical" or "horizontal";
  // must stay valid until the next EnterStep). True when the step is new: the caller then gives
  // its fields with Step() and its requests with Request(), in order.
  bool EnterStep(OptInt rank, OptInt process_id, int64_t step_index, std::string_view view);
  // The new step's row: step_id, rank, process_id and step_index are filled in here.
  Status Step(StepRow r, RowSink* sink);
  Status Request(std::string_view request_id, RowSink* sink);
  // Emits node `n` (a child of a node whose children see `ctx`) when its step has not seen it;
  // returns the context its own children see. A node without start or end makes no row and
  // returns `ctx` (its children are still visited) and is remembered for TakeBadNode.
  Result<Context> Visit(const NodeView& n, const Context& ctx, RowSink* sink);
  // The hash of a node's name that identifies it within its step (with its times, lane and
  // correlation id); a producer that meets the same name often may keep it (NodeView::name_hash).
  uint64_t NameHash(std::string_view name) const;
  // Whether a node without start or end was met since the last call (cleared by the call).
  bool TakeBadNode();
  TreeRowCounts& counts();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace truffld::rundb
