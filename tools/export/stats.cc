// RunStats' SQL (see stats.h).
#include "stats.h"

#include <algorithm>

namespace truffld::exporter {

namespace {

constexpr const char* kKernelSummarySql = R"sql(
WITH k AS (SELECT name_id, COUNT(*) AS n, SUM(duration_ns) AS total, AVG(duration_ns) AS avg, MIN(duration_ns) AS lo,
                  MAX(duration_ns) AS hi FROM kernel_rows GROUP BY name_id)
SELECT COALESCE(s.text, '(unnamed)'), k.n, k.total, k.avg, k.lo, k.hi,
       CAST(k.total AS REAL) / NULLIF((SELECT SUM(duration_ns) FROM kernel_rows), 0)
  FROM k LEFT JOIN strings s ON s.string_id = k.name_id ORDER BY k.total DESC, s.text)sql";

// Device intervals clipped to their step, swept per step: depth > 0 between two events is busy.
constexpr const char* kStepIdleSql = R"sql(
WITH iv AS (
  SELECT d.step_id, MAX(d.start_ns, s.start_ns) AS a, MIN(d.end_ns, s.end_ns) AS b
    FROM (SELECT step_id, start_ns, end_ns FROM kernel_rows UNION ALL SELECT step_id, start_ns, end_ns FROM copy_rows) d
    JOIN steps s USING (step_id)),
ev AS (SELECT step_id, a AS t, 1 AS d FROM iv WHERE b > a UNION ALL SELECT step_id, b, -1 FROM iv WHERE b > a),
sw AS (SELECT step_id, t, SUM(d) OVER w AS depth, LEAD(t) OVER w AS nt FROM ev
       WINDOW w AS (PARTITION BY step_id ORDER BY t, d DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)),
busy AS (SELECT step_id, SUM(CASE WHEN depth > 0 THEN nt - t ELSE 0 END) AS busy_ns FROM sw GROUP BY step_id)
SELECT s.rank, s.step_index, s.duration_ns, COALESCE(b.busy_ns, 0)
  FROM steps s LEFT JOIN busy b USING (step_id)
 WHERE s.device_detail = 1 AND s.duration_ns > 0
 ORDER BY s.rank, s.step_index, s.step_id)sql";

// Nearest-rank percentiles: the smallest value whose rank is at least p * n.
constexpr const char* kLaunchLatencySql = R"sql(
WITH lat AS (
  SELECT COALESCE(n.text, '(unnamed)') AS api, k.start_ns - c.start_ns AS v, k.start_ns - c.end_ns AS e
    FROM kernel_rows k JOIN call_rows c ON c.call_id = k.call_id LEFT JOIN strings n ON n.string_id = c.name_id),
r AS (SELECT api, v, ROW_NUMBER() OVER (PARTITION BY api ORDER BY v) AS rn, COUNT(*) OVER (PARTITION BY api) AS n
        FROM lat),
re AS (SELECT api, e, ROW_NUMBER() OVER (PARTITION BY api ORDER BY e) AS rn, COUNT(*) OVER (PARTITION BY api) AS n
         FROM lat),
ends AS (SELECT api, MIN(CASE WHEN rn >= 0.5 * n THEN e END) AS p50e FROM re GROUP BY api)
SELECT r.api, MAX(n), MIN(v), MIN(CASE WHEN rn >= 0.5 * n THEN v END), MIN(CASE WHEN rn >= 0.9 * n THEN v END),
       MIN(CASE WHEN rn >= 0.99 * n THEN v END), MAX(v), MAX(ends.p50e)
  FROM r JOIN ends USING (api) GROUP BY r.api ORDER BY MAX(n) DESC, r.api)sql";

// Per rank, two depths swept together: compute kernels and communication kernels.
constexpr const char* kOverlapSql = R"sql(
WITH k AS (SELECT s.rank, k.start_ns AS a, k.end_ns AS b, k.is_comm AS m
             FROM kernel_rows k JOIN steps s USING (step_id) WHERE k.end_ns > k.start_ns),
ev AS (SELECT rank, a AS t, 1 - m AS dc, m AS dm FROM k UNION ALL SELECT rank, b, m - 1, -m FROM k),
sw AS (SELECT rank, t, SUM(dc) OVER w AS c, SUM(dm) OVER w AS m, LEAD(t) OVER w AS nt FROM ev
       WINDOW w AS (PARTITION BY rank ORDER BY t, dc + dm DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
SELECT rank, SUM(CASE WHEN c > 0 THEN nt - t ELSE 0 END), SUM(CASE WHEN m > 0 THEN nt - t ELSE 0 END),
       SUM(CASE WHEN c > 0 AND m > 0 THEN nt - t ELSE 0 END)
  FROM sw GROUP BY rank ORDER BY rank)sql";

std::optional<int64_t> OptCol(const SqliteStmt& s, int i) {
  return s.IsNull(i) ? std::nullopt : std::optional<int64_t>(s.Int(i));
}

// Runs `sql` and calls `row` for every result row.
template <typename F>
Status ForRows(SqliteDb* db, const char* sql, F row) {
  auto s = db->Prepare(sql);
  if (!s.ok()) return s.status();
  Status st;
  while (s->Next(&st)) row(*s);
  return st;
}

}  // namespace

Result<RunStats> ComputeRunStats(SqliteDb* db) {
  RunStats out;
  TRUFFLD_RETURN_IF_ERROR(ForRows(db, kKernelSummarySql, [&](const SqliteStmt& s) {
    KernelSummary k{s.Text(0), s.Int(1), s.Int(2), s.Int(4), s.Int(5), s.Double(3), s.Double(6)};
    out.kernels += k.count;
    out.kernel_total_ns += k.total_ns;
    out.kernel_summary.push_back(std::move(k));
  }));
  TRUFFLD_RETURN_IF_ERROR(ForRows(db, kStepIdleSql, [&](const SqliteStmt& s) {
    StepIdle st{OptCol(s, 0), s.Int(1), s.Int(2), s.Int(3), 0.0};
    st.idle_share = 1.0 - static_cast<double>(st.busy_ns) / st.duration_ns;
    out.step_idle.push_back(st);
  }));
  SummariseRankIdle(&out);
  TRUFFLD_RETURN_IF_ERROR(ForRows(db, kLaunchLatencySql, [&](const SqliteStmt& s) {
    out.launch_latency.push_back(
        LaunchLatency{s.Text(0), s.Int(1), s.Int(2), s.Int(3), s.Int(4), s.Int(5), s.Int(6), s.Int(7)});
  }));
  Status st = ForRows(db, kOverlapSql, [&](const SqliteStmt& s) {
    RankOverlap r{OptCol(s, 0), s.Int(1), s.Int(2), s.Int(3), 0.0};
    r.overlap_share = r.comm_ns > 0 ? static_cast<double>(r.overlap_ns) / r.comm_ns : 0.0;
    out.overlap.push_back(r);
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace truffld::exporter
