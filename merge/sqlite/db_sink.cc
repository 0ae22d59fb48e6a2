// DbSink: TreeRows' rows -> multi-row INSERTs (see db_sink.h).
#include "db_sink.h"

#include <algorithm>

namespace truffld::rundb {

void BindText(SqliteStmt* s, int i, std::string_view v) {
  if (v.empty()) s->BindNull(i);
  else s->Bind(i, v);
}

Result<std::unique_ptr<DbSink>> DbSink::Create(SqliteDb* db, const std::vector<std::string>& tables) {
  std::unique_ptr<DbSink> k(new DbSink());
  struct Item {
    BulkInsert* insert;
    const char* table;
    int columns;
  };
  const Item items[] = {
      {&k->string_, "strings", 2},     {&k->step_, "steps", 15},         {&k->request_, "requests", 3},
      {&k->op_, "op_rows", 13},        {&k->call_, "call_rows", 14},     {&k->kernel_, "kernel_rows", 21},
      {&k->copy_, "copy_rows", 15},    {&k->sync_, "sync_rows", 11},     {&k->collective_, "collectives", 13},
  };
  for (const Item& it : items) {
    if (!tables.empty() && std::find(tables.begin(), tables.end(), it.table) == tables.end()) continue;
    auto s = BulkInsert::Create(db, it.table, it.columns);
    if (!s.ok()) return s.status();
    *it.insert = std::move(s).value();
  }
  return k;
}

Status DbSink::Flush() {
  for (BulkInsert* b : {&string_, &step_, &request_, &op_, &call_, &kernel_, &copy_, &sync_, &collective_}) {
    if (b->active()) TRUFFLD_RETURN_IF_ERROR(b->Flush());
  }
  return Status::Ok();
}

Status DbSink::String(int64_t id, std::string_view text) {
  if (!string_.active()) return Status::Ok();
  string_.Int(id);
  string_.TextKeepEmpty(text);
  return string_.EndRow();
}

Status DbSink::AddString(BulkInsert* s, std::string_view text, int64_t id) {
  if (id > 0) {
    s->Int(id);
    return Status::Ok();
  }
  if (text.empty()) {
    s->Null();
    return Status::Ok();
  }
  if (!string_.active()) return Internal("strings: a name that came without its id to a sink without strings");
  auto it = ids_.find(text);
  if (it == ids_.end()) {
    it = ids_.emplace(std::string(text), static_cast<int64_t>(ids_.size()) + 1).first;
    TRUFFLD_RETURN_IF_ERROR(String(it->second, text));
  }
  s->Int(it->second);
  return Status::Ok();
}

Status DbSink::Step(const StepRow& r) {
  BulkInsert& s = step_;
  if (!s.active()) return Status::Ok();
  s.Int(r.step_id);
  s.Int(r.rank);
  s.Text(r.host);
  s.Int(r.process_id);
  s.Int(r.step_index);
  s.Text(r.name);
  s.Text(r.phase);
  s.Int(r.tokens);
  s.Int(r.batch);
  s.Int(r.ctx);
  s.Int(r.start);
  s.Int(r.end);
  s.Int(r.end - r.start);
  s.Int(int64_t{r.device_detail ? 1 : 0});
  s.Text(r.source);
  return s.EndRow();
}

Status DbSink::Request(int64_t step_id, std::string_view request_id, int64_t position) {
  if (!request_.active()) return Status::Ok();
  request_.Int(step_id);
  request_.TextKeepEmpty(request_id);
  request_.Int(position);
  return request_.EndRow();
}

Status DbSink::Op(const OpRow& r) {
  BulkInsert& s = op_;
  if (!s.active()) return Status::Ok();
  s.Int(r.op_id);
  s.Int(r.step_id);
  s.Text(r.view);
  s.Text(r.layer);
  TRUFFLD_RETURN_IF_ERROR(AddString(&s, r.family, r.family_id));
  TRUFFLD_RETURN_IF_ERROR(AddString(&s, r.name, r.name_id));
  s.Text(r.domain);
  s.Int(r.thread_id);
  s.Int(r.start);
  s.Int(r.end);
  s.Int(r.end - r.start);
  s.Int(r.parent_op_id);
  s.Int(r.depth);
  return s.EndRow();
}

Status DbSink::Call(const CallRow& r) {
  BulkInsert& s = call_;
  if (!s.active()) return Status::Ok();
  s.Int(r.call_id);
  s.Int(r.step_id);
  s.Int(r.op_id);
  s.Int(r.parent_call_id);
  s.Text(r.layer);
  TRUFFLD_RETURN_IF_ERROR(AddString(&s, r.name, r.name_id));
  TRUFFLD_RETURN_IF_ERROR(AddString(&s, r.family, r.family_id));
  s.Int(r.thread_id);
  s.Int(r.correlation_id);
  s.Int(r.cbid);
  s.Int(r.return_code);
  s.Int(r.start);
  s.Int(r.end);
  s.Int(r.end - r.start);
  return s.EndRow();
}

Status DbSink::Device(const DeviceRow& r) {
  const bool kernel = r.layer == "kernel", sync = r.layer == "sync";
  BulkInsert& s = kernel ? kernel_ : sync ? sync_ : copy_;
  if (!s.active()) return Status::Ok();
  s.Int(r.id);
  s.Int(r.step_id);
  s.Int(r.op_id);
  s.Int(r.call_id);
  if (!kernel && !sync) s.Text(r.layer);
  TRUFFLD_RETURN_IF_ERROR(AddString(&s, r.name, r.name_id));
  if (kernel) TRUFFLD_RETURN_IF_ERROR(AddString(&s, r.family, r.family_id));
  if (!kernel && !sync) {
    s.Text(r.copy_kind);
    s.Int(r.bytes);
  }
  s.Int(r.device);
  s.Int(r.stream);
  s.Int(r.correlation_id);
  s.Int(r.start);
  s.Int(r.end);
  s.Int(r.end - r.start);
  if (kernel) {
    for (const OptInt& g : r.grid) s.Int(g);
    for (const OptInt& b : r.block) s.Int(b);
    s.Int(r.graph_id);
    s.Int(r.graph_node_id);
    s.Int(int64_t{r.is_comm ? 1 : 0});
  } else if (!sync) {
    s.Int(r.graph_id);
  }
  return s.EndRow();
}

Status DbSink::Collective(const CollectiveRow& r) {
  BulkInsert& s = collective_;
  if (!s.active()) return Status::Ok();
  s.Int(r.op_id);
  s.Int(r.step_id);
  s.Int(r.rank);
  s.Text(r.family);
  if (r.comm) s.TextKeepEmpty(*r.comm); else s.Null();
  s.Int(r.comm_rank);
  if (r.op) s.TextKeepEmpty(*r.op); else s.Null();
  s.Int(r.bytes);
  s.Int(r.world_size);
  s.Int(r.root);
  s.Int(r.peer);
  s.Int(r.start);
  s.Int(r.end);
  return s.EndRow();
}

}  // namespace truffld::rundb
