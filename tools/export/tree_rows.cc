// TreeRows: walks each trees.jsonl line with simdjson's DOM and feeds its nodes to a RowBuilder
// (see tree_rows.h).
#include "tree_rows.h"

#include <simdjson.h>

#include <vector>

#include "tree_node.h"

namespace truffld::exporter {

namespace {

// JSON levels a tree line may nest, as the diagnoser admits (two per range).
constexpr size_t kMaxDepth = size_t{1} << 14;

struct Frame {
  simdjson::dom::array::iterator next, last;
  RowBuilder::Context ctx;
};

CommPayload PayloadOfElement(const void* arg) {
  simdjson::dom::object p;
  if (static_cast<const simdjson::dom::element*>(arg)->get_object().get(p) != simdjson::SUCCESS) return {};
  return CommPayloadOf(p);
}

}  // namespace

struct TreeRows::Impl {
  Impl() {
    const simdjson::error_code err = parser.allocate(simdjson::dom::MINIMAL_DOCUMENT_CAPACITY, kMaxDepth);
    (void)err;  // on failure parse() allocates with the default depth
  }
  simdjson::dom::parser parser;
  RowBuilder rows;
  bool bad_child = false;  // a child that is not an object, in the current line

  void Problem(std::string message) {
    TreeRowCounts& c = rows.counts();
    if (c.problems.size() < TreeRowCounts::kMaxProblems) c.problems.push_back(std::move(message));
  }
  Result<bool> Line(simdjson::dom::object o, RowSink* sink, std::string* why);
  Status EnterStep(simdjson::dom::object o, RowSink* sink);
  Status Walk(simdjson::dom::object root, RowSink* sink);
};

TreeRows::TreeRows() : impl_(std::make_unique<Impl>()) {}
TreeRows::~TreeRows() = default;
const TreeRowCounts& TreeRows::counts() const { return impl_->rows.counts(); }
void TreeRows::AddProblem(std::string message) { impl_->Problem(std::move(message)); }

Status TreeRows::AddLine(std::string_view line, std::string_view file, long long line_no, RowSink* sink) {
  Impl& m = *impl_;
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return Status::Ok();
  TreeRowCounts& counts = m.rows.counts();
  ++counts.lines;
  const std::string where = std::string(file) + ":" + std::to_string(line_no) + ": ";
  simdjson::dom::element doc;
  if (auto err = m.parser.parse(line.data(), line.size()).get(doc); err != simdjson::SUCCESS) {
    ++counts.bad_lines;
    m.Problem(where + "not a JSON object (" + simdjson::error_message(err) + ")");
    return Status::Ok();
  }
  simdjson::dom::object o;
  std::string why;
  Result<bool> ok = doc.get_object().get(o) == simdjson::SUCCESS ? m.Line(o, sink, &why) : Result<bool>(false);
  if (!ok.ok()) return ok.status();
  if (!*ok) {
    ++counts.bad_lines;
    m.Problem(where + (why.empty() ? "not a JSON object" : why));
    return Status::Ok();
  }
  ++counts.trees;
  if (m.rows.TakeBadNode() || m.bad_child) m.Problem(where + "nodes without integer start/end were skipped with their subtrees");
  return Status::Ok();
}

Result<bool> TreeRows::Impl::Line(simdjson::dom::object o, RowSink* sink, std::string* why) {
  std::string_view schema, view;
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
  const OptInt rank = o["rank"].get(e) == simdjson::SUCCESS ? JsonInt(e) : std::nullopt;
  const OptInt pid = o["process_id"].get(e) == simdjson::SUCCESS ? JsonInt(e) : std::nullopt;
  (void)rows.TakeBadNode();
  bad_child = false;
  if (rows.EnterStep(rank, pid, *step_index, view)) TRUFFLD_RETURN_IF_ERROR(EnterStep(o, sink));
  TRUFFLD_RETURN_IF_ERROR(Walk(root, sink));
  return true;
}

// The new step's row and requests from the line's members.
Status TreeRows::Impl::EnterStep(simdjson::dom::object o, RowSink* sink) {
  simdjson::dom::element e;
  StepRow r;
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
  TRUFFLD_RETURN_IF_ERROR(rows.Step(r, sink));
  simdjson::dom::array reqs;
  if (o["requests"].get_array().get(reqs) != simdjson::SUCCESS) return Status::Ok();
  for (simdjson::dom::element q : reqs) {
    std::string_view id;
    if (q.get_string().get(id) != simdjson::SUCCESS) continue;
    TRUFFLD_RETURN_IF_ERROR(rows.Request(id, sink));
  }
  return Status::Ok();
}

Status TreeRows::Impl::Walk(simdjson::dom::object root, RowSink* sink) {
  std::vector<Frame> stack;
  auto push = [&](const TreeNode& n, const RowBuilder::Context& ctx) {
    simdjson::dom::array kids;
    if (n.has_children && n.children.get_array().get(kids) == simdjson::SUCCESS && kids.size() > 0) {
      stack.push_back(Frame{kids.begin(), kids.end(), ctx});
    }
  };
  push(ScanTreeNode(root), RowBuilder::Context{});  // the step node itself is the steps row
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next == f.last) {
      stack.pop_back();
      continue;
    }
    simdjson::dom::element child = *f.next;
    ++f.next;
    const RowBuilder::Context ctx = f.ctx;  // `f` may move when a frame is pushed
    simdjson::dom::object o;
    if (child.get_object().get(o) != simdjson::SUCCESS) {
      bad_child = true;
      continue;
    }
    TreeNode n = ScanTreeNode(o);
    if (n.has_payload) {
      n.view.payload = PayloadOfElement;
      n.view.payload_arg = &n.payload;
    }
    Result<RowBuilder::Context> inner = rows.Visit(n.view, ctx, sink);
    if (!inner.ok()) return inner.status();
    push(n, *inner);
  }
  return Status::Ok();
}

}  // namespace truffld::exporter
