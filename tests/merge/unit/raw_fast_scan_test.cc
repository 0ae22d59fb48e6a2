// The raw parser's two readers must agree: every line read with the fast scanner on gives the
// same TraceFile (events, strings, extras, meta, counters, messages) as with every line read by
// the DOM parser. Lines cover each key with each kind of value, the edges of the scanner's
// grammar (escapes, non-ASCII, whitespace, numbers at the int64 limits, floats, duplicates) and
// the committed dumps.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "merge_test_util.h"
#include "raw_fields.h"
#include "trace_file_text.h"

namespace truffld::merge {
namespace {

using testing::FileFromLines;
using testing::TraceFileText;

void ExpectSameBothWays(const std::string& text, const std::string& what) {
  const std::string fast = TraceFileText(FileFromLines(text, "t.jsonl", true));
  const std::string slow = TraceFileText(FileFromLines(text, "t.jsonl", false));
  EXPECT_EQ(fast, slow) << what << "\ninput:\n" << text;
}

std::vector<std::string> Variants() {
  const std::string base =
      R"("process_id":7,"thread_id":8,"correlation_id":9,"start":100,"end":200,"timestamp":150,"gpu_start":300,"gpu_end":400,"id":5,"graph_id":1,"graph_node_id":2)";
  const std::vector<std::string> types = {"NVTX_PUSH", "NVTX_POP", "NVTX_MARK", "NVTX_START", "NVTX_END",
                                          "NVTX_MARKER", "RUNTIME", "DRIVER", "KERNEL", "MEMCPY",
                                          "MEMSET", "SYNC", "GRAPH_NODE", "BOGUS"};
  const std::vector<std::string> values = {
      R"("x")", R"("")", "null", "true", "false", "0", "-1", "12", "1.5", "1e3", "-0", "01",
      "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
      "12345678901234567890", R"("a\"b")", R"("caf\u00e9")", "\"caf\xC3\xA9\"", "\"bad\xff\"", "[1,2,3]",
      "[1,2]", "[1,2,3,4]", "[]", R"(["a"])", "[1.5,2,3]", R"({"k":1})", R"({})", " 5", "5 "};
  const std::vector<std::string> keys = {
      "type", "name", "domain", "category", "sync_kind", "copy_kind", "payload", "grid", "block", "host",
      "clock", "schema", "rank", "process_id", "thread_id", "correlation_id", "start", "end", "timestamp",
      "gpu_start", "gpu_end", "duration", "id", "cbid", "return_code", "bytes", "device", "stream",
      "graph_id", "graph_node_id", "original_graph_node_id", "registers", "x"};
  std::vector<std::string> out;
  for (const std::string& t : types) {
    out.push_back("{\"type\":\"" + t + "\",\"name\":\"n\"," + base + "}");
    out.push_back("{\"type\":\"" + t + "\"," + base + "}");
    for (const std::string& k : keys)
      for (const std::string& v : values) {
        if (t != "KERNEL" && t != "RUNTIME" && t != "NVTX_PUSH" && k != "type" && k != "name") continue;
        out.push_back("{\"type\":\"" + t + "\",\"name\":\"n\"," + base + ",\"" + k + "\":" + v + "}");
        out.push_back("{\"" + k + "\":" + v + ",\"type\":\"" + t + "\",\"name\":\"n\"," + base + "}");
      }
  }
  // Grammar edges.
  for (const char* l : {
           "{}", "{", "}", "", "[]", "null", "{\"type\":\"NVTX_POP\"}", " {\"type\":\"NVTX_POP\",\"timestamp\":1}",
           "{\"type\":\"NVTX_POP\",\"timestamp\":1} ", "{\"type\":\"NVTX_POP\",\"timestamp\":1}x",
           "{\"type\":\"NVTX_POP\",\"timestamp\":1,}", "{\"type\":\"NVTX_POP\" ,\"timestamp\":1}",
           "{\"type\":\"NVTX_POP\",\"timestamp\":1}}", "{\"type\":\"NVTX_POP\",\"timestamp\":1,\"timestamp\":2}",
           "{\"type\":\"NVTX_PUSH\",\"name\":null,\"name\":\"a\",\"timestamp\":1}",
           "{\"type\":\"NVTX_PUSH\",\"name\":\"a\",\"name\":null,\"timestamp\":1}",
           "{\"type\":\"KERNEL\",\"grid\":[1,2,3],\"grid\":null,\"gpu_start\":1,\"gpu_end\":2,\"correlation_id\":1}",
           "{\"type\":\"KERNEL\",\"gpu_start\":5,\"gpu_end\":2,\"correlation_id\":1}",
           "{\"type\":\"KERNEL\",\"start\":5,\"duration\":3}", "{\"type\":\"NVTX_PUSH\",\"name\":\"a\tb\",\"timestamp\":1}",
           "{\"type\":\"NVTX_PUSH\",\"name\":\"12345678\",\"timestamp\":1}",
           "{\"type\":\"NVTX_PUSH\",\"name\":\"1234567\\\"\",\"timestamp\":1}",
           "{\"type\":\"NVTX_PUSH\",\"name\":\"abcdefgh\",\"timestamp\":-",
           "{\"type\":\"NVTX_PUSH\",\"na\\u006de\":\"a\",\"timestamp\":1}",
           "{\"type\":\"META\",\"host\":\"h\",\"process_id\":1,\"rank\":2,\"clock\":\"realtime\"}",
           "{\"type\":\"META\",\"host\":\"h\",\"rank\":null,\"clock\":\"nonsense\",\"schema\":\"other/2\"}",
           "{\"type\":\"STATS\",\"records_written\":3}", "{\"type\":\"CLOCK\"}",
       })
    out.push_back(l);
  return out;
}

TEST(RawFastScan, AgreesWithDomParserLineByLine) {
  for (const std::string& line : Variants()) ExpectSameBothWays(line + "\n", line);
}

TEST(RawFastScan, AgreesWithDomParserOnWholeDumps) {
  std::string all;
  for (const std::string& line : Variants()) all += line + "\n";
  ExpectSameBothWays(all, "all variants as one file");
  for (const char* path : {TRUFFLD_SOURCE_DIR "/tests/merge/golden/rank0.jsonl",
                           TRUFFLD_SOURCE_DIR "/tests/merge/golden/rank1.jsonl",
                           TRUFFLD_SOURCE_DIR "/tests/fuzz/corpus/raw_line/marker_dialect.jsonl"}) {
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::stringstream ss;
    ss << in.rdbuf();
    ExpectSameBothWays(ss.str(), path);
  }
}

// The scanner itself: it takes the injector's records and declines what is not plain.
TEST(RawFastScan, TakesPlainRecordsOnly) {
  raw::Fields f;
  EXPECT_TRUE(raw::FastScan(
      R"({"type":"KERNEL","name":"k","gpu_start":1763700000000000000,"gpu_end":-5,"correlation_id":9,"grid":[128,1,1],"block":[256,1,1],"registers":32,"x":null})",
      &f));
  EXPECT_EQ(f.type, "KERNEL");
  EXPECT_EQ(f.v[raw::kGpuStart], 1763700000000000000);
  EXPECT_EQ(f.v[raw::kGpuEnd], -5);
  EXPECT_EQ(f.grid[0], 128);
  EXPECT_EQ(f.block[0], 256);
  // Integers of every length (read 8 digits at a time, then one by one), both signs.
  const std::string digits = "1234567890123456789";  // 19 digits, below INT64_MAX
  for (size_t n = 1; n <= digits.size(); ++n)
    for (const std::string& text : {digits.substr(0, n), "-" + digits.substr(0, n), "1" + std::string(n - 1, '0')}) {
      raw::Fields g;
      ASSERT_TRUE(raw::FastScan("{\"type\":\"x\",\"start\":" + text + "}", &g)) << text;
      EXPECT_EQ(g.v[raw::kStart], std::stoll(text)) << text;
    }
  for (const char* l : {R"({"type":"a\"b"})", "{\"type\":\"caf\xC3\xA9\"}", R"({"type":"x","t":1.5})",
                        R"({"type":"x", "t":1})", R"({"type":"x","p":{}})", R"({"type":"x","t":12345678901234567890})",
                        R"({"type":"x","t":01})", R"({"type":"x"} )", R"({"type":"x","clock_sync":1})"}) {
    raw::Fields g;
    EXPECT_FALSE(raw::FastScan(l, &g)) << l;
  }
}

}  // namespace
}  // namespace truffld::merge
