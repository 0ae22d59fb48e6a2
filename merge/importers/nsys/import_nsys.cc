// Nsight Systems importer: a thin SQLite adapter over `nsys export --type sqlite` databases.
//
// Each table is read with one SELECT whose column list is built from PRAGMA table_info, so
// exports from different nsys versions (columns added, renamed payload fields) work as long as
// the columns the event model needs are there; a missing optional column reads as NULL. The
// enum and id decoding is in import_nsys_map.cc (pure, unit-tested). Times: nsys writes ns since
// the session start; TARGET_INFO_SESSION_START_TIME.utcEpochNs is added so events are on the
// realtime (UTC) clock like the other formats.
#include "truffld/merge/import_nsys.h"

#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "importers/nsys/nsys_map.h"

namespace truffld::merge {
namespace {

// One prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) {
    prepared_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) == SQLITE_OK && s_;
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return prepared_; }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return rc_ = sqlite3_step(s_); }
  int rc() const { return rc_; }
  std::optional<int64_t> Int(int i) const {
    if (sqlite3_column_type(s_, i) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_int64(s_, i);
  }
  int64_t IntOr(int i, int64_t dflt) const { return Int(i).value_or(dflt); }
  std::string_view Text(int i) const {
    const unsigned char* t = sqlite3_column_text(s_, i);
    if (!t) return {};
    return {reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s_, i))};
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  bool prepared_ = false;
  int rc_ = SQLITE_OK;
};

class Reader {
 public:
  Reader(sqlite3* db, TraceFile* tf) : db_(db), tf_(tf) {}

  std::set<std::string> Columns(const std::string& table) {
    std::set<std::string> cols;
    Stmt s(db_, "PRAGMA table_info(\"" + table + "\")");
    while (s.ok() && s.Step() == SQLITE_ROW) cols.emplace(s.Text(1));
    return cols;
  }

  // "a, b, NULL" for wanted columns a, b, c when c is absent.
  static std::string SelectList(const std::set<std::string>& have,
                                std::initializer_list<const char*> wanted) {
    std::string out;
    for (const char* w : wanted) {
      if (!out.empty()) out += ", ";
      out += have.count(w) ? std::string("\"") + w + "\"" : std::string("NULL");
    }
    return out;
  }

  Status LoadStrings() {
    if (Columns("StringIds").empty()) return Status::Ok();
    Stmt s(db_, "SELECT id, value FROM StringIds");
    if (!s.ok()) return Error("StringIds");
    while (s.Step() == SQLITE_ROW) strings_.emplace(s.IntOr(0, -1), tf_->strings.Intern(s.Text(1)));
    return s.rc() == SQLITE_DONE ? Status::Ok() : Error("StringIds");
  }

  StrId Str(std::optional<int64_t> id) const {
    if (!id) return kNoStr;
    auto it = strings_.find(*id);
    return it == strings_.end() ? kNoStr : it->second;
  }

  // Reads one activity table into events; `kind` decides which extra columns matter.
  Status ReadActivity(const std::string& table, EventKind kind) {
    auto have = Columns(table);
    if (have.empty()) return Status::Ok();
    ++tables_read_;
    const bool api = kind == EventKind::kRuntime;
    std::string sql = "SELECT " +
        (api ? SelectList(have, {"start", "end", "globalTid", "correlationId", "nameId",
                                 "returnValue", "name"})
             : SelectList(have, {"start", "end", "globalPid", "correlationId", "demangledName",
                                 "shortName", "deviceId", "streamId", "bytes", "copyKind",
                                 "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                                 "graphNodeId"})) +
        " FROM \"" + table + "\" ORDER BY rowid";
    Stmt s(db_, sql);
    if (!s.ok()) return Error(table);
    uint64_t row = 0;
    while (s.Step() == SQLITE_ROW) {
      ++row;
      auto start = s.Int(0), end = s.Int(1), gid = s.Int(2);
      if (!start || !end || (api && !gid)) {
        Report(table, row, Problem::kNsysMissingField, "row without start/end/globalTid; skipped");
        continue;
      }
      if (*end < *start) {
        Report(table, row, Problem::kNsysNegativeDuration, "end < start; skipped");
        continue;
      }
      Event e;
      e.kind = kind;
      e.start = *start;
      e.end = *end;
      tf_->SetCorrelation(e, s.IntOr(3, kNone));
      if (api) {
        tf_->SetThread(e, nsys::PidOf(*gid), nsys::TidOf(*gid));
        e.name = s.Int(4) ? Str(s.Int(4)) : kNoStr;
        if (e.name == kNoStr && !s.Text(6).empty()) e.name = tf_->strings.Intern(s.Text(6));
        EventExtra x;
        x.return_code = static_cast<int32_t>(s.IntOr(5, 0));
        tf_->SetExtra(e, x);
      } else {
        tf_->SetThread(e, gid ? nsys::PidOf(*gid) : kNone, kNone);
        e.name = Str(s.Int(4));
        if (e.name == kNoStr) e.name = Str(s.Int(5));
        if (e.name == kNoStr) e.name = tf_->strings.Intern(DefaultName(kind));
        EventExtra x;
        x.SetDevice(s.IntOr(6, -1));
        x.stream = static_cast<int32_t>(s.IntOr(7, -1));
        x.bytes = s.IntOr(8, kNone);
        if (auto ck = s.Int(9); ck && !nsys::CopyKindName(*ck).empty())
          x.copy_kind = tf_->strings.Intern(nsys::CopyKindName(*ck));
        for (int i = 0; i < 3; ++i) {
          x.grid[i] = static_cast<int32_t>(s.IntOr(10 + i, 0));
          x.block[i] = static_cast<int32_t>(s.IntOr(13 + i, 0));
        }
        x.graph_node_id = s.IntOr(16, kNone);
        tf_->SetExtra(e, x);
      }
      tf_->AddEvent(e, row);
    }
    return s.rc() == SQLITE_DONE ? Status::Ok() : Error(table);
  }

  Status ReadNvtx() {
    auto have = Columns("NVTX_EVENTS");
    if (have.empty()) return Status::Ok();
    ++tables_read_;
    std::string sql = "SELECT " +
        SelectList(have, {"start", "end", "eventType", "rangeId", "text", "textId", "globalTid",
                          "domainId", "category"}) +
        " FROM NVTX_EVENTS ORDER BY rowid";
    // Pass 1: domain names (rows of type 75), keyed by (pid, domainId).
    std::unordered_map<int64_t, StrId> domains;
    auto domain_key = [](int64_t pid, int64_t dom) { return (pid << 24) ^ dom; };
    {
      Stmt s(db_, sql);
      if (!s.ok()) return Error("NVTX_EVENTS");
      while (s.Step() == SQLITE_ROW)
        if (nsys::ClassifyNvtxRow(s.IntOr(2, -1)) == nsys::NvtxRow::kDomainCreate)
          domains[domain_key(nsys::PidOf(s.IntOr(6, 0)), s.IntOr(7, 0))] = TextOf(s, 4, 5);
    }
    Stmt s(db_, sql);
    if (!s.ok()) return Error("NVTX_EVENTS");
    uint64_t row = 0;
    while (s.Step() == SQLITE_ROW) {
      ++row;
      const int64_t type = s.IntOr(2, -1);
      const nsys::NvtxRow what = nsys::ClassifyNvtxRow(type);
      auto start = s.Int(0), end = s.Int(1), gid = s.Int(6);
      if (what == nsys::NvtxRow::kOther || what == nsys::NvtxRow::kDomainCreate) {
        if (type == 39 && gid)  // "MPI Rank n" thread names give the rank
          if (auto r = nsys::MpiRankFromThreadName(tf_->strings.Get(TextOf(s, 4, 5))))
            mpi_rank_[nsys::PidOf(*gid)] = *r;
        tf_->stats.Add(nsys::NvtxSkipKey(type));
        continue;
      }
      if (!start || !gid) {
        Report("NVTX_EVENTS", row, Problem::kNsysMissingField, "NVTX row without start/globalTid; skipped");
        continue;
      }
      if (end && *end < *start) {
        Report("NVTX_EVENTS", row, Problem::kNsysNegativeDuration, "NVTX range end < start; skipped");
        continue;
      }
      Event e;
      e.start = *start;
      e.end = *start;
      tf_->SetThread(e, nsys::PidOf(*gid), nsys::TidOf(*gid));
      e.name = TextOf(s, 4, 5);
      int64_t range_id = s.IntOr(3, kNone);
      StrId domain = kNoStr;
      if (auto dom = s.Int(7); dom && *dom != 0) {
        auto it = domains.find(domain_key(nsys::PidOf(*gid), *dom));
        domain = it != domains.end() ? it->second : tf_->strings.Intern(std::to_string(*dom));
      }
      StrId category = kNoStr;
      if (auto cat = s.Int(8)) category = tf_->strings.Intern(std::to_string(*cat));
      if (what == nsys::NvtxRow::kMark) {
        e.kind = EventKind::kNvtxMark;
      } else if (end) {
        e.kind = EventKind::kRange;
        e.end = *end;
      } else {
        // Never closed: hand the open half to range reconstruction, which counts and closes it.
        e.kind = what == nsys::NvtxRow::kPushPop ? EventKind::kNvtxPush : EventKind::kNvtxStart;
        if (e.kind == EventKind::kNvtxStart && range_id == kNone) range_id = -2 - row;
      }
      EventExtra x;
      x.range_id = range_id;
      x.category = category;
      x.domain = domain;
      tf_->SetExtra(e, x);
      tf_->AddEvent(e, row);
    }
    return s.rc() == SQLITE_DONE ? Status::Ok() : Error("NVTX_EVENTS");
  }

  void ReadMeta() {
    if (!Columns("TARGET_INFO_SESSION_START_TIME").empty()) {
      Stmt s(db_, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME");
      if (s.ok() && s.Step() == SQLITE_ROW) session_start_ = s.Int(0);
    }
    if (!Columns("TARGET_INFO_SYSTEM_ENV").empty()) {
      Stmt s(db_, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'");
      if (s.ok() && s.Step() == SQLITE_ROW) tf_->meta.host = std::string(s.Text(0));
    }
  }

  int tables_read() const { return tables_read_; }
  std::optional<int64_t> session_start() const { return session_start_; }
  const std::unordered_map<int64_t, int64_t>& mpi_rank() const { return mpi_rank_; }
  const std::string& path() const { return tf_->meta.path; }

 private:
  static std::string_view DefaultName(EventKind k) {
    return k == EventKind::kKernel ? "[unnamed kernel]" : k == EventKind::kMemcpy ? "Memcpy" : "Memset";
  }
  StrId TextOf(const Stmt& s, int text_col, int id_col) {
    if (!s.Text(text_col).empty()) return tf_->strings.Intern(s.Text(text_col));
    StrId id = Str(s.Int(id_col));
    return id != kNoStr ? id : tf_->strings.Intern("");
  }
  void Report(const std::string& table, uint64_t row, Problem kind, const char* msg) {
    tf_->stats.Report(path() + ":" + table + " row " + std::to_string(row), kind, msg);
  }
  Status Error(const std::string& table) {
    return ParseError(path() + ": cannot read table " + table + ": " + sqlite3_errmsg(db_));
  }

  sqlite3* db_;
  TraceFile* tf_;
  std::unordered_map<int64_t, StrId> strings_;
  std::unordered_map<int64_t, int64_t> mpi_rank_;  // pid -> rank
  std::optional<int64_t> session_start_;
  int tables_read_ = 0;
};

}  // namespace

Result<TraceFile> ImportNsys(const std::string& path, const ImportOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return NotFound(path + ": no such file (expected an `nsys export --type sqlite` database)");
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close);
  if (rc != SQLITE_OK)
    return IoError(path + ": cannot open as SQLite: " + (raw ? sqlite3_errmsg(raw) : "out of memory"));
  TraceFile tf;
  tf.meta.path = path;
  tf.meta.format = "nsys";
  tf.meta.clock = ClockId::kRealtime;
  Reader r(db.get(), &tf);
  {
    Stmt probe(db.get(), "SELECT count(*) FROM sqlite_master");
    if (!probe.ok() || probe.Step() != SQLITE_ROW)
      return ParseError(path + ": not an SQLite database: " + sqlite3_errmsg(db.get()));
  }
  TRUFFLD_RETURN_IF_ERROR(r.LoadStrings());
  TRUFFLD_RETURN_IF_ERROR(r.ReadActivity("CUPTI_ACTIVITY_KIND_RUNTIME", EventKind::kRuntime));
  TRUFFLD_RETURN_IF_ERROR(r.ReadActivity("CUPTI_ACTIVITY_KIND_KERNEL", EventKind::kKernel));
  TRUFFLD_RETURN_IF_ERROR(r.ReadActivity("CUPTI_ACTIVITY_KIND_MEMCPY", EventKind::kMemcpy));
  TRUFFLD_RETURN_IF_ERROR(r.ReadActivity("CUPTI_ACTIVITY_KIND_MEMSET", EventKind::kMemset));
  TRUFFLD_RETURN_IF_ERROR(r.ReadNvtx());
  if (r.tables_read() == 0)
    return ParseError(path + ": no CUPTI_ACTIVITY_KIND_* or NVTX_EVENTS table; not an Nsight "
                             "Systems export (nsys export --type sqlite)");
  r.ReadMeta();
  nsys::FinishFile(&tf, r.session_start(), r.mpi_rank());
  tf.SortThreads();
  if (options.strict && !tf.stats.issues.empty()) {
    const IngestIssue& i = tf.stats.issues.front();
    return ParseError(i.where + ": " + ProblemKey(i.kind) + ": " + i.message + " (--strict)");
  }
  return tf;
}

}  // namespace truffld::merge
