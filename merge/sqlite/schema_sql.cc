// The DDL of truffld.sqlite/1 (see schema_sql.h). Times are integer nanoseconds on the merge's
// axis (summary.json's reference clock); a NULL means the trees did not carry the field.
#include "schema_sql.h"

namespace truffld::rundb {

const char* const kCreateTables = R"sql(
PRAGMA application_id = 1953654380;  -- kSqliteApplicationId: 'trfl', the file's header marks it
CREATE TABLE run (              -- what was exported: schema, inputs, counts, problems
  key   TEXT PRIMARY KEY,
  value TEXT
);
CREATE TABLE steps (            -- one row per (rank, process, step): a step range of the merge
  step_id       INTEGER PRIMARY KEY,
  rank          INTEGER,        -- NULL when the process had no rank
  host          TEXT,
  process_id    INTEGER,
  step_index    INTEGER NOT NULL,  -- 0-based ordinal among the rank's steps (trees.jsonl)
  name          TEXT,           -- the step range's name as captured
  phase         TEXT,           -- prefill | decode | mixed | unknown | NULL
  tokens        INTEGER,
  batch         INTEGER,
  ctx           INTEGER,
  start_ns      INTEGER,
  end_ns        INTEGER,
  duration_ns   INTEGER,
  device_detail INTEGER,        -- 0: device activity recorded only in sampled windows
  source        TEXT            -- input file the step came from
);
CREATE TABLE requests (         -- request id x step: the step's request set Q(s)
  step_id    INTEGER NOT NULL REFERENCES steps(step_id),
  request_id TEXT NOT NULL,     -- '*' when the step names no request
  position   INTEGER NOT NULL   -- order in the step's request list
);
CREATE TABLE strings (          -- every name and family once; the *_rows tables refer to them
  string_id INTEGER PRIMARY KEY,
  text      TEXT NOT NULL         -- unique: index strings_text, built after the load
);
CREATE TABLE op_rows (          -- operator instances: frontend, backend, comm and other ranges (view ops)
  op_id        INTEGER PRIMARY KEY,
  step_id      INTEGER NOT NULL REFERENCES steps(step_id),
  view         TEXT NOT NULL,   -- vertical | horizontal (the tree it was first seen in)
  layer        TEXT NOT NULL,   -- the merge's category: frontend_op | backend_op | comm | other
  family_id    INTEGER,         -- strings: normalised name instances are grouped by
  name_id      INTEGER,         -- strings: the name as captured
  domain       TEXT,            -- NVTX domain when not the default
  thread_id    INTEGER,
  start_ns     INTEGER,
  end_ns       INTEGER,
  duration_ns  INTEGER,         -- host time of the range (end - start)
  parent_op_id INTEGER,         -- innermost enclosing operator (NULL at the top)
  depth        INTEGER          -- operator nesting depth, 0 at the top
);
CREATE TABLE call_rows (        -- CUDA runtime and driver calls (view api_calls)
  call_id        INTEGER PRIMARY KEY,
  step_id        INTEGER NOT NULL REFERENCES steps(step_id),
  op_id          INTEGER,       -- innermost enclosing operator (NULL: directly under the step)
  parent_call_id INTEGER,       -- a driver call made inside a runtime call
  layer          TEXT NOT NULL, -- runtime_call | driver_call
  name_id        INTEGER,       -- strings
  family_id      INTEGER,       -- strings
  thread_id      INTEGER,
  correlation_id INTEGER,       -- CUPTI correlation id (links the device activity)
  cbid           INTEGER,
  return_code    INTEGER,
  start_ns       INTEGER,
  end_ns         INTEGER,
  duration_ns    INTEGER
);
CREATE TABLE kernel_rows (      -- kernel executions (view kernels)
  kernel_id      INTEGER PRIMARY KEY,
  step_id        INTEGER NOT NULL REFERENCES steps(step_id),
  op_id          INTEGER,       -- innermost operator above its launch
  call_id        INTEGER,       -- the API call that launched it (NULL when the tree has none)
  name_id        INTEGER,       -- strings
  family_id      INTEGER,       -- strings
  device         INTEGER,
  stream         INTEGER,
  correlation_id INTEGER,
  start_ns       INTEGER,       -- GPU start
  end_ns         INTEGER,
  duration_ns    INTEGER,
  grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
  block_x INTEGER, block_y INTEGER, block_z INTEGER,
  graph_id       INTEGER,       -- CUDA graph it was replayed from
  graph_node_id  INTEGER,
  is_comm        INTEGER NOT NULL  -- 1: under a comm range or an NCCL kernel
);
CREATE TABLE copy_rows (        -- memcpy and memset executions (view copies)
  copy_id        INTEGER PRIMARY KEY,
  step_id        INTEGER NOT NULL REFERENCES steps(step_id),
  op_id          INTEGER,
  call_id        INTEGER,
  kind           TEXT NOT NULL, -- memcpy | memset
  name_id        INTEGER,       -- strings
  copy_kind      TEXT,          -- e.g. HtoD, DtoH, DtoD
  bytes          INTEGER,
  device         INTEGER,
  stream         INTEGER,
  correlation_id INTEGER,
  start_ns       INTEGER,
  end_ns         INTEGER,
  duration_ns    INTEGER,
  graph_id       INTEGER
);
CREATE TABLE sync_rows (        -- device synchronisation records (view syncs)
  sync_id        INTEGER PRIMARY KEY,
  step_id        INTEGER NOT NULL REFERENCES steps(step_id),
  op_id          INTEGER,
  call_id        INTEGER,
  name_id        INTEGER,       -- strings
  device         INTEGER,
  stream         INTEGER,
  correlation_id INTEGER,
  start_ns       INTEGER,
  end_ns         INTEGER,
  duration_ns    INTEGER
);
CREATE TABLE collectives (      -- comm ranges with their NVTX payload
  op_id      INTEGER PRIMARY KEY REFERENCES op_rows(op_id),
  step_id    INTEGER NOT NULL REFERENCES steps(step_id),
  rank       INTEGER,
  family     TEXT,              -- the comm range's family, e.g. ncclAllReduce
  comm       TEXT,              -- communicator from the payload (NCCL's: a process-local handle)
  comm_rank  INTEGER,           -- the rank within the communicator (payload "rank")
  op         TEXT,              -- the payload's operation, e.g. the reduction sum
  bytes      INTEGER,
  world_size INTEGER,           -- participants the payload names
  root       INTEGER,
  peer       INTEGER,
  start_ns   INTEGER,
  end_ns     INTEGER
);
CREATE TABLE verdicts (         -- truffld-diagnose: one row per judged (rank, step, view) unit
  verdict_id      INTEGER PRIMARY KEY,
  step_id         INTEGER REFERENCES steps(step_id),  -- NULL when the trees lack the step
  rank            INTEGER,
  step_index      INTEGER,
  view            TEXT,
  phase           TEXT,
  label           TEXT,         -- normal | abnormal | insufficient_evidence
  duration_ns     INTEGER,
  start_ns        INTEGER,
  end_ns          INTEGER,
  impact_ns       INTEGER,
  absorbed_ns     INTEGER,
  waited_ns       INTEGER,
  waiting_on_rank INTEGER,
  p_value         REAL,
  stage2_source   TEXT,
  evidence        TEXT
);
CREATE TABLE faulty_ops (       -- truffld-diagnose: the faulty operators of each abnormal unit
  verdict_id  INTEGER NOT NULL REFERENCES verdicts(verdict_id),
  position    INTEGER NOT NULL, -- order in the unit's faulty list (largest first)
  family      TEXT,
  layer       TEXT,
  method      TEXT,
  metric      TEXT,             -- host | device
  basis       TEXT,             -- tp_peers | similar_steps | layers
  score       REAL,
  probability REAL,
  instances   INTEGER,
  observed_ns INTEGER,
  expected_ns INTEGER,
  excess_ns   INTEGER,
  share       REAL,             -- excess / step duration
  impact_ns   INTEGER,          -- step time saved without the excess (what-if replay)
  absorbed_ns INTEGER,
  evidence    TEXT
);
CREATE VIEW ops AS             -- op_rows with their names
  SELECT o.op_id, o.step_id, o.view, o.layer, f.text AS family, n.text AS name, o.domain, o.thread_id,
         o.start_ns, o.end_ns, o.duration_ns, o.parent_op_id, o.depth, o.family_id, o.name_id
    FROM op_rows o LEFT JOIN strings f ON f.string_id = o.family_id LEFT JOIN strings n ON n.string_id = o.name_id;
CREATE VIEW api_calls AS       -- call_rows with their names
  SELECT c.call_id, c.step_id, c.op_id, c.parent_call_id, c.layer, n.text AS name, f.text AS family, c.thread_id,
         c.correlation_id, c.cbid, c.return_code, c.start_ns, c.end_ns, c.duration_ns, c.name_id, c.family_id
    FROM call_rows c LEFT JOIN strings n ON n.string_id = c.name_id LEFT JOIN strings f ON f.string_id = c.family_id;
CREATE VIEW kernels AS         -- kernel_rows with their names
  SELECT k.kernel_id, k.step_id, k.op_id, k.call_id, n.text AS name, f.text AS family, k.device, k.stream,
         k.correlation_id, k.start_ns, k.end_ns, k.duration_ns, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y,
         k.block_z, k.graph_id, k.graph_node_id, k.is_comm, k.name_id, k.family_id
    FROM kernel_rows k LEFT JOIN strings n ON n.string_id = k.name_id LEFT JOIN strings f ON f.string_id = k.family_id;
CREATE VIEW copies AS          -- copy_rows with their names
  SELECT c.copy_id, c.step_id, c.op_id, c.call_id, c.kind, n.text AS name, c.copy_kind, c.bytes, c.device, c.stream,
         c.correlation_id, c.start_ns, c.end_ns, c.duration_ns, c.graph_id, c.name_id
    FROM copy_rows c LEFT JOIN strings n ON n.string_id = c.name_id;
CREATE VIEW syncs AS           -- sync_rows with their names
  SELECT y.sync_id, y.step_id, y.op_id, y.call_id, n.text AS name, y.device, y.stream, y.correlation_id, y.start_ns,
         y.end_ns, y.duration_ns, y.name_id
    FROM sync_rows y LEFT JOIN strings n ON n.string_id = y.name_id;
CREATE VIEW device_activity AS  -- every kernel, copy and memset with its rank
  SELECT s.rank, d.step_id, 'kernel' AS kind, d.name, d.device, d.stream, d.start_ns, d.end_ns, d.duration_ns
    FROM kernels d JOIN steps s USING (step_id)
  UNION ALL
  SELECT s.rank, d.step_id, d.kind, d.name, d.device, d.stream, d.start_ns, d.end_ns, d.duration_ns
    FROM copies d JOIN steps s USING (step_id);
CREATE VIEW collective_groups AS  -- the n-th collective of a step on every rank that ran it
  SELECT step_index, seq, MIN(family) AS family, MIN(op) AS op, MAX(bytes) AS bytes, MAX(world_size) AS world_size,
         COUNT(DISTINCT rank) AS participants, GROUP_CONCAT(rank) AS ranks,
         MIN(start_ns) AS first_start_ns, MAX(start_ns) AS last_start_ns, MAX(end_ns) AS last_end_ns
    FROM (SELECT c.*, s.step_index,
                 ROW_NUMBER() OVER (PARTITION BY c.rank, s.step_index ORDER BY c.start_ns, c.op_id) AS seq
            FROM collectives c JOIN steps s USING (step_id))
   GROUP BY step_index, seq;
)sql";

const TableIndexes kTreeTables[kTreeTableCount] = {
    {"strings", "CREATE UNIQUE INDEX strings_text ON strings(text);"},
    {"steps", "CREATE INDEX steps_rank_step ON steps(rank, step_index);"},
    {"requests", "CREATE INDEX requests_step ON requests(step_id);"
                 "CREATE INDEX requests_request ON requests(request_id);"},
    {"op_rows", "CREATE INDEX op_rows_step ON op_rows(step_id);"
                "CREATE INDEX op_rows_family ON op_rows(family_id);"},
    {"call_rows", "CREATE INDEX call_rows_step ON call_rows(step_id);"},
    {"kernel_rows", "CREATE INDEX kernel_rows_step ON kernel_rows(step_id);"
                    "CREATE INDEX kernel_rows_name ON kernel_rows(name_id);"},
    {"copy_rows", "CREATE INDEX copy_rows_step ON copy_rows(step_id);"},
    {"sync_rows", ""},
    {"collectives", "CREATE INDEX collectives_comm ON collectives(comm, rank, start_ns);"},
};

const char* const kCreateDiagnosisIndexes = R"sql(
CREATE INDEX verdicts_unit ON verdicts(rank, step_index, view);
CREATE INDEX faulty_ops_verdict ON faulty_ops(verdict_id);
CREATE INDEX faulty_ops_family ON faulty_ops(family);
)sql";

std::string TreeIndexSql() {
  std::string sql;
  for (const TableIndexes& t : kTreeTables) sql += t.sql;
  return sql;
}

}  // namespace truffld::rundb
