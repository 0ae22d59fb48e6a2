// Unit tests of the JSONL formatting: every record kind, escaping, META/STATS/CLOCK shapes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "format.h"
#include "json_out.h"
#include "nvtx_registry.h"

namespace truffld::inject {
namespace {

using nlohmann::json;

json Line(const std::string& s) {
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s.back(), '\n');
  EXPECT_EQ(s.find('\n'), s.size() - 1) << "exactly one line";
  return json::parse(s);
}

TEST(Json, EscapesControlQuotesAndInvalidUtf8) {
  std::string out;
  AppendJsonString(out, std::string("a\"b\\c\n\x01\xff\xc3\xa9", 10));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\u0001\\ufffd\xC3\xA9\"");
  EXPECT_NO_THROW(json::parse(out));
}

// Strict UTF-8 (truffld/json_escape.h): what a lenient decoder lets through is replaced, one
// \ufffd per byte, so the merge never counts invalid_utf8 in the injector's own dumps.
TEST(Json, RejectsSurrogatesOverlongFormsAndCodePointsAboveU10FFFF) {
  struct Case { std::string in, out; };
  const Case cases[] = {
      {"\xED\xA0\x80", "\\ufffd\\ufffd\\ufffd"},          // U+D800, a lone surrogate
      {"\xED\xBF\xBF", "\\ufffd\\ufffd\\ufffd"},          // U+DFFF
      {"\xC0\xAF", "\\ufffd\\ufffd"},                      // overlong '/'
      {"\xE0\x80\xAF", "\\ufffd\\ufffd\\ufffd"},          // overlong '/', three bytes
      {"\xF0\x80\x80\xAF", "\\ufffd\\ufffd\\ufffd\\ufffd"},  // overlong, four bytes
      {"\xF4\x90\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd"},  // U+110000
      {"\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF"},          // U+10FFFF: valid, kept
      {"\xED\x9F\xBF", "\xED\x9F\xBF"},                   // U+D7FF: valid, kept
      {"\x7F", "\x7F"},                                 // DEL is not a control JSON escapes
  };
  for (const Case& c : cases) {
    std::string out;
    AppendJsonString(out, c.in);
    EXPECT_EQ(out, "\"" + c.out + "\"") << json(c.out).dump();
    EXPECT_NO_THROW(json::parse(out));
  }
}

TEST(Format, NvtxPushWithDomainCategoryColorAndScalarPayload) {
  NvtxRegistry reg;
  NvtxDomain* d = reg.CreateDomain("vllm");
  reg.NameCategory(d, 3, "decode");
  Record r{};
  r.kind = RecordKind::kNvtxPush;
  r.t0 = 123;
  r.tid = 77;
  r.domain = d;
  r.flags = kFlagHasCategory | kFlagHasColor;
  r.category = 3;
  r.color = 0xff0000;
  r.payload_kind = PayloadKind::kInt64;
  r.payload_value = static_cast<uint64_t>(-5);
  r.name_len = 4;
  std::string out;
  FormatRecord(r, "step", 42, reg, out);
  const json j = Line(out);
  EXPECT_EQ(j["type"], "NVTX_PUSH");
  EXPECT_EQ(j["name"], "step");
  EXPECT_EQ(j["timestamp"], 123);
  EXPECT_EQ(j["domain"], "vllm");
  EXPECT_EQ(j["category"], "decode");
  EXPECT_EQ(j["color"], 0xff0000);
  EXPECT_EQ(j["payload"]["value"], -5);
  EXPECT_EQ(j["process_id"], 42);
  EXPECT_EQ(j["thread_id"], 77);
}

// Plain pushes, pops and marks (default domain, no extras) take a fast path; a record in a
// domain whose name is empty prints no domain and so must come out of the general path with the
// very same bytes, for every name escape and every timestamp width.
TEST(Format, PlainNvtxFastPathWritesTheGeneralPathsBytes) {
  NvtxRegistry reg;
  const NvtxDomain* unnamed = reg.CreateDomain("");
  const std::string names[] = {"aten::mm, op_id = 42", "", std::string("a\"b\\c\n\x01\xff\xc3\xa9", 12),
                               "\xED\xA0\x80", std::string(511, 'x') + "\n", std::string(600, 'y')};
  const int64_t times[] = {0, 7, -5, 99999999, 100000000, 1234567890123456, 9999999999999999,
                           10000000000000000, INT64_MAX, INT64_MIN};
  const RecordKind kinds[] = {RecordKind::kNvtxPush, RecordKind::kNvtxPop, RecordKind::kNvtxMark};
  int compared = 0;
  for (RecordKind kind : kinds) {
    for (const std::string& name : names) {
      for (int64_t t : times) {
        Record r{};
        r.kind = kind;
        r.t0 = t;
        r.tid = 4294967295u;
        r.name_len = kind == RecordKind::kNvtxPop ? 0 : static_cast<uint16_t>(name.size());
        std::string fast, general;
        FormatRecord(r, name, 123456, reg, fast);
        r.domain = unnamed;
        FormatRecord(r, name, 123456, reg, general);
        ASSERT_EQ(fast, general) << RecordKindName(kind) << " " << t;
        const json j = Line(fast);
        EXPECT_EQ(j["timestamp"].get<int64_t>(), t);
        EXPECT_EQ(j["thread_id"].get<uint64_t>(), 4294967295u);
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 3 * 6 * 10);
  Record pop{};
  pop.kind = RecordKind::kNvtxPop;
  pop.t0 = 1234567890123456789;
  pop.tid = 7;
  std::string out;
  FormatRecord(pop, {}, 42, reg, out);
  EXPECT_EQ(out, "{\"type\":\"NVTX_POP\",\"timestamp\":1234567890123456789,\"process_id\":42,"
                 "\"thread_id\":7}\n");
}

// The writer keeps one LineTail across records: a kept line end must follow every change of
// thread id and process id (a fork child), and write the bytes a fresh one writes.
TEST(Format, KeptLineTailFollowsThreadAndProcessChanges) {
  NvtxRegistry reg;
  LineTail kept;
  const struct { int64_t pid; uint32_t tid; } ids[] = {
      {42, 7}, {42, 7}, {42, 4294967295u}, {42, 7}, {1234567, 7}, {1234567, 0}, {42, 7}};
  for (RecordKind kind : {RecordKind::kNvtxPush, RecordKind::kNvtxPop, RecordKind::kNvtxMark}) {
    for (const auto& id : ids) {
      Record r{};
      r.kind = kind;
      r.t0 = 123456789012345;
      r.tid = id.tid;
      r.name_len = kind == RecordKind::kNvtxPop ? 0 : 4;
      std::string with, without;
      FormatRecord(r, "step", id.pid, reg, with, &kept);
      FormatRecord(r, "step", id.pid, reg, without);
      ASSERT_EQ(with, without) << id.pid << " " << id.tid;
      const json j = Line(with);
      EXPECT_EQ(j["process_id"].get<int64_t>(), id.pid);
      EXPECT_EQ(j["thread_id"].get<uint64_t>(), id.tid);
    }
  }
}

// The kept LineTail also keeps a time's digits above the last 8 (they change every 0.1 s) and the
// first 4 of the last 8 (every 10 µs): a sequence of times that cross those digits' changes
// (either alone, both, the lower kept while the higher change), go back, shrink and grow in
// length must each read back as written, with the bytes of a fresh LineTail.
TEST(Format, KeptTimeDigitsFollowEveryChange) {
  NvtxRegistry reg;
  LineTail kept;
  const int64_t times[] = {1732000000000000000, 1732000000099999999, 1732000000100000000,
                           1732000000100000001, 1732000000000000000, 5, 100000000, 199999999,
                           -7, 9999999999999999, 10000000000000000, INT64_MAX, INT64_MIN,
                           1732000000100000000, 1832000000100000000, 1832000000100009999,
                           1832000000100010000, 1832000000100010001, 1832000000200010001,
                           1832000000200000001};
  int compared = 0;
  for (int64_t t : times) {
    for (RecordKind kind : {RecordKind::kNvtxPush, RecordKind::kNvtxPop}) {
      Record r{};
      r.kind = kind;
      r.t0 = t;
      r.tid = 7;
      r.name_len = kind == RecordKind::kNvtxPop ? 0 : 4;
      std::string with, without;
      FormatRecord(r, "step", 42, reg, with, &kept);
      FormatRecord(r, "step", 42, reg, without);
      ASSERT_EQ(with, without) << t;
      EXPECT_EQ(Line(with)["timestamp"].get<int64_t>(), t);
      ++compared;
    }
  }
  EXPECT_EQ(compared, 40);
}

TEST(Format, UnnamedCategoryIsANumberAndRegisteredNameIsUsed) {
  NvtxRegistry reg;
  NvtxString* s = reg.RegisterString("registered");
  Record r{};
  r.kind = RecordKind::kNvtxMark;
  r.flags = kFlagHasCategory;
  r.category = 9;
  r.name_ref = s->text.c_str();
  std::string out;
  FormatRecord(r, "", 1, reg, out);
  const json j = Line(out);
  EXPECT_EQ(j["category"], 9);
  EXPECT_EQ(j["name"], "registered");
}

TEST(Format, ApiRecordWithCopyArguments) {
  NvtxRegistry reg;
  Record r{};
  r.kind = RecordKind::kRuntime;
  r.t0 = 10;
  r.t1 = 20;
  r.id = 5;
  r.a = 41;
  r.b = 1 << 20;
  r.c = 0x10;
  r.aux8 = 1 + 2;  // cudaMemcpyDeviceToHost
  r.flags = kFlagHasReturnCode;
  r.return_code = 0;
  r.name_ref = "cudaMemcpyAsync";
  std::string out;
  FormatRecord(r, "", 9, reg, out);
  const json j = Line(out);
  EXPECT_EQ(j["cbid"], 41);
  EXPECT_EQ(j["name"], "cudaMemcpyAsync");
  EXPECT_EQ(j["start"], 10);
  EXPECT_EQ(j["end"], 20);
  EXPECT_EQ(j["correlation_id"], 5);
  EXPECT_EQ(j["copy_kind"], "DtoH");
  EXPECT_EQ(j["bytes"], 1 << 20);
  EXPECT_EQ(j["stream"], 16);
  EXPECT_EQ(j["return_code"], 0);
}

TEST(Format, GraphNodeCloneAndKernelActivity) {
  NvtxRegistry reg;
  Record r{};
  r.kind = RecordKind::kGraphNode;
  r.a = 8; r.b = 200; r.c = 100; r.id = 6;
  r.flags = kFlagHasOriginal;
  std::string out;
  FormatRecord(r, "", 1, reg, out);
  json j = Line(out);
  EXPECT_EQ(j["graph_id"], 8);
  EXPECT_EQ(j["graph_node_id"], 200);
  EXPECT_EQ(j["original_graph_node_id"], 100);
  EXPECT_EQ(j["correlation_id"], 6);

  GpuActivity k;
  k.kind = RecordKind::kKernel;
  k.name = "void gemm<128>(float*)";
  k.start = 1; k.end = 2; k.correlation_id = 7; k.device = 1; k.stream = 3;
  k.grid[0] = 4; k.grid[1] = 5; k.grid[2] = 6;
  k.block[0] = 32; k.block[1] = 1; k.block[2] = 1;
  k.has_graph = true; k.graph_id = 8; k.graph_node_id = 200;
  out.clear();
  FormatGpuActivity(k, out);
  j = Line(out);
  EXPECT_EQ(j["type"], "KERNEL");
  EXPECT_EQ(j["name"], "void gemm<128>(float*)");
  EXPECT_EQ(j["grid"], json::array({4, 5, 6}));
  EXPECT_EQ(j["graph_node_id"], 200);
  EXPECT_EQ(j["device"], 1);
}

TEST(Format, MetaStatsAndClock) {
  MetaInfo m;
  m.host = "h";
  m.pid = 3;
  m.rank = 2;
  m.clock = "monotonic_raw";
  m.cmdline = {"python", "-m", "vllm"};
  m.config = {{"flush_ms", "500"}};
  std::string out;
  FormatMeta(m, out);
  json j = Line(out);
  EXPECT_EQ(j["schema"], "truffld.events/1");
  EXPECT_EQ(j["rank"], 2);
  EXPECT_TRUE(j["cuda_driver_version"].is_null());
  EXPECT_EQ(j["cmdline"][2], "vllm");
  EXPECT_EQ(j["config"]["flush_ms"], "500");
  StatsInfo s;
  s.written[static_cast<int>(RecordKind::kKernel)] = 4;
  s.dropped[static_cast<int>(RecordKind::kNvtxPush)] = 2;
  s.cupti_dropped = 7;
  out.clear();
  FormatStats(s, out);
  j = Line(out);
  EXPECT_EQ(j["records_written"]["KERNEL"], 4);
  EXPECT_EQ(j["records_dropped"]["NVTX_PUSH"], 2);
  EXPECT_EQ(j["cupti_dropped"], 7);
  EXPECT_FALSE(j.contains("dump_io"));  // no sink: nothing to say
  EXPECT_FALSE(j.contains("direct_io_stopped"));
  s.dump_io = "page_cache";
  s.direct_io_stopped = "slow_write";
  out.clear();
  FormatStats(s, out);
  j = Line(out);
  EXPECT_EQ(j["dump_io"], "page_cache");
  EXPECT_EQ(j["direct_io_stopped"], "slow_write");
  out.clear();
  FormatClock(5, 6, out);
  j = Line(out);
  EXPECT_EQ(j["clock_sync"]["realtime_ns"], 5);
  EXPECT_EQ(j["clock_sync"]["monotonic_ns"], 6);
}

}  // namespace
}  // namespace truffld::inject
