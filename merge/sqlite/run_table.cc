// WriteRunTable: the `run` table's key/value rows (see run_table.h).
#include "run_table.h"

#include <utility>

#include "db_sink.h"
#include "schema_sql.h"

namespace truffld::rundb {

Status WriteRunTable(SqliteDb* db, const RunTableInfo& r) {
  auto s = db->Prepare("INSERT INTO run VALUES (?, ?)");
  if (!s.ok()) return s.status();
  const TreeRowCounts& c = r.trees;
  std::string problems;
  for (const auto& p : c.problems) problems += p + "\n";
  for (const auto& p : r.problems) problems += p + "\n";
  const std::pair<const char*, std::string> kv[] = {
      {"schema", kSqliteSchemaVersion}, {"truffld_version", r.truffld_version},
      {"trees_path", r.trees_path}, {"summary_path", r.summary_path}, {"diagnosis_path", r.diagnosis_path},
      {"tree_lines", std::to_string(c.lines)}, {"trees", std::to_string(c.trees)},
      {"bad_tree_lines", std::to_string(c.bad_lines)}, {"duplicate_nodes", std::to_string(c.duplicate_nodes)},
      {"unknown_layer_nodes", std::to_string(c.unknown_layers)},
      {"reopened_steps", std::to_string(c.reopened_steps)},
      {"bad_diagnosis_lines", std::to_string(r.bad_diagnosis_lines)}, {"problems", problems},
      {"summary_json", r.summary_json}};
  for (const auto& [k, v] : kv) {
    s->Bind(1, std::string_view(k));
    BindText(&*s, 2, v);
    TRUFFLD_RETURN_IF_ERROR(s->Run());
  }
  return Status::Ok();
}

}  // namespace truffld::rundb
