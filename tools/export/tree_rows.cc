// TreeRows: walks each trees.jsonl line with simdjson's DOM and emits deduplicated table rows
// (see tree_rows.h).
#include "tree_rows.h"

#include <simdjson.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_set>

#include "node_set.h"
#include "tree_node.h"
#include "truffld/string_pool.h"

namespace truffld::exporter {

namespace {

// JSON levels a tree line may nest, as the diagnoser admits (two per range).
constexpr size_t kMaxDepth = size_t{1} << 14;

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

// Where a node sits: its innermost operator and call, operator depth, and whether a comm range
// is above it.
struct Context {
  OptInt op_id, call_id;
  int64_t depth = 0;
  bool in_comm = false;
};

struct Frame {
  simdjson::dom::array::iterator next, last;
  Context ctx;
};

}  // namespace

struct TreeRows::Impl {
  Impl() {
    const simdjson::error_code err = parser.allocate(simdjson::dom::MINIMAL_DOCUMENT_CAPACITY, kMaxDepth);
    (void)err;  // on failure parse() allocates with the default depth
  }
  simdjson::dom::parser parser;
  simdjson::padded_string buffer;
  TreeRowCounts counts;
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> step_ids;
  std::vector<OpenStep> open;  // most recent last
  std::unordered_set<int64_t> closed;
  int64_t next_id[5] = {1, 1, 1, 1, 1};  // per Kind up to kSync
  const uint64_t hash_seed = ProcessHashSeed();
  OpenStep* step = nullptr;
  std::string_view view;
  OptInt rank;
  bool bad_node = false;

  void Problem(std::string message) {
    if (counts.problems.size() < TreeRowCounts::kMaxProblems) counts.problems.push_back(std::move(message));
  }
  Result<bool> Line(simdjson::dom::object o, RowSink* sink, std::string* why);
  Status EnterStep(simdjson::dom::object o, int64_t step_index, RowSink* sink);
  OpenStep* Reopen(int64_t step_id);
  Status Walk(simdjson::dom::object root, RowSink* sink);
  // Emits `node` when its step has not seen it; returns the context its children see.
  Result<Context> Visit(const TreeNode& n, const Context& ctx, RowSink* sink);
  Status EmitOp(const TreeNode& n, const Context& ctx, int64_t id, RowSink* sink);
  Status EmitDevice(const TreeNode& n, Kind kind, const Context& ctx, int64_t id, RowSink* sink);
};

TreeRows::TreeRows() : impl_(std::make_unique<Impl>()) {}
TreeRows::~TreeRows() = default;
const TreeRowCounts& TreeRows::counts() const { return impl_->counts; }
void TreeRows::AddProblem(std::string message) { impl_->Problem(std::move(message)); }

Status TreeRows::AddLine(std::string_view line, std::string_view file, long long line_no, RowSink* sink) {
  Impl& m = *impl_;
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return Status::Ok();
  ++m.counts.lines;
  const std::string where = std::string(file) + ":" + std::to_string(line_no) + ": ";
  simdjson::dom::element doc;
  if (auto err = m.parser.parse(line.data(), line.size()).get(doc); err != simdjson::SUCCESS) {
    ++m.counts.bad_lines;
    m.Problem(where + "not a JSON object (" + simdjson::error_message(err) + ")");
    return Status::Ok();
  }
  simdjson::dom::object o;
  std::string why;
  Result<bool> ok = doc.get_object().get(o) == simdjson::SUCCESS ? m.Line(o, sink, &why) : Result<bool>(false);
  if (!ok.ok()) return ok.status();
  if (!*ok) {
    ++m.counts.bad_lines;
    m.Problem(where + (why.empty() ? "not a JSON object" : why));
    return Status::Ok();
  }
  ++m.counts.trees;
  if (m.bad_node) m.Problem(where + "nodes without integer start/end were skipped with their subtrees");
  return Status::Ok();
}

Result<bool> TreeRows::Impl::Line(simdjson::dom::object o, RowSink* sink, std::string* why) {
  std::string_view schema;
  if (o["schema"].get_string().get(schema) != simdjson::SUCCESS || schema != "truffld.trees/1") {
    *why = "not a truffld.trees/1 line (\"schema\" missing or different)";
    return false;
  }
  simdjson::dom::element e;
  OptInt step_index = o["step_index"].get(e) == simdjson::SUCCESS ? JsonInt(e) : std::nullopt;
  simdjson::dom::object root;
  if (!step_index || *step_index < 0) {
    *why = "missing or negative step_index";
    return false;
  }
  if (o["view"].get_string().get(view) != simdjson::SUCCESS || (view != "vertical" && view != "horizontal")) {
    *why = "view is not \"vertical\" or \"horizontal\"";
    return false;
  }
  if (o["root"].get_object().get(root) != simdjson::SUCCESS) {
    *why = "missing root node";
    return false;
  }
  rank = o["rank"].get(e) == simdjson::SUCCESS ? JsonInt(e) : std::nullopt;
  TRUFFLD_RETURN_IF_ERROR(EnterStep(o, *step_index, sink));
  bad_node = false;
  TRUFFLD_RETURN_IF_ERROR(Walk(root, sink));
  return true;
}

OpenStep* TreeRows::Impl::Reopen(int64_t step_id) {
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

Status TreeRows::Impl::EnterStep(simdjson::dom::object o, int64_t step_index, RowSink* sink) {
  simdjson::dom::element e;
  const OptInt pid = o["process_id"].get(e) == simdjson::SUCCESS ? JsonInt(e) : std::nullopt;
  const auto key = std::make_tuple(rank.value_or(INT64_MIN), pid.value_or(INT64_MIN), step_index);
  auto [it, fresh] = step_ids.emplace(key, static_cast<int64_t>(step_ids.size()) + 1);
  step = Reopen(it->second);
  if (!fresh) return Status::Ok();
  ++counts.steps;
  StepRow r;
  r.step_id = it->second;
  r.rank = rank;
  r.process_id = pid;
  r.step_index = step_index;
  auto str = [&](const char* k) {
    std::string_view s;
    return o[k].get_string().get(s) == simdjson::SUCCESS ? s : std::string_view{};
  };
  auto num = [&](const char* k) { return o[k].get(e) == simdjson::SUCCESS ? JsonInt(e) : std::nullopt; };
  r.host = str("host");
  r.name = str("step");
  r.phase = str("phase");
  r.source = str("source");
  r.tokens = num("tokens");
  r.batch = num("batch");
  r.ctx = num("ctx");
  r.start = num("start").value_or(0);
  r.end = num("end").value_or(r.start);
  bool detail = true;
  r.device_detail = o["device_detail"].get_bool().get(detail) != simdjson::SUCCESS || detail;
  TRUFFLD_RETURN_IF_ERROR(sink->Step(r));
  simdjson::dom::array reqs;
  if (o["requests"].get_array().get(reqs) != simdjson::SUCCESS) return Status::Ok();
  int64_t pos = 0;
  for (simdjson::dom::element q : reqs) {
    std::string_view id;
    if (q.get_string().get(id) != simdjson::SUCCESS) continue;
    ++counts.requests;
    TRUFFLD_RETURN_IF_ERROR(sink->Request(r.step_id, id, pos++));
  }
  return Status::Ok();
}

Status TreeRows::Impl::Walk(simdjson::dom::object root, RowSink* sink) {
  std::vector<Frame> stack;
  auto push = [&](const TreeNode& n, const Context& ctx) {
    simdjson::dom::array kids;
    if (n.has_children && n.children.get_array().get(kids) == simdjson::SUCCESS && kids.size() > 0) {
      stack.push_back(Frame{kids.begin(), kids.end(), ctx});
    }
  };
  push(ScanTreeNode(root), Context{});  // the step node itself is the steps row
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next == f.last) {
      stack.pop_back();
      continue;
    }
    simdjson::dom::element child = *f.next;
    ++f.next;
    const Context ctx = f.ctx;  // `f` may move when a frame is pushed
    simdjson::dom::object o;
    if (child.get_object().get(o) != simdjson::SUCCESS) {
      bad_node = true;
      continue;
    }
    const TreeNode n = ScanTreeNode(o);
    Result<Context> inner = Visit(n, ctx, sink);
    if (!inner.ok()) return inner.status();
    push(n, *inner);
  }
  return Status::Ok();
}

Result<Context> TreeRows::Impl::Visit(const TreeNode& n, const Context& ctx, RowSink* sink) {
  const Kind kind = KindOf(n.layer);
  if (!n.start || !n.end) {
    bad_node = true;
    return ctx;
  }
  if (kind == Kind::kOther) {
    if (n.layer != "step") ++counts.unknown_layers;
    return ctx;
  }
  const bool host = kind == Kind::kOp || kind == Kind::kCall;
  const NodeKey key{static_cast<uint8_t>(kind), *n.start, *n.end, (host ? n.thread_id : n.stream).value_or(-1),
                    n.correlation_id.value_or(-1), HashBytes(n.name, hash_seed)};
  int64_t& next = next_id[static_cast<int>(kind)];
  bool fresh = false;
  const int64_t id = step->seen.FindOrInsert(key, next, &fresh);
  if (!fresh) ++counts.duplicate_nodes;
  Context inner = ctx;
  if (kind == Kind::kOp) {
    if (fresh) TRUFFLD_RETURN_IF_ERROR(EmitOp(n, ctx, next++, sink));
    inner.op_id = id;
    inner.call_id.reset();
    inner.depth = ctx.depth + 1;
    inner.in_comm = ctx.in_comm || n.layer == "comm";
  } else if (kind == Kind::kCall) {
    if (fresh) {
      CallRow r;
      r.call_id = next++;
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
      TRUFFLD_RETURN_IF_ERROR(sink->Call(r));
    }
    inner.call_id = id;
  } else if (fresh) {
    TRUFFLD_RETURN_IF_ERROR(EmitDevice(n, kind, ctx, next++, sink));
  }
  return inner;
}

Status TreeRows::Impl::EmitOp(const TreeNode& n, const Context& ctx, int64_t id, RowSink* sink) {
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
  simdjson::dom::object p;
  if (n.has_payload && n.payload.get_object().get(p) == simdjson::SUCCESS) {
    simdjson::dom::element e;
    auto num = [&](const char* k) { return p[k].get(e) == simdjson::SUCCESS ? JsonInt(e) : std::nullopt; };
    if (p["comm"].get(e) == simdjson::SUCCESS) c.comm = JsonText(e);
    if (p["op"].get(e) == simdjson::SUCCESS) c.op = JsonText(e);
    c.bytes = num("bytes");
    c.world_size = num("world_size");
    c.comm_rank = num("rank");
    c.root = num("root");
    c.peer = num("peer");
  }
  ++counts.collectives;
  return sink->Collective(c);
}

Status TreeRows::Impl::EmitDevice(const TreeNode& n, Kind kind, const Context& ctx, int64_t id, RowSink* sink) {
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

}  // namespace truffld::exporter
