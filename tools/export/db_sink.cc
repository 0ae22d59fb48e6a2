// DbSink: TreeRows' rows -> INSERTs (see db_sink.h).
#include "db_sink.h"

namespace truffld::exporter {

void BindText(SqliteStmt* s, int i, std::string_view v) {
  if (v.empty()) s->BindNull(i);
  else s->Bind(i, v);
}

Result<std::unique_ptr<DbSink>> DbSink::Create(SqliteDb* db) {
  std::unique_ptr<DbSink> k(new DbSink());
  struct Item {
    SqliteStmt* stmt;
    const char* sql;
  };
  const Item items[] = {
      {&k->string_, "INSERT INTO strings VALUES (?,?)"},
      {&k->step_, "INSERT INTO steps VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"},
      {&k->request_, "INSERT INTO requests VALUES (?,?,?)"},
      {&k->op_, "INSERT INTO op_rows VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"},
      {&k->call_, "INSERT INTO call_rows VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"},
      {&k->kernel_, "INSERT INTO kernel_rows VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"},
      {&k->copy_, "INSERT INTO copy_rows VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"},
      {&k->sync_, "INSERT INTO sync_rows VALUES (?,?,?,?,?,?,?,?,?,?,?)"},
      {&k->collective_, "INSERT INTO collectives VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"},
  };
  for (const Item& it : items) {
    auto s = db->Prepare(it.sql);
    if (!s.ok()) return s.status();
    *it.stmt = std::move(s).value();
  }
  return k;
}

Status DbSink::String(int64_t id, std::string_view text) {
  string_.Bind(1, id);
  string_.Bind(2, text);
  return string_.Run();
}

Status DbSink::BindString(SqliteStmt* s, int i, std::string_view text, int64_t id) {
  if (id > 0) {
    s->Bind(i, id);
    return Status::Ok();
  }
  if (text.empty()) {
    s->BindNull(i);
    return Status::Ok();
  }
  auto it = ids_.find(text);
  if (it == ids_.end()) {
    it = ids_.emplace(std::string(text), static_cast<int64_t>(ids_.size()) + 1).first;
    string_.Bind(1, it->second);
    string_.Bind(2, text);
    TRUFFLD_RETURN_IF_ERROR(string_.Run());
  }
  s->Bind(i, it->second);
  return Status::Ok();
}

Status DbSink::Step(const StepRow& r) {
  SqliteStmt& s = step_;
  s.Bind(1, r.step_id);
  s.Bind(2, r.rank);
  BindText(&s, 3, r.host);
  s.Bind(4, r.process_id);
  s.Bind(5, r.step_index);
  BindText(&s, 6, r.name);
  BindText(&s, 7, r.phase);
  s.Bind(8, r.tokens);
  s.Bind(9, r.batch);
  s.Bind(10, r.ctx);
  s.Bind(11, r.start);
  s.Bind(12, r.end);
  s.Bind(13, r.end - r.start);
  s.Bind(14, int64_t{r.device_detail ? 1 : 0});
  BindText(&s, 15, r.source);
  return s.Run();
}

Status DbSink::Request(int64_t step_id, std::string_view request_id, int64_t position) {
  request_.Bind(1, step_id);
  request_.Bind(2, request_id);
  request_.Bind(3, position);
  return request_.Run();
}

Status DbSink::Op(const OpRow& r) {
  SqliteStmt& s = op_;
  s.Bind(1, r.op_id);
  s.Bind(2, r.step_id);
  s.Bind(3, r.view);
  s.Bind(4, r.layer);
  TRUFFLD_RETURN_IF_ERROR(BindString(&s, 5, r.family, r.family_id));
  TRUFFLD_RETURN_IF_ERROR(BindString(&s, 6, r.name, r.name_id));
  BindText(&s, 7, r.domain);
  s.Bind(8, r.thread_id);
  s.Bind(9, r.start);
  s.Bind(10, r.end);
  s.Bind(11, r.end - r.start);
  s.Bind(12, r.parent_op_id);
  s.Bind(13, r.depth);
  return s.Run();
}

Status DbSink::Call(const CallRow& r) {
  SqliteStmt& s = call_;
  s.Bind(1, r.call_id);
  s.Bind(2, r.step_id);
  s.Bind(3, r.op_id);
  s.Bind(4, r.parent_call_id);
  s.Bind(5, r.layer);
  TRUFFLD_RETURN_IF_ERROR(BindString(&s, 6, r.name, r.name_id));
  TRUFFLD_RETURN_IF_ERROR(BindString(&s, 7, r.family, r.family_id));
  s.Bind(8, r.thread_id);
  s.Bind(9, r.correlation_id);
  s.Bind(10, r.cbid);
  s.Bind(11, r.return_code);
  s.Bind(12, r.start);
  s.Bind(13, r.end);
  s.Bind(14, r.end - r.start);
  return s.Run();
}

Status DbSink::Device(const DeviceRow& r) {
  const bool kernel = r.layer == "kernel", sync = r.layer == "sync";
  SqliteStmt& s = kernel ? kernel_ : sync ? sync_ : copy_;
  int i = 1;
  s.Bind(i++, r.id);
  s.Bind(i++, r.step_id);
  s.Bind(i++, r.op_id);
  s.Bind(i++, r.call_id);
  if (!kernel && !sync) s.Bind(i++, r.layer);
  TRUFFLD_RETURN_IF_ERROR(BindString(&s, i++, r.name, r.name_id));
  if (kernel) TRUFFLD_RETURN_IF_ERROR(BindString(&s, i++, r.family, r.family_id));
  if (!kernel && !sync) {
    BindText(&s, i++, r.copy_kind);
    s.Bind(i++, r.bytes);
  }
  s.Bind(i++, r.device);
  s.Bind(i++, r.stream);
  s.Bind(i++, r.correlation_id);
  s.Bind(i++, r.start);
  s.Bind(i++, r.end);
  s.Bind(i++, r.end - r.start);
  if (kernel) {
    for (const OptInt& g : r.grid) s.Bind(i++, g);
    for (const OptInt& b : r.block) s.Bind(i++, b);
    s.Bind(i++, r.graph_id);
    s.Bind(i++, r.graph_node_id);
    s.Bind(i++, int64_t{r.is_comm ? 1 : 0});
  } else if (!sync) {
    s.Bind(i++, r.graph_id);
  }
  return s.Run();
}

Status DbSink::Collective(const CollectiveRow& r) {
  SqliteStmt& s = collective_;
  s.Bind(1, r.op_id);
  s.Bind(2, r.step_id);
  s.Bind(3, r.rank);
  BindText(&s, 4, r.family);
  if (r.comm) s.Bind(5, *r.comm); else s.BindNull(5);
  s.Bind(6, r.comm_rank);
  if (r.op) s.Bind(7, *r.op); else s.BindNull(7);
  s.Bind(8, r.bytes);
  s.Bind(9, r.world_size);
  s.Bind(10, r.root);
  s.Bind(11, r.peer);
  s.Bind(12, r.start);
  s.Bind(13, r.end);
  return s.Run();
}

}  // namespace truffld::exporter
