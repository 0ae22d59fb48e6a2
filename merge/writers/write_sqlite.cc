// RunDatabase: truffld-merge --sqlite (see truffld/merge/run_database.h). One thread walks the
// trees as trees.jsonl lists them and turns each node into the NodeView that trees.jsonl's line
// would give truffld-export (the same members present and absent: event_members.h), feeding
// RowBuilder into RowBatches; a TableWriter thread inserts them.
#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "comm_payload.h"
#include "row_batch.h"
#include "row_builder.h"
#include "run_table.h"
#include "schema_sql.h"
#include "sqlite_db.h"
#include "table_writer.h"
#include "truffld/atomic_file.h"
#include "truffld/merge/classify.h"
#include "truffld/merge/run_database.h"
#include "writers/event_members.h"
#include "writers/step_phase.h"
#include "writers/tree_lines.h"

namespace truffld::merge {

namespace {

using rundb::OptInt;

OptInt Present(int64_t v) { return v == kNone ? OptInt() : OptInt(v); }

// What a comm node's payload is parsed from, only when its collectives row is made.
struct PayloadSource {
  const MergeResult* r = nullptr;
  uint32_t node = 0;
  simdjson::dom::parser* parser = nullptr;
};

// The payload trees.jsonl writes for a comm node: its joined or own payload object, else the
// one its name spells (CommPayloadFromName).
rundb::CommPayload CommPayloadOfNode(const void* arg) {
  const auto& s = *static_cast<const PayloadSource*>(arg);
  const Node& n = s.r->nodes[s.node];
  const Event* e = s.r->EventOf(n);
  const TraceFile& f = s.r->files[n.file];
  const StrId payload = n.has_payload ? s.r->Payload(n) : f.Extra(*e).payload;
  if (payload != kNoStr) {
    const std::string_view p = f.strings.Get(payload);
    if (p.size() >= 2 && p.front() == '{' && p.back() == '}') return rundb::CommPayloadFromText(p, s.parser);
    return {};
  }
  const std::string p = CommPayloadFromName(f.strings.Get(e->name));
  return p.empty() ? rundb::CommPayload{} : rundb::CommPayloadFromText(p, s.parser);
}

// The event's members as trees.jsonl writes them (event_members.h).
void EventMembersOf(const MergeResult& r, const Node& n, const Event& e, rundb::NodeView* v) {
  const TraceFile& f = r.files[n.file];
  const EventExtra& x = f.Extra(e);
  if (x.domain != kNoStr) v->domain = f.strings.Get(x.domain);
  if (CarriesCorrelation(n.layer)) v->correlation_id = Present(f.Correlation(e));
  if (e.extra == kNoExtra) return;  // the defaults write nothing
  const EventMembers m = MembersOf(x, n.layer, e.kind == EventKind::kKernel);
  v->cbid = Present(m.cbid);
  v->return_code = Present(m.return_code);
  v->stream = Present(m.stream);
  v->device = Present(m.device);
  v->bytes = Present(m.bytes);
  if (m.copy_kind != kNoStr) v->copy_kind = f.strings.Get(m.copy_kind);
  v->graph_id = Present(m.graph_id);
  v->graph_node_id = Present(m.graph_node_id);
  if (!m.geometry) return;
  for (int i = 0; i < 3; ++i) {
    v->grid[i] = m.grid[i];
    v->block[i] = m.block[i];
  }
}

// Walks the trees in trees.jsonl's order into RowBatches handed to `writer`.
class TreeWalker {
 public:
  TreeWalker(const MergeResult& r, rundb::TableWriter* writer)
      : r_(r), writer_(writer), ids_(/*stable_texts=*/true), name_hash_(r.files.size()) {}

  Status Run(TreeLayout layout) {
    batch_ = std::make_shared<rundb::RowBatch>(&ids_);
    for (const Tree& t : r_.trees) {
      if (layout == TreeLayout::kPerRequest) {
        for (const std::string& q : r_.request_sets[t.requests]) TRUFFLD_RETURN_IF_ERROR(Line(t, q));
        continue;
      }
      for (const auto& group : RequestGroups(r_, t)) TRUFFLD_RETURN_IF_ERROR(Line(t, group.front()));
    }
    return HandOver();
  }
  const rundb::TreeRowCounts& counts() { return rows_.counts(); }

 private:
  // One line of trees.jsonl: tree `t` as request `q` sees it.
  Status Line(const Tree& t, const std::string& q) {
    rundb::TreeRowCounts& c = rows_.counts();
    ++c.lines;
    ++c.trees;
    const FileMeta& m = r_.files[t.file].meta;
    if (rows_.EnterStep(m.rank, t.process_id, t.step_index, ViewName(t.view))) TRUFFLD_RETURN_IF_ERROR(Step(t, m));
    TRUFFLD_RETURN_IF_ERROR(Walk(t.root, q));
    if (batch_->rows() >= rundb::kBatchRows) return HandOver();
    return Status::Ok();
  }

  Status Step(const Tree& t, const FileMeta& m) {
    const Node& root = r_.nodes[t.root];
    const StepWorkload w = StepWorkloadOf(r_, t);
    rundb::StepRow s;
    s.host = m.host;
    s.name = r_.Name(root);
    s.phase = StepPhase(r_, t);
    s.source = m.path;
    if (w.tokens >= 0) s.tokens = w.tokens;
    if (w.ctx >= 0) s.ctx = w.ctx;
    if (w.batch >= 0) s.batch = w.batch;
    s.start = root.start;
    s.end = root.end;
    s.device_detail = t.device_detail;
    TRUFFLD_RETURN_IF_ERROR(rows_.Step(s, batch_.get()));
    for (const std::string& q : r_.request_sets[t.requests]) TRUFFLD_RETURN_IF_ERROR(rows_.Request(q, batch_.get()));
    return Status::Ok();
  }

  // The nodes under `root` that request q sees, depth first (write_trees.cc's NodeJson).
  Status Walk(uint32_t root, const std::string& q) {
    stack_.clear();
    stack_.push_back({r_.nodes[root].first_child, {}});
    while (!stack_.empty()) {
      Frame& f = stack_.back();
      while (f.next != kNoNode && !r_.InRequestSet(r_.Requests(r_.nodes[f.next]), q)) f.next = r_.nodes[f.next].next_sibling;
      if (f.next == kNoNode) {
        stack_.pop_back();
        continue;
      }
      const uint32_t i = f.next;
      f.next = r_.nodes[i].next_sibling;
      const rundb::RowBuilder::Context ctx = f.ctx;  // `f` may move when a frame is pushed
      r_.PrefetchEvent(i + 16);
      Result<rundb::RowBuilder::Context> inner = rows_.Visit(NodeViewOf(i), ctx, batch_.get());
      if (!inner.ok()) return inner.status();
      if (r_.nodes[i].first_child != kNoNode) stack_.push_back({r_.nodes[i].first_child, *inner});
    }
    return Status::Ok();
  }

  rundb::NodeView NodeViewOf(uint32_t i) {
    const Node& n = r_.nodes[i];
    rundb::NodeView v;
    v.name = r_.Name(n);
    v.name_hash = NameHash(n.file, r_.NameId(n), v.name);
    v.layer = LayerName(n.layer);
    v.family = r_.Family(n);
    v.start = n.start;
    v.end = n.end;
    v.thread_id = Present(r_.ThreadOf(n));
    const Event* e = r_.EventOf(n);
    if (!e) return v;
    EventMembersOf(r_, n, *e, &v);
    if (n.layer == Layer::kComm) {
      payload_ = PayloadSource{&r_, i, &parser_};
      v.payload = CommPayloadOfNode;
      v.payload_arg = &payload_;
    }
    return v;
  }

  // RowBuilder::NameHash of string `id` of file `file`, computed once per string.
  uint64_t NameHash(uint32_t file, StrId id, std::string_view name) {
    std::vector<uint64_t>& known = name_hash_[file];
    if (id >= known.size()) known.resize(std::max<size_t>(r_.files[file].strings.size(), size_t{id} + 1), 0);
    if (known[id] == 0) known[id] = rows_.NameHash(name);
    return known[id];
  }

  // Hands the full batch to the writer and starts the next one: the oldest batch handed over,
  // when the writer is done with it (only `sent_` still holds it), else a new one.
  Status HandOver() {
    std::shared_ptr<rundb::RowBatch> next;
    if (!sent_.empty() && sent_.front().use_count() == 1) {
      std::atomic_thread_fence(std::memory_order_acquire);  // the writer's reads happened before
      next = std::move(sent_.front());
      sent_.pop_front();
      next->Clear();
    } else {
      next = std::make_shared<rundb::RowBatch>(&ids_);
      next->ReserveLike(*batch_);
    }
    if (sent_.size() < kKeptBatches) sent_.push_back(batch_);
    std::shared_ptr<const rundb::RowBatch> full = std::move(batch_);
    batch_ = std::move(next);
    if (!writer_->Push(std::move(full))) return Internal("the database writer failed");
    return Status::Ok();
  }

  struct Frame {
    uint32_t next;
    rundb::RowBuilder::Context ctx;
  };
  const MergeResult& r_;
  rundb::TableWriter* writer_;
  rundb::RowBuilder rows_;
  rundb::StringIds ids_;
  static constexpr size_t kKeptBatches = 6;  // more than the writer holds (TableWriter's queue + 1)
  std::shared_ptr<rundb::RowBatch> batch_;
  std::deque<std::shared_ptr<rundb::RowBatch>> sent_;  // handed over, oldest first, for reuse
  std::vector<std::vector<uint64_t>> name_hash_;  // per file, per string id (0: not yet)
  std::vector<Frame> stack_;
  PayloadSource payload_;
  simdjson::dom::parser parser_;
};

}  // namespace

struct RunDatabase::Impl {
  AtomicFile file;
  std::unique_ptr<rundb::SqliteDb> db;
  std::thread thread;
  Status rows_status;
  rundb::TreeRowCounts counts;

  // The rows thread: walks the trees into a TableWriter, which then builds the indexes.
  void Rows(const MergeResult& r, TreeLayout layout) {
    std::vector<std::string> tables;
    for (const rundb::TableIndexes& t : rundb::kTreeTables) tables.push_back(t.table);
    auto writer = rundb::TableWriter::Start(db.get(), tables);
    if (!writer.ok()) {
      rows_status = writer.status();
      return;
    }
    TreeWalker walker(r, writer->get());
    Status walked = walker.Run(layout);
    Status written = (*writer)->Finish();
    counts = walker.counts();
    rows_status = written.ok() ? walked : written;
  }
};

RunDatabase::RunDatabase(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RunDatabase::~RunDatabase() {
  if (impl_ && impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<RunDatabase>> RunDatabase::Start(const MergeResult& result, TreeLayout layout,
                                                         const std::string& path) {
  auto file = AtomicFile::Create(path);
  if (!file.ok()) return file.status();
  TRUFFLD_RETURN_IF_ERROR(file->Close());  // SQLite opens the empty file by its name
  auto impl = std::make_unique<Impl>(Impl{std::move(file).value(), nullptr, {}, {}, {}});
  auto db = rundb::SqliteDb::Open(impl->file.temp_path(), rundb::SqliteDb::Mode::kCreate);
  if (!db.ok()) return db.status();
  impl->db = std::move(db).value();
  TRUFFLD_RETURN_IF_ERROR(impl->db->Exec(rundb::kBulkPragmas));
  TRUFFLD_RETURN_IF_ERROR(impl->db->Exec(rundb::kCreateTables));
  Impl* m = impl.get();
  m->thread = std::thread([m, &result, layout] { m->Rows(result, layout); });
  return std::unique_ptr<RunDatabase>(new RunDatabase(std::move(impl)));
}

Status RunDatabase::Finish(const RunDatabaseInfo& info) {
  Impl& m = *impl_;
  if (m.thread.joinable()) m.thread.join();
  const std::string where = m.file.path() + ": ";
  if (!m.rows_status.ok()) return Status(m.rows_status.code(), where + m.rows_status.message());
  TRUFFLD_RETURN_IF_ERROR(m.db->Exec(rundb::kCreateDiagnosisIndexes));
  rundb::RunTableInfo run;
  run.truffld_version = info.truffld_version;
  run.trees_path = info.trees_path;
  run.summary_path = info.summary_path;
  run.trees = m.counts;
  run.summary_json = info.summary_json;
  TRUFFLD_RETURN_IF_ERROR(rundb::WriteRunTable(m.db.get(), run));
  m.db.reset();  // closed before the rename
  return Status::Ok();
}

Status RunDatabase::Commit() { return impl_->file.Commit(); }

}  // namespace truffld::merge
