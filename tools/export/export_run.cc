// ExportRun: inputs -> temporary SQLite file -> rename (see export_run.h).
#include "export_run.h"

#include <filesystem>

#include "db_sink.h"
#include "parallel_load.h"
#include "diagnosis_rows.h"
#include "read/tree_reader.h"
#include "run_table.h"
#include "schema_sql.h"
#include "sqlite_db.h"
#include "truffld/atomic_file.h"
#include "truffld/byte_source.h"
#include "truffld/cli.h"
#include "truffld/line_reader.h"

namespace truffld::exporter {

namespace fs = std::filesystem;

namespace {

Status ReadTrees(const std::string& path, SqliteDb* db, const ExportOptions& o, ExportResult* out,
                 bool* input_failed) {
  TreeRows rows;
  TRUFFLD_RETURN_IF_ERROR(LoadTreesInParallel(path, db, o.output, WritersFor(o.threads), kBulkPragmas, &rows, input_failed));
  out->trees = rows.counts();
  if (out->trees.trees == 0) {
    std::string why = path + ": no truffld.trees/1 line could be read";
    if (!out->trees.problems.empty()) why += " (first problem: " + out->trees.problems.front() + ")";
    *input_failed = true;
    return ParseError(why);
  }
  return Status::Ok();
}

Status InsertVerdict(const VerdictRow& v, SqliteStmt* verdict, SqliteStmt* faulty, int64_t id) {
  SqliteStmt& s = *verdict;
  s.Bind(1, id);
  s.Bind(2, v.rank);
  s.Bind(3, v.step_index);
  BindText(&s, 4, v.view);
  BindText(&s, 5, v.phase);
  BindText(&s, 6, v.label);
  s.Bind(7, v.duration_ns);
  s.Bind(8, v.start_ns);
  s.Bind(9, v.end_ns);
  s.Bind(10, v.impact_ns);
  s.Bind(11, v.absorbed_ns);
  s.Bind(12, v.waited_ns);
  s.Bind(13, v.waiting_on_rank);
  if (v.p_value) s.BindDouble(14, *v.p_value); else s.BindNull(14);
  BindText(&s, 15, v.stage2_source);
  BindText(&s, 16, v.evidence);
  TRUFFLD_RETURN_IF_ERROR(s.Run());
  int64_t pos = 0;
  for (const FaultyRow& f : v.faulty) {
    SqliteStmt& q = *faulty;
    auto dbl = [&](int i, const std::optional<double>& d) { d ? q.BindDouble(i, *d) : q.BindNull(i); };
    q.Bind(1, id);
    q.Bind(2, pos++);
    BindText(&q, 3, f.family);
    BindText(&q, 4, f.layer);
    BindText(&q, 5, f.method);
    BindText(&q, 6, f.metric);
    BindText(&q, 7, f.basis);
    dbl(8, f.score);
    dbl(9, f.probability);
    q.Bind(10, f.instances);
    q.Bind(11, f.observed_ns);
    q.Bind(12, f.expected_ns);
    q.Bind(13, f.excess_ns);
    dbl(14, f.share);
    q.Bind(15, f.impact_ns);
    q.Bind(16, f.absorbed_ns);
    BindText(&q, 17, f.evidence);
    TRUFFLD_RETURN_IF_ERROR(q.Run());
  }
  return Status::Ok();
}

// Inserts diagnosis.jsonl's verdicts and faulty operators inside the caller's transaction.
Status ReadDiagnosis(const std::string& path, SqliteDb* db, ExportResult* out, bool* input_failed) {
  auto reader = LineReader::Open(path);
  if (!reader.ok()) {
    *input_failed = true;
    return reader.status();
  }
  auto verdict = db->Prepare("INSERT INTO verdicts (verdict_id, rank, step_index, view, phase, label, duration_ns,"
                             " start_ns, end_ns, impact_ns, absorbed_ns, waited_ns, waiting_on_rank, p_value,"
                             " stage2_source, evidence) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!verdict.ok()) return verdict.status();
  auto faulty = db->Prepare("INSERT INTO faulty_ops VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!faulty.ok()) return faulty.status();
  std::string_view line;
  while ((*reader)->Next(&line)) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Result<VerdictRow> v = ParseVerdictLine(line);
    if (!v.ok()) {
      ++out->bad_diagnosis_lines;
      out->problems.push_back((*reader)->Where() + ": " + v.status().message());
      continue;
    }
    ++out->verdicts;
    out->faulty_ops += v->faulty.size();
    TRUFFLD_RETURN_IF_ERROR(InsertVerdict(*v, &*verdict, &*faulty, static_cast<int64_t>(out->verdicts)));
  }
  if (!(*reader)->status().ok()) {
    *input_failed = true;
    return (*reader)->status();
  }
  for (const LineWarning& w : (*reader)->warnings()) out->problems.push_back(w.message);
  TRUFFLD_RETURN_IF_ERROR(db->Exec(
      "UPDATE verdicts SET step_id = (SELECT MIN(s.step_id) FROM steps s WHERE s.rank IS verdicts.rank"
      " AND s.step_index = verdicts.step_index)"));
  return Status::Ok();
}

Result<std::string> ResolveDiagnosis(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return NotFound(dir + ": no such file or directory");
  if (!fs::is_directory(dir, ec)) return dir;
  const fs::path p = fs::path(dir) / "diagnosis.jsonl";
  if (!fs::exists(p, ec)) return NotFound(dir + ": directory has no diagnosis.jsonl; run truffld-diagnose first");
  return p.string();
}

Status WriteRun(SqliteDb* db, const ExportResult& r) {
  RunTableInfo info;
  info.truffld_version = VersionString();
  info.trees_path = r.trees_path;
  info.summary_path = r.summary_path;
  info.diagnosis_path = r.diagnosis_path;
  info.trees = r.trees;
  info.bad_diagnosis_lines = r.bad_diagnosis_lines;
  info.problems = r.problems;
  if (!r.summary_path.empty()) {
    if (auto bytes = ReadWholeFile(r.summary_path); bytes.ok()) info.summary_json = std::string(bytes->view());
  }
  return WriteRunTable(db, info);
}

}  // namespace

Result<ExportResult> ExportRun(const ExportOptions& o, bool* input_failed) {
  ExportResult r;
  *input_failed = true;  // until the inputs are found
  auto trees = diagnose::ResolveTreesPath(o.merge_dir);
  if (!trees.ok()) return trees.status();
  r.trees_path = *trees;
  std::error_code ec;
  const fs::path dir = fs::is_directory(o.merge_dir, ec) ? fs::path(o.merge_dir) : fs::path(*trees).parent_path();
  if (fs::exists(dir / "summary.json", ec)) r.summary_path = (dir / "summary.json").string();
  else r.problems.push_back(dir.string() + ": no summary.json beside the trees (run table has no summary_json)");
  if (!o.diagnose_dir.empty()) {
    auto diag = ResolveDiagnosis(o.diagnose_dir);
    if (!diag.ok()) return diag.status();
    r.diagnosis_path = *diag;
  }
  *input_failed = false;
  auto file = AtomicFile::Create(o.output);
  if (!file.ok()) return file.status();
  TRUFFLD_RETURN_IF_ERROR(file->Close());  // SQLite opens the empty file by its name
  {
    auto db = SqliteDb::Open(file->temp_path(), SqliteDb::Mode::kCreate);
    if (!db.ok()) return db.status();
    SqliteDb* d = db->get();
    TRUFFLD_RETURN_IF_ERROR(d->Exec(kBulkPragmas));
    TRUFFLD_RETURN_IF_ERROR(d->Exec(kCreateTables));
    TRUFFLD_RETURN_IF_ERROR(ReadTrees(r.trees_path, d, o, &r, input_failed));
    TRUFFLD_RETURN_IF_ERROR(d->Exec(kCreateDiagnosisIndexes));
    if (!r.diagnosis_path.empty()) {
      TRUFFLD_RETURN_IF_ERROR(d->Exec("BEGIN"));
      TRUFFLD_RETURN_IF_ERROR(ReadDiagnosis(r.diagnosis_path, d, &r, input_failed));
      TRUFFLD_RETURN_IF_ERROR(d->Exec("COMMIT"));
    }
    TRUFFLD_RETURN_IF_ERROR(WriteRun(d, r));
  }
  TRUFFLD_RETURN_IF_ERROR(file->Commit());
  return r;
}

Result<ExportResult> AddDiagnosis(const std::string& db_path, const std::string& diagnose_dir, bool* input_failed) {
  ExportResult r;
  *input_failed = true;
  auto diag = ResolveDiagnosis(diagnose_dir);
  if (!diag.ok()) return diag.status();
  r.diagnosis_path = *diag;
  auto db = SqliteDb::Open(db_path, SqliteDb::Mode::kReadWrite);
  if (!db.ok()) return db.status();
  SqliteDb* d = db->get();
  auto schema = d->Prepare("SELECT value FROM run WHERE key = 'schema'");
  Status st;
  if (!schema.ok() || !schema->Next(&st) || schema->Text(0) != kSqliteSchemaVersion) {
    return ParseError(db_path + ": not a truffld-export database (" + std::string(kSqliteSchemaVersion) + ")");
  }
  auto held = d->Prepare("SELECT COUNT(*) FROM verdicts");
  if (!held.ok()) return held.status();
  if (!held->Next(&st) || held->Int(0) != 0) return ParseError(db_path + ": already holds a diagnosis (verdicts)");
  *input_failed = false;
  // One transaction (the database's own journal): a failure leaves the database as it was.
  TRUFFLD_RETURN_IF_ERROR(d->Exec("BEGIN"));
  TRUFFLD_RETURN_IF_ERROR(ReadDiagnosis(r.diagnosis_path, d, &r, input_failed));
  auto set = d->Prepare("UPDATE run SET value = ? WHERE key = ?");
  if (!set.ok()) return set.status();
  std::string problems;
  for (const auto& p : r.problems) problems += p + "\n";
  if (!problems.empty()) {  // after the trees' own; none stays NULL, as an export writes it
    auto add = d->Prepare("UPDATE run SET value = COALESCE(value, '') || ? WHERE key = 'problems'");
    if (!add.ok()) return add.status();
    add->Bind(1, std::string_view(problems));
    TRUFFLD_RETURN_IF_ERROR(add->Run());
  }
  for (const auto& [k, v] : {std::pair<const char*, std::string>{"diagnosis_path", r.diagnosis_path},
                             {"bad_diagnosis_lines", std::to_string(r.bad_diagnosis_lines)}}) {
    set->Bind(1, std::string_view(v));
    set->Bind(2, std::string_view(k));
    TRUFFLD_RETURN_IF_ERROR(set->Run());
  }
  TRUFFLD_RETURN_IF_ERROR(d->Exec("COMMIT"));
  return r;
}

}  // namespace truffld::exporter
