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
#include "importers/raw/raw_fields.h"
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
                                          "MEMSET", "SYNC", "GRAPH_NODE", "DEVICE_WINDOW", "BOGUS"};
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
           "{\"type\":\"META\",\"host\":\"h\",\"config\":{\"device_windows\":\"steps:4:1\"}}",
           "{\"type\":\"META\",\"host\":\"h\",\"config\":{\"device_windows\":\"all\"}}",
           "{\"type\":\"META\",\"host\":\"h\",\"config\":{\"device_windows\":7}}",
           "{\"type\":\"META\",\"host\":\"h\",\"config\":\"steps:4\"}",
           "{\"type\":\"DEVICE_WINDOW\",\"edge\":\"start\",\"id\":0,\"timestamp\":5,\"trigger\":\"step\"}",
           "{\"type\":\"DEVICE_WINDOW\",\"edge\":\"end\",\"timestamp\":5}",
       })
    out.push_back(l);
  // Integers that end the line, of every length (the scanner reads the last bytes of a line as
  // one word shifted into place), after other integers and alone in lines shorter than a word.
  std::string digits;
  for (int d = 1; d <= 21; ++d) {
    digits += char('0' + (d * 7) % 10);
    for (const std::string& v : {digits, "-" + digits, "0" + digits, digits + "x", digits + " "}) {
      out.push_back("{\"type\":\"NVTX_POP\",\"process_id\":1,\"timestamp\":" + v + "}");
      out.push_back("{\"type\":\"KERNEL\",\"gpu_start\":1,\"gpu_end\":2,\"correlation_id\":" + v);
      out.push_back("{\"a\":" + v + "}");
      out.push_back("{\"id\":" + v + "}");
    }
  }
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
  // Integers of every length, both signs: read 8 digits at a time, then the rest in one word
  // when 8 bytes follow (a long tail of the record) or one by one near the end of the line.
  const std::string digits = "1234567890123456789";  // 19 digits, below INT64_MAX
  for (size_t n = 1; n <= digits.size(); ++n)
    for (const std::string& text : {digits.substr(0, n), "-" + digits.substr(0, n), "1" + std::string(n - 1, '0')})
      for (const std::string tail : {"}", ",\"end\":123456789}", "]}"}) {
        raw::Fields g;
        const bool ok = raw::FastScan("{\"type\":\"x\",\"start\":" + text + tail, &g);
        if (tail == "]}") { EXPECT_FALSE(ok) << text; continue; }  // not an array: refused
        ASSERT_TRUE(ok) << text << tail;
        EXPECT_EQ(g.v[raw::kStart], std::stoll(text)) << text << tail;
        if (tail != "}") { EXPECT_EQ(g.v[raw::kEnd], 123456789); }
      }
  // The word path (24 bytes or more left: up to 19 digits and the byte after them read as three
  // words) at its edges: int64's limits, 20 digits, leading zeros, each digit count with the
  // line long enough and with one byte too few for it.
  const std::string pad = ",\"name\":\"a-long-enough-tail\"}";
  for (const auto& [text, ok] : std::vector<std::pair<std::string, bool>>{
           {"9223372036854775807", true}, {"-9223372036854775808", true}, {"9223372036854775808", false},
           {"-9223372036854775809", false}, {"9999999999999999999", false}, {"12345678901234567890", false},
           {"99999999999999999999", false}, {"18446744073709551617", false}, {"184467440737095516170", false},
           {"01", false}, {"0", true}, {"-0", true}, {"00000000", false}, {"0000000000000000001", false}}) {
    raw::Fields g;
    EXPECT_EQ(raw::FastScan("{\"type\":\"x\",\"start\":" + text + pad, &g), ok) << text;
    if (ok) { EXPECT_EQ(g.v[raw::kStart], std::stoll(text)) << text; }
  }
  for (size_t n = 1; n <= digits.size(); ++n)
    for (const size_t room : {size_t(23), size_t(24), size_t(25)}) {
      // `room` bytes from the first digit to the end of the line: the digits, then filler.
      const std::string num = digits.substr(0, n);
      if (room < n + 1) continue;
      std::string tail = ",\"x\":\"" + std::string(room > n + 8 ? room - n - 8 : 0, 'y') + "\"}";
      if (room < n + tail.size()) tail = "}" + std::string();  // too short for the filler: just close
      raw::Fields g;
      const std::string l = "{\"type\":\"x\",\"start\":" + num + tail;
      ASSERT_TRUE(raw::FastScan(l, &g)) << l;
      EXPECT_EQ(g.v[raw::kStart], std::stoll(num)) << l;
    }
  // A number runs into a byte that is no digit and no delimiter: refused wherever it sits.
  for (size_t n = 1; n <= digits.size(); ++n)
    for (const char stop : {':', '/', 'e', '.', ' ', '\xfa', '\xff', '\x00'}) {
      raw::Fields g;
      const std::string l = "{\"type\":\"x\",\"start\":" + digits.substr(0, n) + stop + "1,\"end\":123456789}";
      EXPECT_FALSE(raw::FastScan(l, &g)) << n << " " << int(stop);
    }
  for (const char* l : {R"({"type":"a\"b"})", "{\"type\":\"caf\xC3\xA9\"}", R"({"type":"x","t":1.5})",
                        R"({"type":"x", "t":1})", R"({"type":"x","p":{}})", R"({"type":"x","t":12345678901234567890})",
                        R"({"type":"x","t":01})", R"({"type":"x"} )", R"({"type":"x","clock_sync":1})"}) {
    raw::Fields g;
    EXPECT_FALSE(raw::FastScan(l, &g)) << l;
  }
}

// Keys remembered from earlier records of a type speed up the next ones and never change what
// is read: near misses (one byte off, longer, shorter, in another position, past the end of
// the line, over the remembered length), types sharing a memo slot, and keys too long to
// remember all read as the DOM parser reads them, record after record.
TEST(RawFastScan, RememberedKeysNeverChangeWhatIsRead) {
  const std::string tail = R"("process_id":4,"thread_id":5,"return_code":0})";
  std::string text;
  for (int round = 0; round < 3; ++round) {
    for (const char* type : {"RUNTIME", "DRIVER", "KERNEL", "NVTX_PUSH", "MEMSET", "BOGUS", "X", "Y"}) {
      const std::string t = std::string(R"({"type":")") + type + R"(",)";
      for (const char* l : {
               R"("name":"a","start":1,"end":2,"correlation_id":3,)",
               R"("name":"b","start":10,"end":20,"correlation_id":30,)",
               R"("name":"c","start":1,"end":2,"correlation_ix":3,)",
               R"("name":"d","start":1,"end":2,"correlation_id2":3,)",
               R"("name":"e","start":1,"end":2,"correlation_i":3,)",
               R"("nam":"f","start":1,"end":2,"correlation_id":3,)",
               R"("name":"g","end":2,"start":1,"correlation_id":3,)",
               R"("name":"h","start":1,"end":2,"a_key_longer_than_the_thirty_two_bytes_remembered":3,)",
               R"("name":"i","start":1,"end":2,"a_key_longer_than_the_thirty_two_bytes_rememberee":3,)",
               R"("name":"j","start":1,"end":2,"original_graph_node_id":7,)",
               R"("name":"k","start":1,"end":2,"original_graph_node_ix":7,)",
               R"("name" :"l","start":1,"end":2,"correlation_id":3,)",
           })
        text += t + l + tail + "\n";
      // Short records: the remembered key runs past the end of the line.
      text += t + R"("name":"m","start":1})" + "\n";
      text += t + R"("name":"n","start":1,"e":2})" + "\n";
      text += t + R"("name":"o","start":1,"end":2,"correlation_id":3})" + "\n";
    }
  }
  ExpectSameBothWays(text, "remembered keys");
  // And directly: the near miss is not taken for the remembered key.
  raw::KeyMemo memo;
  raw::Fields a, b;
  ASSERT_TRUE(raw::FastScan(R"({"type":"RUNTIME","name":"a","correlation_id":3,"thread_id":5})", &a, &memo));
  ASSERT_TRUE(raw::FastScan(R"({"type":"RUNTIME","name":"a","correlation_ix":3,"thread_id":5})", &b, &memo));
  EXPECT_TRUE(a.has[raw::kCorr]);
  EXPECT_FALSE(b.has[raw::kCorr]);
  EXPECT_EQ(b.v[raw::kThread], 5);
}


// Remembered tails (members a record ends with, as the one before it did) replay what reading
// them did, and never change what is read: tails that differ by one byte at the same length,
// grow or shrink, carry strings, nulls, partial arrays, keys the head already set (or sets
// again), a "type", run past the remembered length or the member count, and threads that
// alternate, all read as the DOM parser reads them, record after record.
TEST(RawFastScan, RememberedTailsNeverChangeWhatIsRead) {
  std::vector<std::string> tails = {
      R"("process_id":4,"thread_id":5})", R"("process_id":4,"thread_id":6})", R"("process_id":4,"thread_id":5})",
      R"("process_id":4,"thread_id":55})", R"("process_id":4,"thread_id":5,"domain":"d"})",
      R"("process_id":4,"thread_id":5,"domain":"e"})", R"("process_id":4,"thread_id":5,"domain":null})",
      R"("process_id":4,"thread_id":5,"name":"tail name"})", R"("process_id":4,"thread_id":5,"name":null})",
      R"("device":0,"stream":7,"grid":[128,1,1],"block":[256,1,1],"registers":32})",
      R"("device":0,"stream":7,"grid":[128,1],"block":[256],"registers":32})",
      R"("device":0,"stream":7,"grid":[128,1,1,9],"block":[],"registers":32})",
      R"("device":0,"stream":7,"grid":null,"block":"x","registers":32})",
      R"("rank":null,"process_id":4,"thread_id":5})", R"("rank":3,"process_id":4,"thread_id":5})",
      R"("copy_kind":"HtoD","category":"c","bytes":8,"process_id":4,"thread_id":5})",
      R"("copy_kind":"DtoH","category":"c","bytes":8,"process_id":4,"thread_id":5})",
      R"("start":1,"timestamp":2,"process_id":4,"thread_id":5})",  // keys the head set too
      R"("type":"RUNTIME","process_id":4,"thread_id":5})",        // a type in the tail
      R"("process_id":4,"thread_id":5,"payload":{"a":1}})",
      R"("x1":1,"x2":2,"x3":3,"x4":4,"x5":5,"x6":6,"x7":7,"x8":8,"x9":9,"x10":10,"x11":11,"x12":12,"x13":13,"process_id":4})",
      R"("a_long_key_to_pass_the_remembered_bytes_0123456789":"0123456789012345678901234567890123456789012345678901234567890123456789","process_id":4,"thread_id":5})",
  };
  std::vector<std::string> heads;
  for (const char* type : {"NVTX_PUSH", "RUNTIME", "KERNEL", "MEMCPY", "NVTX_POP"})
    for (const char* mid : {R"("name":"n","timestamp":1,"start":1,"end":2,"gpu_start":1,"gpu_end":2,"correlation_id":3,)",
                            R"("name":"m","timestamp":9,"start":9,"end":9,"gpu_start":9,"gpu_end":9,"correlation_id":4,)",
                            R"("timestamp":1,"start":1,"end":2,"gpu_start":1,"gpu_end":2,)"})
      heads.push_back(std::string(R"({"type":")") + type + R"(",)" + mid);
  std::string text;
  for (const std::string& h : heads) {
    for (const std::string& t : tails) text += h + t + "\n" + h + t + "\n" + h + t + "\n";  // learnt, then replayed
    for (size_t i = 0; i < tails.size(); ++i) text += h + tails[i] + "\n" + h + tails[(i * 7 + 3) % tails.size()] + "\n";
  }
  // A record whose tail repeats but whose head holds a tail-looking member later on.
  text += R"({"type":"NVTX_POP","timestamp":1,"process_id":4,"thread_id":5})" "\n";
  text += R"({"type":"NVTX_POP","timestamp":2,"process_id":4,"thread_id":5})" "\n";
  text += R"({"type":"NVTX_POP","process_id":4,"thread_id":5,"timestamp":2,"process_id":4,"thread_id":5})" "\n";
  text += R"({"type":"NVTX_POP","timestamp":3,"process_id":4,"thread_id":5} )" "\n";
  text += R"({"type":"NVTX_POP","timestamp":3,"process_id":4,"thread_id":5)" "\n";
  text += R"({"type":"NVTX_POP","timestamp":4,"process_id":4,"thread_id":5}x)" "\n";
  text += R"({"type":"NVTX_POP","timestamp":4,"process_id":4,"thread_id":5})" "\n";
  text += R"({"type":"NVTX_POP","timestamp":4,"process_id":4,"thread_id":5}})" "\n";
  // Partial arrays in the tail keep what the head set in the rest: learnt with one head's,
  // replayed over another's.
  for (const char* g : {"[9,9,9]", "[7,7,7]", "[5,5,5]"})
    text += std::string(R"({"type":"KERNEL","grid":)") + g + R"(,"block":)" + g +
            R"(,"gpu_start":1,"gpu_end":2,"correlation_id":3,"device":0,"grid":[128,1],"block":[256]})" "\n";
  ExpectSameBothWays(text, "remembered tails");

  // And directly: the second and third records replay the first's tail, each with its own bytes.
  raw::KeyMemo memo;
  raw::Fields a, b, c;
  ASSERT_TRUE(raw::FastScan(R"({"type":"NVTX_PUSH","name":"x","timestamp":1,"process_id":4,"thread_id":5,"domain":"dd"})", &a, &memo));
  ASSERT_TRUE(raw::FastScan(R"({"type":"NVTX_PUSH","name":"y","timestamp":2,"process_id":4,"thread_id":5,"domain":"dd"})", &b, &memo));
  bool learnt = false;
  for (const auto& t : memo.tails) learnt |= t.at == 3;
  EXPECT_TRUE(learnt) << "the members from process_id on are remembered";
  const std::string line = R"({"type":"NVTX_PUSH","name":"z","timestamp":3,"process_id":4,"thread_id":5,"domain":"dd"})";
  ASSERT_TRUE(raw::FastScan(line, &c, &memo));
  EXPECT_EQ(c.v[raw::kThread], 5);
  EXPECT_EQ(c.v[raw::kProcess], 4);
  EXPECT_EQ(c.v[raw::kTimestamp], 3);
  EXPECT_EQ(c.name, "z");
  EXPECT_EQ(c.domain, "dd");
  EXPECT_EQ(c.domain.data(), line.data() + line.size() - 4) << "views point into the record read";
}


// A remembered `{"type":"T",` stands for reading the type member only where the bytes are
// exactly those: other types sharing its first bytes, types of every length around the 4-14
// the memo keeps, a type not followed by a comma, escaped or duplicated, records too short for
// the compare, all read as the DOM parser reads them.
TEST(RawFastScan, RememberedTypeMembersNeverChangeWhatIsRead) {
  std::string text;
  const std::string rest = R"("name":"n","timestamp":1,"start":1,"end":2,"correlation_id":3,"process_id":4,"thread_id":5})";
  for (int round = 0; round < 3; ++round) {
    for (const char* type : {"NVTX_PUSH", "NVTX_PUSHX", "NVTX_PUS", "NVTX_POP", "NVTX_POPS", "KERNEL", "KERNELS",
                             "SYNC", "SYN", "SY", "S", "", "RUNTIME", "RUNTIME_LONG_NAME", "RUNTIME_LONG_NAM",
                             "GRAPH_NODE", "MEMCPY", "MEMSET", "META", "CLOCK", "STATS", "BOGUS"}) {
      const std::string t = type;
      text += R"({"type":")" + t + R"(",)" + rest + "\n";
      text += R"({"type":")" + t + R"(",)" + rest + "\n";
      text += R"({"type":")" + t + R"("})" "\n";
      text += R"({"type":")" + t + R"(" ,)" + rest + "\n";
      text += R"({"type":")" + t + R"(",)" "\n";
      text += R"({"type":")" + t + R"(","type":"KERNEL",)" + rest + "\n";
      text += R"({"type":")" + t + R"(","x":1})" "\n";
      text += R"({"type" :")" + t + R"(",)" + rest + "\n";
    }
    text += R"({"type":"KERN\u0045L",)" + rest + "\n";
    text += R"({"type":"KERNEL\"",)" + rest + "\n";
    text += R"({"type":"KERNEL",)" + rest + "\n";
  }
  ExpectSameBothWays(text, "remembered type members");
}

}  // namespace
}  // namespace truffld::merge
