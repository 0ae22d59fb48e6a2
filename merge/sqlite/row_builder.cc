// RowBuilder: deduplicated table rows from plain tree nodes (see row_builder.h).
#include "row_builder.h"

#include <algorithm>
#include <climits>
#include <map>
#include <tuple>
#include <unordered_set>

#include "node_set.h"
#include "truffld/string_pool.h"

namespace truffld::rundb {

namespace {

enum class Kind : uint8_t { kOp, kCall, kKernel, kCopy, kSync, kOther };

Kind KindOf(std::string_view layer) {
  if (layer == "frontend_op" || layer == "backend_op" || layer == "comm" || layer == "other") return Kind::kOp;
  if (layer == "runtime_call" || layer == "driver_call") return Kind::kCall;
  if (layer == "kernel") return Kind::kKernel;
  if (layer == "memcpy" || layer == "memset") return Kind::kCopy;
  if (layer == "sync") return Kind::kSync;
  return Kind::kOther;
}

struct OpenStep {
  int64_t step_id;
  NodeSet seen;
};

}  // namespace

struct RowBuilder::Impl {
  TreeRowCounts counts;
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> step_ids;
  std::vector<OpenStep> open;  // most recent last
  std::unordered_set<int64_t> closed;
  int64_t next_id[5] = {1, 1, 1, 1, 1};  // per Kind up to kSync
  const uint64_t hash_seed = ProcessHashSeed();
  OpenStep* step = nullptr;
  std::string_view view;
  OptInt rank, process_id;
  int64_t step_index = 0, request_position = 0;
  bool bad_node = false;

  OpenStep* Reopen(int64_t step_id);
  Status EmitCall(const NodeView& n, const Context& ctx, int64_t id, RowSink* sink);
  Status EmitOp(const NodeView& n, const Context& ctx, int64_t id, RowSink* sink);
  Status EmitDevice(const NodeView& n, Kind kind, const Context& ctx, int64_t id, RowSink* sink);
};

RowBuilder::RowBuilder() : impl_(std::make_unique<Impl>()) {}
RowBuilder::~RowBuilder() = default;
TreeRowCounts& RowBuilder::counts() { return impl_->counts; }

uint64_t RowBuilder::NameHash(std::string_view name) const { return HashBytes(name, impl_->hash_seed); }

bool RowBuilder::TakeBadNode() {
  const bool bad = impl_->bad_node;
  impl_->bad_node = false;
  return bad;
}

OpenStep* RowBuilder::Impl::Reopen(int64_t step_id) {
  for (OpenStep& s : open) {
    if (s.step_id == step_id) return &s;
  }
  if (closed.erase(step_id)) ++counts.reopened_steps;
  if (open.size() == kOpenSteps) {  // the oldest step's table is cleared and reused
    closed.insert(open.front().step_id);
    std::rotate(open.begin(), open.begin() + 1, open.end());
    open.back().step_id = step_id;
    open.back().seen.Clear();
    return &open.back();
  }
  open.push_back(OpenStep{step_id, {}});
  return &open.back();
}

bool RowBuilder::EnterStep(OptInt rank, OptInt process_id, int64_t step_index, std::string_view view) {
  Impl& m = *impl_;
  m.rank = rank;
  m.process_id = process_id;
  m.step_index = step_index;
  m.view = view;
  const auto key = std::make_tuple(rank.value_or(INT64_MIN), process_id.value_or(INT64_MIN), step_index);
  auto [it, fresh] = m.step_ids.emplace(key, static_cast<int64_t>(m.step_ids.size()) + 1);
  m.step = m.Reopen(it->second);
  return fresh;
}

Status RowBuilder::Step(StepRow r, RowSink* sink) {
  Impl& m = *impl_;
  ++m.counts.steps;
  r.step_id = m.step->step_id;
  r.rank = m.rank;
  r.process_id = m.process_id;
  r.step_index = m.step_index;
  m.request_position = 0;
  return sink->Step(r);
}

Status RowBuilder::Request(std::string_view request_id, RowSink* sink) {
  Impl& m = *impl_;
  ++m.counts.requests;
  return sink->Request(m.step->step_id, request_id, m.request_position++);
}

Result<RowBuilder::Context> RowBuilder::Visit(const NodeView& n, const Context& ctx, RowSink* sink) {
  Impl& m = *impl_;
  const Kind kind = KindOf(n.layer);
  if (!n.start || !n.end) {
    m.bad_node = true;
    return ctx;
  }
  if (kind == Kind::kOther) {
    if (n.layer != "step") ++m.counts.unknown_layers;
    return ctx;
  }
  const bool host = kind == Kind::kOp || kind == Kind::kCall;
  const NodeKey key{static_cast<uint8_t>(kind), *n.start, *n.end, (host ? n.thread_id : n.stream).value_or(-1),
                    n.correlation_id.value_or(-1), n.name_hash ? n.name_hash : HashBytes(n.name, m.hash_seed)};
  int64_t& next = m.next_id[static_cast<int>(kind)];
  bool fresh = false;
  const int64_t id = m.step->seen.FindOrInsert(key, next, &fresh);
  if (!fresh) ++m.counts.duplicate_nodes;
  Context inner = ctx;
  if (kind == Kind::kOp) {
    if (fresh) TRUFFLD_RETURN_IF_ERROR(m.EmitOp(n, ctx, next++, sink));
    inner.op_id = id;
    inner.call_id.reset();
    inner.depth = ctx.depth + 1;
    inner.in_comm = ctx.in_comm || n.layer == "comm";
  } else if (kind == Kind::kCall) {
    if (fresh) TRUFFLD_RETURN_IF_ERROR(m.EmitCall(n, ctx, next++, sink));
    inner.call_id = id;
  } else if (fresh) {
    TRUFFLD_RETURN_IF_ERROR(m.EmitDevice(n, kind, ctx, next++, sink));
  }
  return inner;
}

Status RowBuilder::Impl::EmitCall(const NodeView& n, const Context& ctx, int64_t id, RowSink* sink) {
  CallRow r;
  r.call_id = id;
  r.step_id = step->step_id;
  r.op_id = ctx.op_id;
  r.parent_call_id = ctx.call_id;
  r.thread_id = n.thread_id;
  r.correlation_id = n.correlation_id;
  r.cbid = n.cbid;
  r.return_code = n.return_code;
  r.layer = n.layer;
  r.name = n.name;
  r.family = n.family;
  r.start = *n.start;
  r.end = *n.end;
  ++counts.calls;
  return sink->Call(r);
}

Status RowBuilder::Impl::EmitOp(const NodeView& n, const Context& ctx, int64_t id, RowSink* sink) {
  OpRow r;
  r.op_id = id;
  r.step_id = step->step_id;
  r.depth = ctx.depth;
  r.parent_op_id = ctx.op_id;
  r.thread_id = n.thread_id;
  r.view = view;
  r.layer = n.layer;
  r.family = n.family;
  r.name = n.name;
  r.domain = n.domain;
  r.start = *n.start;
  r.end = *n.end;
  ++counts.ops;
  TRUFFLD_RETURN_IF_ERROR(sink->Op(r));
  if (n.layer != "comm") return Status::Ok();
  CollectiveRow c;
  c.op_id = id;
  c.step_id = step->step_id;
  c.rank = rank;
  c.start = r.start;
  c.end = r.end;
  c.family = n.family;
  if (n.payload) {
    CommPayload p = n.payload(n.payload_arg);
    c.comm = std::move(p.comm);
    c.op = std::move(p.op);
    c.bytes = p.bytes;
    c.world_size = p.world_size;
    c.comm_rank = p.rank;
    c.root = p.root;
    c.peer = p.peer;
  }
  ++counts.collectives;
  return sink->Collective(c);
}

Status RowBuilder::Impl::EmitDevice(const NodeView& n, Kind kind, const Context& ctx, int64_t id, RowSink* sink) {
  DeviceRow r;
  r.id = id;
  r.step_id = step->step_id;
  r.op_id = ctx.op_id;
  r.call_id = ctx.call_id;
  r.device = n.device;
  r.stream = n.stream;
  r.correlation_id = n.correlation_id;
  r.bytes = n.bytes;
  r.graph_id = n.graph_id;
  r.graph_node_id = n.graph_node_id;
  r.layer = n.layer;
  r.name = n.name;
  r.family = n.family;
  r.copy_kind = n.copy_kind;
  r.start = *n.start;
  r.end = *n.end;
  std::copy(n.grid, n.grid + 3, r.grid);
  std::copy(n.block, n.block + 3, r.block);
  r.is_comm = ctx.in_comm || n.name.starts_with("nccl");
  if (kind == Kind::kKernel) ++counts.kernels;
  else if (kind == Kind::kCopy) ++counts.copies;
  else ++counts.syncs;
  return sink->Device(r);
}

}  // namespace truffld::rundb
