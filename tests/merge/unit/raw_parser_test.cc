// RawLineParser: every record type of events-v1, the NVTX_MARKER dialect, and bad input.
#include "truffld/merge/raw_parser.h"

#include <gtest/gtest.h>

#include "merge_test_util.h"
#include "truffld/merge/pipeline.h"

namespace truffld::merge {
namespace {

using testing::FileFromLines;

TEST(RawParser, MetaClockAndStats) {
  TraceFile f = FileFromLines(
      R"({"type":"META","schema":"truffld.events/1","host":"h1","process_id":42,"rank":3,"local_rank":1,"world_size":8,"clock":"monotonic_raw","clock_sync":{"realtime_ns":1000,"monotonic_ns":10}})"
      "\n"
      R"({"type":"CLOCK","clock_sync":{"realtime_ns":2000,"monotonic_ns":1010}})"
      "\n"
      R"({"type":"STATS","records_written":{"KERNEL":3},"records_dropped":{"KERNEL":2,"NVTX_PUSH":1},"cupti_dropped":4})");
  EXPECT_TRUE(f.meta.has_meta);
  EXPECT_EQ(f.meta.host, "h1");
  EXPECT_EQ(f.meta.process_id, 42);
  ASSERT_TRUE(f.meta.rank.has_value());
  EXPECT_EQ(*f.meta.rank, 3);
  EXPECT_EQ(f.meta.world_size.value_or(-1), 8);
  EXPECT_EQ(f.meta.clock, ClockId::kMonotonicRaw);
  ASSERT_EQ(f.meta.clock_sync.size(), 2u);
  EXPECT_EQ(f.meta.clock_sync[1].first, 2000);
  EXPECT_EQ(f.stats.Get(Problem::kInjectorDropped), 7u);
  EXPECT_NE(f.meta.stats_json.find("records_dropped"), std::string::npos);
  EXPECT_TRUE(f.stats.issues.empty());
}

TEST(RawParser, HostAndDeviceRecords) {
  TraceFile f = FileFromLines(
      R"({"type":"NVTX_PUSH","name":"aten::mm, seq = 0","timestamp":100,"process_id":1,"thread_id":7,"domain":"PyTorch","payload":{"bytes":64}})"
      "\n"
      R"({"type":"RUNTIME","cbid":211,"name":"cudaLaunchKernel","start":110,"end":120,"correlation_id":5,"process_id":1,"thread_id":7})"
      "\n"
      R"({"type":"KERNEL","name":"k","gpu_start":130,"gpu_end":150,"correlation_id":5,"device":0,"stream":7,"grid":[2,1,1],"block":[128,1,1]})"
      "\n"
      R"({"type":"MEMSET","bytes":512,"gpu_start":160,"gpu_end":170,"correlation_id":6,"device":0,"stream":7})"
      "\n"
      R"({"type":"NVTX_POP","timestamp":200,"process_id":1,"thread_id":7})");
  ASSERT_EQ(f.events.size(), 5u);
  const Event& push = f.events[0];
  EXPECT_EQ(push.kind, EventKind::kNvtxPush);
  EXPECT_EQ(f.strings.Get(push.name), "aten::mm, seq = 0");
  EXPECT_EQ(f.strings.Get(f.Extra(push).domain), "PyTorch");
  EXPECT_EQ(f.strings.Get(f.Extra(push).payload), R"({"bytes":64})");
  const Event& api = f.events[1];
  EXPECT_EQ(api.kind, EventKind::kRuntime);
  EXPECT_EQ(f.Extra(api).cbid, 211);
  EXPECT_EQ(f.Correlation(api), 5);
  EXPECT_EQ(api.end, 120);
  const Event& k = f.events[2];
  EXPECT_EQ(k.kind, EventKind::kKernel);
  EXPECT_EQ(k.start, 130);
  EXPECT_EQ(k.end, 150);
  EXPECT_EQ(f.Extra(k).stream, 7);
  EXPECT_EQ(f.Extra(k).grid[0], 2);
  EXPECT_EQ(f.Extra(k).block[0], 128);
  EXPECT_EQ(f.events[3].kind, EventKind::kMemset);
  EXPECT_EQ(f.Extra(f.events[3]).bytes, 512);
  EXPECT_EQ(f.events[4].kind, EventKind::kNvtxPop);
  EXPECT_EQ(f.LineOf(4), 5u);
}

TEST(RawParser, MarkerDialectOpensAndCloses) {
  TraceFile f = FileFromLines(
      R"({ "type": "NVTX_MARKER", "name": "aten::arange, op_id = 1", "timestamp": 10, "id": 1, "process_id": 9, "thread_id": 3 })"
      "\n"
      R"({ "type": "NVTX_MARKER", "name": "null", "timestamp": 20, "id": 1, "process_id": 9, "thread_id": 3 })"
      "\n"
      R"({ "type": "NVTX_MARKER", "name": null, "timestamp": 25, "id": 2, "process_id": 9, "thread_id": 3 })"
      "\n"
      R"({ "type": "KERNEL", "name": "_ZN2at6native", "gpu_start": 30, "duration": 5, "correlation_id": 4 })");
  ASSERT_EQ(f.events.size(), 4u);
  EXPECT_EQ(f.events[0].kind, EventKind::kNvtxStart);
  EXPECT_EQ(f.Extra(f.events[0]).range_id, 1);
  EXPECT_EQ(f.events[1].kind, EventKind::kNvtxEnd);
  EXPECT_EQ(f.events[2].kind, EventKind::kNvtxEnd);
  EXPECT_EQ(f.events[3].end, 35);
  EXPECT_EQ(f.meta.format, "truffld-marker");
}

TEST(RawParser, BadLinesAreCountedWithLocationAndSkipped) {
  TraceFile f = FileFromLines(
      "{\"type\":\"NVTX_PUSH\",\"name\":\"a\"\n"                                   // 1 malformed
      "[1,2]\n"                                                                  // 2 not object
      "{\"type\":\"BOGUS\",\"x\":1}\n"                                           // 3 unknown type
      "{\"type\":\"KERNEL\",\"name\":\"k\",\"gpu_end\":5}\n"                     // 4 missing gpu_start
      "{\"type\":\"RUNTIME\",\"name\":\"c\",\"start\":9,\"end\":3,\"correlation_id\":1,\"process_id\":1,\"thread_id\":1}\n"  // 5 negative
      "{\"name\":\"x\"}\n"                                                       // 6 no type
      "{\"type\":\"NVTX_PUSH\",\"name\":5,\"timestamp\":1}\n"                    // 7 wrong type
      "\n"
      "{\"type\":\"NVTX_POP\",\"timestamp\":1,\"process_id\":1,\"thread_id\":1} trailing\n",  // 9
      "bad.jsonl");
  EXPECT_EQ(f.stats.Get(Problem::kMalformedJson), 3u);
  EXPECT_EQ(f.stats.Get(Problem::kUnknownType), 1u);
  EXPECT_EQ(f.stats.Get(Problem::kMissingField), 2u);
  EXPECT_EQ(f.stats.Get(Problem::kNegativeDuration), 1u);
  EXPECT_EQ(f.stats.Get(Problem::kBadField), 1u);
  ASSERT_EQ(f.events.size(), 1u);  // the clamped RUNTIME survives
  EXPECT_EQ(f.events[0].start, 9);
  EXPECT_EQ(f.events[0].end, 9);
  ASSERT_FALSE(f.stats.issues.empty());
  EXPECT_EQ(f.stats.issues[0].where, "bad.jsonl:1");
  bool saw_unknown = false;
  for (const auto& i : f.stats.issues)
    if (i.kind == Problem::kUnknownType) { saw_unknown = true; EXPECT_EQ(i.where, "bad.jsonl:3"); }
  EXPECT_TRUE(saw_unknown);
}

TEST(RawParser, InvalidUtf8IsRepairedAndKept) {
  std::string line = "{\"type\":\"NVTX_PUSH\",\"name\":\"bad\xff\xfe name\",\"timestamp\":1,\"process_id\":1,\"thread_id\":1}";
  TraceFile f = FileFromLines(line);
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_EQ(f.stats.Get(Problem::kInvalidUtf8), 1u);
  EXPECT_EQ(f.strings.Get(f.events[0].name), "bad\xEF\xBF\xBD\xEF\xBF\xBD name");
}

// Python's json writes an undecodable byte as a lone surrogate escape ("\udcff"): the record is
// kept with U+FFFD there (and counted as invalid UTF-8). Dropping it, as a string error did,
// lost a push, so its pop then closed the enclosing step early.
TEST(RawParser, LoneSurrogateEscapesReadAsReplacementAndTheRecordIsKept) {
  const std::string text =
      R"({"type":"NVTX_PUSH","name":"step_execute_model[request_ids:1]","timestamp":1,"process_id":1,"thread_id":1})" "\n"
      R"({"type":"NVTX_PUSH","name":"op\udcff\udcfe","timestamp":2,"process_id":1,"thread_id":1})" "\n"
      R"({"type":"NVTX_PUSH","name":"pair \ud83d\ude00 and \\udcff","timestamp":3,"process_id":1,"thread_id":1})" "\n"
      R"({"type":"NVTX_POP","timestamp":4,"process_id":1,"thread_id":1})" "\n"
      R"({"type":"NVTX_POP","timestamp":5,"process_id":1,"thread_id":1})" "\n"
      R"({"type":"NVTX_POP","timestamp":9,"process_id":1,"thread_id":1})" "\n";
  for (bool fast : {true, false}) {
    TraceFile f = FileFromLines(text, "s.jsonl", fast);
    ASSERT_EQ(f.events.size(), 6u) << "fast path " << fast;
    EXPECT_EQ(f.strings.Get(f.events[1].name), "op\xEF\xBF\xBD\xEF\xBF\xBD");
    // A valid pair is one character; an escaped backslash before "udcff" is no escape.
    EXPECT_EQ(f.strings.Get(f.events[2].name), "pair \xF0\x9F\x98\x80 and \\udcff");
    EXPECT_EQ(f.stats.Get(Problem::kInvalidUtf8), 1u);
    EXPECT_EQ(f.stats.Get(Problem::kMalformedJson), 0u);
  }
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(text, "s.jsonl"));
  auto r = Merge(std::move(files), {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->End(r->node(r->trees[0].root)), 9);  // the step ends at its own pop
  EXPECT_EQ(r->summary.total.unmatched_pops, 0u);
}

TEST(RawParser, OneMegabyteName) {
  std::string name(1 << 20, 'x');
  TraceFile f = FileFromLines("{\"type\":\"NVTX_PUSH\",\"name\":\"" + name + "\",\"timestamp\":1,\"process_id\":1,\"thread_id\":1}");
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_EQ(f.strings.Get(f.events[0].name).size(), name.size());
}

TEST(RepairUtf8, ReplacesOnlyInvalidSequences) {
  std::string ok = "h\xC3\xA9llo \xF0\x9F\x98\x80";
  EXPECT_EQ(RepairUtf8(&ok), 0u);
  std::string bad = "a\xC3(b\xED\xA0\x80";  // truncated 2-byte, then a UTF-16 surrogate
  EXPECT_EQ(RepairUtf8(&bad), 4u);
  EXPECT_EQ(bad.substr(0, 5), "a\xEF\xBF\xBD(");
}

}  // namespace
}  // namespace truffld::merge
