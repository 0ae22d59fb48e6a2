// Unit tests of truffld-export's pure pieces (TreeRows, ParseVerdictLine, FormatTable) and of the
// summaries' SQL on a small database whose answers are counted by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bulk_insert.h"
#include "comm_payload.h"
#include "db_sink.h"
#include "diagnosis_rows.h"
#include "node_set.h"
#include "parallel_load.h"
#include "row_builder.h"
#include "row_batches.h"
#include "schema_sql.h"
#include "sqlite_db.h"
#include "stats.h"
#include "stats_format.h"
#include "tree_rows.h"

namespace truffld::exporter {
namespace {

// Keeps what TreeRows emits (strings copied).
struct CollectSink : RowSink {
  std::vector<StepRow> steps;
  std::vector<std::string> requests, op_names, call_names, device_names;
  std::vector<OpRow> ops;
  std::vector<CallRow> calls;
  std::vector<DeviceRow> devices;
  std::vector<CollectiveRow> collectives;
  Status Step(const StepRow& r) override { steps.push_back(r); return Status::Ok(); }
  Status Request(int64_t, std::string_view id, int64_t) override { requests.emplace_back(id); return Status::Ok(); }
  Status Op(const OpRow& r) override { ops.push_back(r); op_names.emplace_back(r.name); return Status::Ok(); }
  Status Call(const CallRow& r) override { calls.push_back(r); call_names.emplace_back(r.name); return Status::Ok(); }
  Status Device(const DeviceRow& r) override {
    devices.push_back(r);
    device_names.emplace_back(r.name);
    return Status::Ok();
  }
  Status Collective(const CollectiveRow& r) override { collectives.push_back(r); return Status::Ok(); }
  std::vector<std::pair<int64_t, std::string>> strings;
  Status String(int64_t id, std::string_view text) override {
    strings.emplace_back(id, std::string(text));
    return Status::Ok();
  }
};

std::string Node(const std::string& layer, const std::string& name, int64_t s, int64_t e, const std::string& extra = "",
                 const std::string& kids = "") {
  std::string j = "{\"name\":\"" + name + "\",\"layer\":\"" + layer + "\",\"family\":\"" + name +
                  "\",\"start\":" + std::to_string(s) + ",\"end\":" + std::to_string(e) + extra;
  if (!kids.empty()) j += ",\"children\":[" + kids + "]";
  return j + "}";
}

std::string Line(const std::string& view, const std::string& request, const std::string& kids, int rank = 0,
                 int step = 0) {
  return "{\"schema\":\"truffld.trees/1\",\"rank\":" + std::to_string(rank) +
         ",\"process_id\":7,\"step_index\":" + std::to_string(step) +
         ",\"step\":\"step\",\"requests\":[\"a\",\"b\"],\"request\":\"" + request + "\",\"view\":\"" + view +
         "\",\"start\":0,\"end\":1000,\"root\":" + Node("step", "step", 0, 1000, "", kids) + "}";
}

// Rank 0, step 0 (0..1000 ns): two kernels under aten::mm, a copy, and an all-reduce whose NCCL
// kernel runs 350..550. Hand counts: busy union 550 ns, compute 300, comm 200, overlap 50.
std::vector<std::string> SmallTrace() {
  const std::string mm = Node(
      "backend_op", "aten::mm", 40, 120, ",\"thread_id\":1",
      Node("runtime_call", "cudaLaunchKernel", 50, 60, ",\"thread_id\":1,\"correlation_id\":1",
           Node("kernel", "gemmA", 100, 300, ",\"stream\":7,\"correlation_id\":1,\"grid\":[4,2,1],\"block\":[128,1,1]")) +
          "," +
          Node("runtime_call", "cudaLaunchKernel", 70, 80, ",\"thread_id\":1,\"correlation_id\":2",
               Node("kernel", "gemmB", 250, 400, ",\"stream\":7,\"correlation_id\":2")));
  const std::string copy = Node(
      "backend_op", "aten::copy_", 490, 520, ",\"thread_id\":1",
      Node("runtime_call", "cudaMemcpyAsync", 500, 510, ",\"thread_id\":1,\"correlation_id\":3",
           Node("memcpy", "Memcpy HtoD", 600, 700, ",\"stream\":7,\"correlation_id\":3,\"bytes\":4096,\"copy_kind\":\"HtoD\"")));
  const std::string comm = Node(
      "comm", "nccl:all_reduce", 85, 99,
      ",\"thread_id\":1,\"payload\":{\"comm\":\"7a11\",\"op\":\"all_reduce\",\"bytes\":1024,\"world_size\":2}",
      Node("runtime_call", "cudaLaunchKernel", 90, 95, ",\"thread_id\":1,\"correlation_id\":4",
           Node("kernel", "ncclDevKernel_AllReduce", 350, 550, ",\"stream\":9,\"correlation_id\":4")));
  // Request a's and b's vertical trees share aten::mm; only b's has the copy.
  return {Line("vertical", "a", mm), Line("vertical", "b", mm + "," + copy), Line("horizontal", "a", comm)};
}

TEST(TreeRows, RepeatedNodesAreOneRow) {
  TreeRows rows;
  CollectSink sink;
  long long n = 0;
  for (const std::string& l : SmallTrace()) ASSERT_TRUE(rows.AddLine(l, "t.jsonl", ++n, &sink).ok());
  EXPECT_EQ(rows.counts().trees, 3u);
  ASSERT_EQ(sink.steps.size(), 1u);
  EXPECT_EQ(sink.requests, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(sink.op_names, (std::vector<std::string>{"aten::mm", "aten::copy_", "nccl:all_reduce"}));
  EXPECT_EQ(sink.calls.size(), 4u);
  EXPECT_EQ(sink.devices.size(), 4u);
  EXPECT_EQ(rows.counts().duplicate_nodes, 5u);  // aten::mm, its two calls and two kernels again
  // The kernel's call and operator are those above it; grid and block are carried.
  const DeviceRow& a = sink.devices[0];
  EXPECT_EQ(a.call_id, sink.calls[0].call_id);
  EXPECT_EQ(a.op_id, sink.ops[0].op_id);
  EXPECT_EQ(a.grid[0], 4);
  EXPECT_EQ(a.block[0], 128);
  EXPECT_FALSE(a.is_comm);
  EXPECT_TRUE(sink.devices[3].is_comm);
  ASSERT_EQ(sink.collectives.size(), 1u);
  EXPECT_EQ(sink.collectives[0].comm, "7a11");
  EXPECT_EQ(sink.collectives[0].bytes, 1024);
  EXPECT_EQ(sink.collectives[0].world_size, 2);
}

// RowBuilder from plain NodeViews (what truffld-merge --sqlite feeds it): a node seen again in
// another tree of its step is one row; its children see it as their operator; a comm node's
// payload is read once, when its collectives row is made; a node without times makes no row.
int payload_reads = 0;
CommPayload CountedPayload(const void* arg) {
  ++payload_reads;
  simdjson::dom::parser parser;
  return CommPayloadFromText(*static_cast<const std::string*>(arg), &parser);
}

TEST(RowBuilder, PlainNodesDeduplicatedWithTheirContext) {
  RowBuilder b;
  CollectSink sink;
  const std::string payload = R"({"comm":7,"op":"all_reduce","bytes":2048,"peer":3})";
  NodeView comm;
  comm.name = "nccl:all_reduce";
  comm.layer = "comm";
  comm.family = "ncclAllReduce";
  comm.start = 10;
  comm.end = 90;
  comm.thread_id = 1;
  comm.payload = CountedPayload;
  comm.payload_arg = &payload;
  NodeView kernel;
  kernel.name = "ncclDevKernel";
  kernel.layer = "kernel";
  kernel.start = 20;
  kernel.end = 80;
  kernel.stream = 9;
  kernel.grid[0] = 8;
  NodeView untimed;
  untimed.name = "broken";
  untimed.layer = "backend_op";
  payload_reads = 0;
  for (const char* view : {"vertical", "horizontal"}) {
    if (b.EnterStep(0, 7, 3, view)) {
      ASSERT_TRUE(b.Step(StepRow{}, &sink).ok());
      ASSERT_TRUE(b.Request("r1", &sink).ok());
    }
    Result<RowBuilder::Context> c = b.Visit(comm, RowBuilder::Context{}, &sink);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->depth, 1);
    EXPECT_TRUE(c->in_comm);
    Result<RowBuilder::Context> u = b.Visit(untimed, *c, &sink);
    ASSERT_TRUE(u.ok());
    EXPECT_EQ(u->op_id, c->op_id);  // the untimed node's children keep the comm range's context
    EXPECT_TRUE(b.TakeBadNode());
    EXPECT_FALSE(b.TakeBadNode());
    ASSERT_TRUE(b.Visit(kernel, *u, &sink).ok());
  }
  ASSERT_EQ(sink.steps.size(), 1u);
  EXPECT_EQ(sink.steps[0].process_id, 7);
  EXPECT_EQ(sink.steps[0].step_index, 3);
  EXPECT_EQ(sink.requests, (std::vector<std::string>{"r1"}));
  ASSERT_EQ(sink.ops.size(), 1u);
  EXPECT_EQ(std::string(sink.ops[0].view), "vertical");
  ASSERT_EQ(sink.devices.size(), 1u);
  EXPECT_EQ(sink.devices[0].op_id, sink.ops[0].op_id);
  EXPECT_TRUE(sink.devices[0].is_comm);
  EXPECT_EQ(sink.devices[0].grid[0], 8);
  EXPECT_EQ(b.counts().duplicate_nodes, 2u);
  EXPECT_EQ(payload_reads, 1);
  ASSERT_EQ(sink.collectives.size(), 1u);
  EXPECT_EQ(sink.collectives[0].comm, "7");  // an integer communicator as decimal text
  EXPECT_EQ(sink.collectives[0].op, "all_reduce");
  EXPECT_EQ(sink.collectives[0].bytes, 2048);
  EXPECT_EQ(sink.collectives[0].peer, 3);
  EXPECT_EQ(sink.collectives[0].rank, 0);
  EXPECT_EQ(sink.collectives[0].family, "ncclAllReduce");
}

// A batch interns names once, replays each new text before the rows that use its id, and keeps
// the rows' own texts valid after the parsed lines are gone.
TEST(RowBatch, ReplaysInternedRows) {
  TreeRows rows;
  StringIds ids;
  RowBatch batch(&ids);
  long long n = 0;
  for (std::string l : SmallTrace()) {
    ASSERT_TRUE(rows.AddLine(l, "t.jsonl", ++n, &batch).ok());
    l.assign(l.size(), 'x');  // the batch must not point into the line
  }
  CollectSink sink;
  ASSERT_TRUE(batch.Replay(&sink).ok());
  ASSERT_EQ(sink.steps.size(), 1u);
  EXPECT_EQ(sink.steps[0].name, "step");
  EXPECT_EQ(sink.requests, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(sink.devices.size(), 4u);
  std::map<int64_t, std::string> text(sink.strings.begin(), sink.strings.end());
  EXPECT_EQ(text.size(), sink.strings.size());  // each text once
  EXPECT_EQ(text[sink.devices[0].name_id], "gemmA");
  EXPECT_EQ(text[sink.ops[0].family_id], "aten::mm");
  EXPECT_EQ(sink.devices[0].name_id, sink.devices[0].family_id);  // the test names families as names
  EXPECT_EQ(sink.calls[0].name_id, sink.calls[1].name_id);       // cudaLaunchKernel, once
  EXPECT_EQ(sink.devices[2].copy_kind, "HtoD");
}

TEST(TreeRows, BadLinesAreNamedAndSkipped) {
  TreeRows rows;
  CollectSink sink;
  ASSERT_TRUE(rows.AddLine("{\"schema\":\"truffld.trees/1\",\"step_in", "t.jsonl", 4, &sink).ok());
  ASSERT_TRUE(rows.AddLine("{\"schema\":\"other\"}", "t.jsonl", 5, &sink).ok());
  ASSERT_TRUE(rows.AddLine(SmallTrace()[0], "t.jsonl", 6, &sink).ok());
  EXPECT_EQ(rows.counts().bad_lines, 2u);
  EXPECT_EQ(rows.counts().trees, 1u);
  ASSERT_EQ(rows.counts().problems.size(), 2u);
  EXPECT_EQ(rows.counts().problems[0].rfind("t.jsonl:4: not a JSON object", 0), 0u) << rows.counts().problems[0];
  EXPECT_EQ(rows.counts().problems[1].rfind("t.jsonl:5: not a truffld.trees/1 line", 0), 0u);
}

TEST(DiagnosisRows, VerdictAndFaultyOperators) {
  auto v = ParseVerdictLine(
      R"({"schema":"truffld.diagnosis/1","rank":2,"step_index":17,"view":"vertical","label":"abnormal",)"
      R"("impact_ns":900,"calibration":{"p_value":0.001},"stage1":{},"stage2":{"source":"offline"},)"
      R"("faulty":[{"family":"aten::mm","layer":"backend_op","excess_ns":1450,"impact_ns":1200,"share":0.1}]})");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->rank, 2);
  EXPECT_EQ(v->impact_ns, 900);
  EXPECT_EQ(v->p_value, 0.001);
  EXPECT_EQ(v->stage2_source, "offline");
  ASSERT_EQ(v->faulty.size(), 1u);
  EXPECT_EQ(v->faulty[0].family, "aten::mm");
  EXPECT_EQ(v->faulty[0].excess_ns, 1450);
  EXPECT_FALSE(ParseVerdictLine(R"({"rank":1})").ok());
  EXPECT_FALSE(ParseVerdictLine("{\"rank\":").ok());
}

// Full multi-row statements and the remainder Flush() writes: every row once, texts copied,
// an empty text NULL or '' as asked; a row with too few values is refused.
TEST(BulkInsert, FullStatementsAndRemainder) {
  const std::string path = ::testing::TempDir() + "export_bulk_" + std::to_string(getpid()) + ".sqlite";
  std::filesystem::remove(path);
  {
    auto db = SqliteDb::Open(path, SqliteDb::Mode::kCreate);
    ASSERT_TRUE(db.ok()) << db.status().message();
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c INTEGER)").ok());
    auto b = BulkInsert::Create(db->get(), "t", 4);
    ASSERT_TRUE(b.ok()) << b.status().message();
    const int n = 2 * BulkInsert::kRows + 3;
    for (int i = 1; i <= n; ++i) {
      std::string text = "row" + std::to_string(i);  // gone before the statement runs
      b->Int(i);
      b->Text(i % 2 ? std::string_view(text) : std::string_view());
      b->TextKeepEmpty("");
      b->Int(i % 3 ? std::optional<int64_t>(i * 10) : std::nullopt);
      ASSERT_TRUE(b->EndRow().ok());
    }
    ASSERT_TRUE(b->Flush().ok());
    auto q = (*db)->Prepare("SELECT COUNT(*), SUM(a IS NULL), SUM(b = ''), SUM(c IS NULL), SUM(c),"
                            " MAX(a = 'row' || id) FROM t");
    ASSERT_TRUE(q.ok());
    Status st;
    ASSERT_TRUE(q->Next(&st));
    EXPECT_EQ(q->Int(0), n);
    EXPECT_EQ(q->Int(1), n / 2);
    EXPECT_EQ(q->Int(2), n);
    EXPECT_EQ(q->Int(3), n / 3);
    int64_t sum = 0;
    for (int i = 1; i <= n; ++i) sum += i % 3 ? i * 10 : 0;
    EXPECT_EQ(q->Int(4), sum);
    EXPECT_EQ(q->Int(5), 1);
    b->Int(n + 1);
    Status short_row = b->EndRow();
    EXPECT_FALSE(short_row.ok());
    EXPECT_NE(short_row.message().find("t: a row of 1 values for 4 columns"), std::string::npos);
  }
  std::filesystem::remove(path);
}

// Every tree table is written by exactly one writer, whatever the writer count.
TEST(TableGroups, EachTableOnce) {
  for (int writers : {0, 1, 2, 3, 8}) {
    std::map<std::string, int> seen;
    for (const auto& group : TableGroups(writers)) {
      for (const std::string& t : group) ++seen[t];
    }
    EXPECT_EQ(seen.size(), size_t{kTreeTableCount}) << writers;
    for (const TableIndexes& t : kTreeTables) EXPECT_EQ(seen[t.table], 1) << writers << " " << t.table;
  }
  EXPECT_EQ(TableGroups(1).size(), 1u);
  EXPECT_EQ(TableGroups(3).size(), 3u);
  EXPECT_EQ(TableGroups(3)[0], std::vector<std::string>{"kernel_rows"});
  EXPECT_EQ(WritersFor(1), 1);
  EXPECT_EQ(WritersFor(2), 1);
  EXPECT_EQ(WritersFor(3), 2);
  EXPECT_EQ(WritersFor(64), 3);
  EXPECT_GE(WritersFor(0), 1);
}

// NodeSet keeps the first id of a key through growth, and Clear forgets every key.
TEST(NodeSet, FindsGrowsAndClears) {
  NodeSet set;
  bool fresh = false;
  for (int64_t i = 1; i <= 1000; ++i) {
    EXPECT_EQ(set.FindOrInsert(NodeKey{1, i, i + 5, 7, -1, 42}, i, &fresh), i);
    EXPECT_TRUE(fresh);
  }
  for (int64_t i = 1; i <= 1000; ++i) {
    EXPECT_EQ(set.FindOrInsert(NodeKey{1, i, i + 5, 7, -1, 42}, 5000 + i, &fresh), i);
    EXPECT_FALSE(fresh);
  }
  EXPECT_EQ(set.FindOrInsert(NodeKey{2, 1, 6, 7, -1, 42}, 9000, &fresh), 9000);  // another kind
  EXPECT_TRUE(fresh);
  set.Clear();
  EXPECT_EQ(set.FindOrInsert(NodeKey{1, 1, 6, 7, -1, 42}, 3, &fresh), 3);
  EXPECT_TRUE(fresh);
}

TEST(FormatTable, ColumnsAlign) {
  const std::string t = FormatTable({"n", "name"}, {{"1", "short"}, {"100", "a longer one"}}, {true, false});
  EXPECT_EQ(t, "  n  name\n  1  short\n100  a longer one\n");
}

// The summaries' SQL on the small trace, against the hand counts of SmallTrace().
TEST(RunStats, HandCountsOnASmallTrace) {
  const std::string path = ::testing::TempDir() + "export_stats_" + std::to_string(getpid()) + ".sqlite";
  std::filesystem::remove(path);
  {
    auto db = SqliteDb::Open(path, SqliteDb::Mode::kCreate);
    ASSERT_TRUE(db.ok()) << db.status().message();
    ASSERT_TRUE((*db)->Exec(kCreateTables).ok());
    auto sink = DbSink::Create(db->get());
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    TreeRows rows;
    long long n = 0;
    for (const std::string& l : SmallTrace()) ASSERT_TRUE(rows.AddLine(l, "t.jsonl", ++n, sink->get()).ok());
    ASSERT_TRUE((*sink)->Flush().ok());
    ASSERT_TRUE((*db)->Exec(TreeIndexSql()).ok());
    auto s = ComputeRunStats(db->get());
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(s->kernels, 3);
    EXPECT_EQ(s->kernel_total_ns, 550);
    ASSERT_EQ(s->kernel_summary.size(), 3u);
    EXPECT_EQ(s->kernel_summary[0].total_ns, 200);
    EXPECT_EQ(s->kernel_summary[2].name, "gemmB");
    EXPECT_NEAR(s->kernel_summary[2].share, 150.0 / 550, 1e-12);
    ASSERT_EQ(s->step_idle.size(), 1u);
    EXPECT_EQ(s->step_idle[0].busy_ns, 550);  // [100,550] and [600,700]
    EXPECT_NEAR(s->step_idle[0].idle_share, 0.45, 1e-12);
    ASSERT_EQ(s->launch_latency.size(), 1u);  // latencies 50, 180, 260; from the call's end 40, 170, 255
    const LaunchLatency& l = s->launch_latency[0];
    EXPECT_EQ(l.api, "cudaLaunchKernel");
    EXPECT_EQ(l.count, 3);
    EXPECT_EQ(l.min_ns, 50);
    EXPECT_EQ(l.p50_ns, 180);
    EXPECT_EQ(l.p90_ns, 260);
    EXPECT_EQ(l.max_ns, 260);
    EXPECT_EQ(l.p50_after_end_ns, 170);
    ASSERT_EQ(s->overlap.size(), 1u);
    EXPECT_EQ(s->overlap[0].compute_ns, 300);
    EXPECT_EQ(s->overlap[0].comm_ns, 200);
    EXPECT_EQ(s->overlap[0].overlap_ns, 50);
    EXPECT_NEAR(s->overlap[0].overlap_share, 0.25, 1e-12);
    const std::string text = FormatStatsText(*s, TextOptions{});
    EXPECT_NE(text.find("ncclDevKernel_AllReduce"), std::string::npos);
    EXPECT_NE(text.find("25.0%"), std::string::npos);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace truffld::exporter
