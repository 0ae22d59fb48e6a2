// Output writers: trees.jsonl lines per request, trace.json track discipline, summary.json,
// and JSON escaping of hostile names.
#include "truffld/merge/writers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "appendix_example.h"
#include "truffld/json_escape.h"
#include "merge_test_util.h"

namespace truffld::merge {
namespace {

using nlohmann::json;

MergeResult MergeAppendixText(const std::string& dump) {
  std::vector<TraceFile> files;
  files.push_back(testing::FileFromLines(dump, "appendix.jsonl"));
  auto r = Merge(std::move(files), {});
  EXPECT_TRUE(r.ok());
  return std::move(r).value();
}

std::vector<json> Lines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line));
  return out;
}

const json* Find(const json& n, const std::string& name) {
  if (n["name"] == name) return &n;
  if (n.contains("children"))
    for (const json& c : n["children"])
      if (const json* f = Find(c, name)) return f;
  return nullptr;
}

TEST(TreesJsonl, OneLinePerRequestAndViewWithSchemaFields) {
  MergeResult r = MergeAppendixText(testing::AppendixExampleDump());
  JsonOut out;
  EXPECT_EQ(WriteTreesJsonl(r, &out), 6u);
  auto lines = Lines(out.text());
  ASSERT_EQ(lines.size(), 6u);
  std::map<std::pair<std::string, std::string>, json> by;
  for (const json& t : lines) {
    EXPECT_EQ(t["schema"], "truffld.trees/1");
    EXPECT_EQ(t["rank"], 0);
    EXPECT_EQ(t["step_index"], 0);
    EXPECT_EQ(t["requests"], json::array({"0", "1", "2"}));
    by[{t["request"].get<std::string>(), t["view"].get<std::string>()}] = t;
  }
  const json& v1 = by[{"1", "vertical"}];
  const json& v0 = by[{"0", "vertical"}];
  ASSERT_TRUE(v1.contains("root"));
  EXPECT_NE(Find(v1["root"], "sampler[request_ids:1]"), nullptr);
  EXPECT_EQ(Find(v0["root"], "sampler[request_ids:1]"), nullptr);  // request subset excludes 0
  const json* mm = Find(v0["root"], "aten::mm, seq = 0, op_id = 5");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ((*mm)["layer"], "backend_op");
  EXPECT_EQ((*mm)["family"], "aten::mm");
  const json& call = (*mm)["children"][0];
  EXPECT_EQ(call["layer"], "runtime_call");
  EXPECT_EQ(call["correlation_id"], 12);
  const json& k = call["children"][0];
  EXPECT_EQ(k["layer"], "kernel");
  EXPECT_EQ(k["family"], "gemm");
  EXPECT_EQ(k["stream"], 7);
  EXPECT_EQ(k["device"], 0);
  const json& h = by[{"2", "horizontal"}];
  ASSERT_EQ(h["root"]["children"].size(), 1u);
  EXPECT_EQ(h["root"]["children"][0]["anchor"]["layer"], "step");
}

// Device records share one extra record when their fields agree; the writer renders that
// record's fields once and reuses the text, but what it writes depends on the node: a kernel
// prints its geometry, a copy with the same (odd) geometry fields does not.
TEST(TreesJsonl, SharedExtraRecordsPrintWhatEachNodeOwns) {
  std::string d =
      R"({"type":"META","schema":"truffld.events/1","host":"h","process_id":1,"rank":0,"clock":"realtime"})" "\n"
      R"({"type":"NVTX_PUSH","name":"step_execute_model[request_ids:0]","timestamp":100,"process_id":1,"thread_id":2,"domain":"truffld"})" "\n";
  const char* device[] = {"KERNEL", "MEMCPY", "KERNEL", "MEMCPY"};
  for (int i = 0; i < 4; ++i) {
    const std::string t0 = std::to_string(200 + 100 * i), t1 = std::to_string(250 + 100 * i);
    d += R"({"type":"RUNTIME","name":"launch","start":)" + t0 + R"(,"end":)" + t1 +
         R"(,"correlation_id":)" + std::to_string(i + 1) + R"(,"process_id":1,"thread_id":2,"stream":7,"bytes":64})" "\n";
    d += std::string(R"({"type":")") + device[i] + R"(","name":"op)" + std::to_string(i) + R"(","gpu_start":)" + t1 +
         R"(,"gpu_end":)" + std::to_string(260 + 100 * i) + R"(,"correlation_id":)" + std::to_string(i + 1) +
         R"(,"stream":7,"bytes":64,"grid":[2,1,1],"block":[64,1,1]})" "\n";
  }
  d += R"({"type":"NVTX_POP","timestamp":900,"process_id":1,"thread_id":2})" "\n";
  MergeResult r = MergeAppendixText(d);
  JsonOut out;
  ASSERT_EQ(WriteTreesJsonl(r, &out), 2u);
  const json vertical = Lines(out.text())[0];
  ASSERT_EQ(vertical["view"], "vertical");
  const json& calls = vertical["root"]["children"];
  ASSERT_EQ(calls.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const json& call = calls[i];
    EXPECT_EQ(call["layer"], "runtime_call");
    EXPECT_EQ(call["stream"], 7);
    EXPECT_EQ(call["bytes"], 64);
    ASSERT_EQ(call["children"].size(), 1u);
    const json& op = call["children"][0];
    EXPECT_EQ(op["layer"], i % 2 ? "memcpy" : "kernel") << i;
    EXPECT_EQ(op["stream"], 7);
    EXPECT_EQ(op["bytes"], 64);
    EXPECT_EQ(op.contains("grid"), i % 2 == 0) << i;
    EXPECT_EQ(op.contains("block"), i % 2 == 0) << i;
    if (i % 2 == 0) {
      EXPECT_EQ(op["grid"], json::array({2, 1, 1}));
    }
  }
}

TEST(TreesJsonl, GroupedLayoutWritesIdenticalTreesOnceAndExpandsExactly) {
  // The appendix step has requests 0,1,2 and a sampler range naming only request 1: request 1
  // sees a different vertical tree from 0 and 2, which share one; the horizontal view has no
  // subset ranges, so all three share one line.
  MergeResult r = MergeAppendixText(testing::AppendixExampleDump());
  JsonOut per, grouped;
  ASSERT_EQ(WriteTreesJsonl(r, &per, TreeLayout::kPerRequest), 6u);
  ASSERT_EQ(WriteTreesJsonl(r, &grouped, TreeLayout::kGrouped), 3u);
  std::map<std::pair<std::string, std::string>, json> want, got;
  for (json t : Lines(per.text())) {
    EXPECT_FALSE(t.contains("request_group"));
    want[{t["request"].get<std::string>(), t["view"].get<std::string>()}] = t;
  }
  std::map<std::string, std::vector<std::string>> groups;  // view -> group spellings
  for (const json& t : Lines(grouped.text())) {
    std::vector<std::string> ids;
    if (t.contains("request_group")) {
      ids = t["request_group"].get<std::vector<std::string>>();
      EXPECT_GE(ids.size(), 2u);
      EXPECT_EQ(ids.front(), t["request"]);
    } else {
      ids = {t["request"].get<std::string>()};
    }
    std::string spelled;
    for (const auto& q : ids) spelled += q;
    groups[t["view"].get<std::string>()].push_back(spelled);
    for (const auto& q : ids) {
      json u = t;
      u.erase("request_group");
      u["request"] = q;
      EXPECT_TRUE(got.emplace(std::make_pair(q, t["view"].get<std::string>()), u).second) << q;
    }
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(groups["vertical"], (std::vector<std::string>{"02", "1"}));
  EXPECT_EQ(groups["horizontal"], (std::vector<std::string>{"012"}));
}

// Names are written through a per-string "needs escaping" cache: a hostile name printed many
// times (and plain names beside it) must come out exactly, every time, in both outputs.
TEST(Writers, RepeatedHostileAndPlainNamesRoundTripInBothOutputs) {
  const std::string hostile_json = "op \\\"q\\\" \\\\ \\u0001 \\u00e9";  // as spelled in the dump
  const std::string hostile = "op \"q\" \\ \x01 \xC3\xA9";             // as decoded
  std::string dump = "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"h\",\"process_id\":1,\"rank\":0}\n"
                     "{\"type\":\"NVTX_PUSH\",\"name\":\"step_execute_model[request_ids:7]\",\"timestamp\":100,\"process_id\":1,\"thread_id\":1,\"domain\":\"d\\\"x\"}\n";
  for (int i = 0; i < 3; ++i) {
    int t = 150 + 200 * i;
    for (const std::string& name : {hostile_json, std::string("aten::add")}) {
      t += 50;
      dump += "{\"type\":\"NVTX_PUSH\",\"name\":\"" + name + "\",\"timestamp\":" + std::to_string(t) +
              ",\"process_id\":1,\"thread_id\":1,\"domain\":\"d\\\"x\"}\n";
      dump += "{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(t + 40) + ",\"process_id\":1,\"thread_id\":1}\n";
    }
  }
  dump += "{\"type\":\"NVTX_POP\",\"timestamp\":990,\"process_id\":1,\"thread_id\":1}\n";
  MergeResult r = MergeAppendixText(dump);
  JsonOut trees, trace;
  WriteTreesJsonl(r, &trees);
  WriteChromeTrace(r, &trace);
  int hostile_nodes = 0, plain_nodes = 0;
  for (const json& t : Lines(trees.text())) {
    if (t["view"] != "vertical") continue;
    for (const json& c : t["root"]["children"]) {
      EXPECT_EQ(c["domain"], "d\"x");
      if (c["name"] == hostile) ++hostile_nodes;
      if (c["name"] == "aten::add") ++plain_nodes;
    }
  }
  EXPECT_EQ(hostile_nodes, 3);
  EXPECT_EQ(plain_nodes, 3);
  int hostile_slices = 0;
  const json doc = json::parse(trace.text());
  for (const json& e : doc["traceEvents"])
    if (e["ph"] == "X" && e["name"] == hostile) ++hostile_slices;
  EXPECT_EQ(hostile_slices, 3);
}

TEST(JsonOut, EscapesControlAndInvalidUtf8) {
  std::string s;
  AppendJsonString(&s, std::string("a\"b\\c\n\x01\xff\xC3\xA9", 10));
  EXPECT_EQ(s, "\"a\\\"b\\\\c\\n\\u0001\\ufffd\xC3\xA9\"");
  EXPECT_TRUE(json::accept(s));
  JsonOut o;
  o.Micros(1234567);
  o.Char(' ');
  o.Micros(-5);
  EXPECT_EQ(o.text(), "1234.567 -0.005");
}

// Values for the number writers: both signs around every power of ten (10^0 .. 10^18: every
// digit count and 8-digit chunk boundary).
void AddDigitCountEdges(std::vector<int64_t>* values) {
  for (int64_t p = 1;; p *= 10) {
    for (int64_t v : {p - 1, p, p + 1, p * 2 - 1}) {
      values->push_back(v);
      values->push_back(-v);
    }
    if (p > INT64_MAX / 10) break;
  }
}

// Arbitrary values of every size, both signs (xorshift).
void AddArbitrary(std::vector<int64_t>* values) {
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    values->push_back(int64_t(x >> (i % 64)));
    values->push_back(-int64_t(x >> (i % 63 + 1)));  // shifts 1..63: fits, negation safe
  }
}

// Writes every value with `write` through one JsonOut, a line each (a fresh 1 MiB buffer per
// value is slow under ASan), and expects line k to be reference(values[k]).
template <class Write, class Reference>
void ExpectLines(const std::vector<int64_t>& values, Write write, Reference reference) {
  JsonOut o;
  for (int64_t v : values) {
    write(o, v);
    o.Char('\n');
  }
  std::istringstream got(o.text());
  std::string line;
  for (int64_t v : values) {
    ASSERT_TRUE(std::getline(got, line));
    ASSERT_EQ(line, reference(v)) << v;
  }
}

// Integers are printed in 8-digit chunks: every digit count and chunk boundary must match
// std::to_string, as must the int64 extremes.
TEST(JsonOut, IntegersMatchToString) {
  std::vector<int64_t> values = {0, 1, 9, 10, 99, 100, INT64_MAX, INT64_MIN, INT64_MIN + 1, -1};
  AddDigitCountEdges(&values);
  // Every 4-digit value in either half of an 8-digit block (the block writer splits them
  // arithmetically), the other half varying, in the low and the middle block of a timestamp.
  for (int64_t h = 0; h < 10000; ++h) {
    const int64_t other = (h * 7919) % 10000;
    values.push_back(1763700000LL * 100000000 + h * 10000 + other);
    values.push_back(1763700000LL * 100000000 + other * 10000 + h);
    values.push_back(17LL * 10000000000000000 + (h * 10000 + other) * 100000000 + 12345678);
  }
  AddArbitrary(&values);
  ExpectLines(values, [](JsonOut& o, int64_t v) { o.Int(v); }, [](int64_t v) { return std::to_string(v); });
  JsonOut m;
  m.Micros(1763700000000000123);
  EXPECT_EQ(m.text(), "1763700000000000.123");
}

// Micros prints ns as us with three decimals; from 10^8 ns on, the low eight digits are split
// around the '.' arithmetically and the digits above them are reused while they repeat. Every
// value must read as the plain quotient and remainder would print it.
TEST(JsonOut, MicrosMatchQuotientAndRemainder) {
  auto reference = [](int64_t ns) {
    std::string sign;
    uint64_t u = uint64_t(ns);
    if (ns < 0) {
      sign = "-";
      u = ns == INT64_MIN ? uint64_t(INT64_MAX) : uint64_t(-ns);  // clamped as documented
    }
    char frac[8];
    std::snprintf(frac, sizeof frac, ".%03u", unsigned(u % 1000));
    return sign + std::to_string(u / 1000) + frac;
  };
  std::vector<int64_t> values = {0, 1, 999, 1000, 1001, INT64_MAX, INT64_MIN, INT64_MIN + 1};
  AddDigitCountEdges(&values);  // both sides of 10^8 among them
  // Every 4-digit value in either half of the low block, near and far from the origin, with
  // the digits above the block kept and changed between neighbours.
  for (int64_t h = 0; h < 10000; ++h) {
    const int64_t other = (h * 7919) % 10000;
    values.push_back(8LL * 100000000 + h * 10000 + other);
    values.push_back(8LL * 100000000 + other * 10000 + h);
    values.push_back((1763700000LL + h % 3) * 100000000 + h * 10000 + other);
  }
  AddArbitrary(&values);
  ExpectLines(values, [](JsonOut& o, int64_t v) { o.Micros(v); }, reference);
}

// The block-at-a-time scan (16 bytes with SSE2, then 8, then 1) finds the first special byte
// wherever it sits relative to the blocks, and only special bytes stop it.
TEST(JsonBytes, PlainPrefixMatchesBytewiseAtEveryPosition) {
  const unsigned char stops[] = {'"', '\\', 0x00, 0x0a, 0x1f, 0x80, 0xc3, 0xff};
  const unsigned char passes[] = {0x20, 0x7f, 'a', '~', '!', '#', '[', 0x5d};
  for (size_t n = 0; n <= 70; ++n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += char(passes[i % sizeof passes]);
    ASSERT_EQ(JsonPlainPrefix(s.data(), n), n) << n;
    for (size_t pos = 0; pos < n; ++pos)
      for (unsigned char c : stops) {
        std::string t = s;
        t[pos] = char(c);
        if (pos + 1 < n) t[n - 1] = '"';  // a later stop must not win
        ASSERT_EQ(JsonPlainPrefix(t.data(), n), pos) << "n=" << n << " pos=" << pos << " byte=" << int(c);
      }
  }
}

// The escaper checks 8 bytes at a time: every byte that needs care must be caught at every
// position of a word, next to plain bytes on both sides, and the text must stay valid JSON
// that decodes back (invalid UTF-8 as U+FFFD).
TEST(JsonOut, WordAtATimeEscapingMatchesBytewise) {
  const std::string specials[] = {"\"", "\\", "\n", std::string(1, '\0'), "\x1f", "\x7f", "\xC3\xA9",
                                  "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xff", "\xC3", "\xED\xA0\x80"};
  for (const std::string& sp : specials) {
    for (size_t pos = 0; pos < 20; ++pos) {
      std::string s = std::string(pos, 'a') + sp + std::string(19 - pos % 19, 'b');
      std::string out;
      AppendJsonString(&out, s);
      ASSERT_TRUE(json::accept(out)) << pos << " " << out;
      const std::string back = json::parse(out).get<std::string>();
      // Invalid UTF-8 becomes one U+FFFD per byte that cannot start a valid sequence.
      const size_t bad = sp == "\xff" || sp == "\xC3" ? 1 : sp == "\xED\xA0\x80" ? 3 : 0;
      std::string want = s;
      if (bad) {
        want = std::string(pos, 'a');
        for (size_t k = 0; k < bad; ++k) want += "\xEF\xBF\xBD";
        want += std::string(19 - pos % 19, 'b');
      }
      EXPECT_EQ(back, want) << pos;
      EXPECT_EQ(JsonNeedsNoEscape(s), sp == "\x7f") << pos;  // DEL needs no escape in JSON
      JsonOut o;
      o.String(s);
      EXPECT_EQ(o.text(), out) << pos;
    }
  }
  EXPECT_TRUE(JsonNeedsNoEscape("plain ascii text, longer than one word ~!@#$%^&*()"));
  EXPECT_TRUE(JsonNeedsNoEscape(""));
  // Big strings grow the in-memory buffer past its first block.
  JsonOut big;
  std::string huge(3 * JsonOut::kBlock, 'x');
  huge[JsonOut::kBlock + 5] = '"';
  big.String(huge);
  EXPECT_EQ(big.text().size(), huge.size() + 3);
  EXPECT_EQ(json::parse(big.text()).get<std::string>(), huge);
}

TEST(TreesJsonl, HostileNamesStayValidJson) {
  std::string name = "bad\\u0000 \xff\xfe \x7f tab\t";
  std::string d = "{\"type\":\"NVTX_PUSH\",\"name\":\"step_execute_model[request_ids:x\xff]\",\"timestamp\":1,\"process_id\":1,\"thread_id\":1}\n"
                  "{\"type\":\"NVTX_PUSH\",\"name\":\"" + name + "\",\"timestamp\":2,\"process_id\":1,\"thread_id\":1}\n"
                  "{\"type\":\"NVTX_POP\",\"timestamp\":3,\"process_id\":1,\"thread_id\":1}\n"
                  "{\"type\":\"NVTX_POP\",\"timestamp\":4,\"process_id\":1,\"thread_id\":1}\n";
  MergeResult r = MergeAppendixText(d);
  JsonOut out;
  ASSERT_EQ(WriteTreesJsonl(r, &out), 2u);
  for (const json& t : Lines(out.text())) EXPECT_EQ(t["request"], "x\xEF\xBF\xBD");
  JsonOut trace;
  WriteChromeTrace(r, &trace);
  EXPECT_TRUE(json::accept(trace.text()));
}

TEST(ChromeTrace, NoPartialOverlapOnATrackAndFlowsPerLaunch) {
  // Two start/end ranges that cross on one thread cannot nest: one moves to an overflow track.
  std::string d = testing::AppendixExampleDump();
  d += "{\"type\":\"NVTX_START\",\"id\":1,\"name\":\"x\",\"timestamp\":1100,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_START\",\"id\":2,\"name\":\"y\",\"timestamp\":1150,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_END\",\"id\":1,\"timestamp\":1250,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_END\",\"id\":2,\"timestamp\":1350,\"process_id\":1,\"thread_id\":1}\n";
  MergeResult r = MergeAppendixText(d);
  JsonOut out;
  TraceStats st = WriteChromeTrace(r, &out);
  json t = json::parse(out.text());
  EXPECT_GE(st.moved_to_overflow_track, 1u);
  EXPECT_EQ(st.flows, 4u);  // four linked device ops
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> tracks;
  // Flows (v2): each device slice has "flow_in" with the "bind_id" of a launch slice that has
  // "flow_out"; launch slices are API calls and start no later than their device work.
  std::map<int64_t, json> launches;
  std::vector<json> device;
  for (const json& e : t["traceEvents"]) {
    EXPECT_NE(e["ph"], "s");
    EXPECT_NE(e["ph"], "f");
    if (e["ph"] == "X") tracks[{e["pid"], e["tid"]}].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    if (e.value("flow_out", false)) launches[e["bind_id"].get<int64_t>()] = e;
    if (e.value("flow_in", false)) device.push_back(e);
  }
  ASSERT_EQ(device.size(), 4u);
  for (const json& d : device) {
    ASSERT_TRUE(launches.count(d["bind_id"].get<int64_t>())) << d.dump();
    const json& l = launches[d["bind_id"].get<int64_t>()];
    EXPECT_TRUE(l["cat"] == "runtime_call" || l["cat"] == "driver_call") << l.dump();
    EXPECT_LE(l["ts"].get<double>(), d["ts"].get<double>());
    EXPECT_TRUE(d["cat"] == "kernel" || d["cat"] == "memcpy" || d["cat"] == "memset") << d.dump();
  }
  for (auto& [k, v] : tracks) {
    for (size_t i = 0; i < v.size(); ++i)
      for (size_t j = 0; j < v.size(); ++j) {
        if (i == j) continue;
        auto [a0, a1] = v[i];
        auto [b0, b1] = v[j];
        bool crossing = a0 < b0 && b0 < a1 && a1 < b1;
        EXPECT_FALSE(crossing) << "track " << k.first << "/" << k.second;
      }
  }
}

TEST(Summary, CarriesCountersPerFileAndTotal) {
  MergeResult r = MergeAppendixText(testing::AppendixExampleDump());
  RunInfo run;
  run.inputs = {"appendix.jsonl"};
  run.failed_inputs = {{"gone.jsonl", "not found"}};
  JsonOut out;
  WriteSummaryJson(r, run, &out);
  json s = json::parse(out.text());
  EXPECT_EQ(s["schema"], "truffld.summary/1");
  EXPECT_EQ(s["total"]["kernels_read"], 5);
  EXPECT_EQ(s["total"]["device_ops_unattributed"], 2);
  EXPECT_EQ(s["total"]["injector_dropped"], 3);
  EXPECT_EQ(s["files"][0]["rank"], 0);
  EXPECT_EQ(s["files"][0]["clock_offset_method"], "native_realtime");
  EXPECT_EQ(s["files"][0]["injector_stats"]["records_written"], 40);
  EXPECT_EQ(s["failed_inputs"][0]["path"], "gone.jsonl");
  EXPECT_EQ(s["ranks"][0]["steps"], 1);
  std::string text = FormatTextSummary(r, run);
  EXPECT_NE(text.find("no_launch_api 1"), std::string::npos) << text;
  EXPECT_NE(text.find("not merged: not found"), std::string::npos) << text;
}

TEST(ChromeTrace, TimeOriginIsTheWholeSecondAtOrBefore) {
  EXPECT_EQ(TraceTimeOrigin(1763700000123456789), 1763700000000000000);
  EXPECT_EQ(TraceTimeOrigin(1763700000000000000), 1763700000000000000);
  EXPECT_EQ(TraceTimeOrigin(999999999), 0);
  EXPECT_EQ(TraceTimeOrigin(0), 0);
  EXPECT_EQ(TraceTimeOrigin(-1), -1000000000);
  EXPECT_EQ(TraceTimeOrigin(-1000000000), -1000000000);
  EXPECT_EQ(TraceTimeOrigin(-1000000001), -2000000000);
  EXPECT_EQ(TraceTimeOrigin(INT64_MAX), INT64_MAX / 1000000000 * 1000000000);
  EXPECT_EQ(TraceTimeOrigin(INT64_MIN), INT64_MIN);  // the second below does not fit
  EXPECT_EQ(TraceTimeOrigin(INT64_MIN + 1000000000), -9223372036000000000);
}

// Viewers read "ts" as a double. At epoch times (~1.8e15 us) a double holds a quarter of a
// microsecond, so edges 1 ns apart would merge or cross; since the origin every nanosecond must
// come back, and nested slices must stay nested, when read the way Perfetto reads them.
TEST(ChromeTrace, TimesKeepEveryNanosecondThroughADoubleReader) {
  const long long t0 = 1763700000123456789LL;
  auto at = [&](long long d) { return std::to_string(t0 + d); };
  std::string d = "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"h\",\"process_id\":1,\"rank\":0,"
                  "\"clock\":\"realtime\",\"clock_sync\":{\"realtime_ns\":0,\"monotonic_ns\":0}}\n"
                  "{\"type\":\"NVTX_PUSH\",\"name\":\"step_execute_model[request_ids:a]\",\"timestamp\":" + at(0) + ",\"process_id\":1,\"thread_id\":1}\n"
                  "{\"type\":\"NVTX_PUSH\",\"name\":\"outer\",\"timestamp\":" + at(100) + ",\"process_id\":1,\"thread_id\":1}\n"
                  "{\"type\":\"NVTX_PUSH\",\"name\":\"inner\",\"timestamp\":" + at(101) + ",\"process_id\":1,\"thread_id\":1}\n"
                  "{\"type\":\"RUNTIME\",\"name\":\"cudaLaunchKernel\",\"start\":" + at(102) + ",\"end\":" + at(103) +
                  ",\"correlation_id\":1,\"process_id\":1,\"thread_id\":1}\n"
                  "{\"type\":\"NVTX_POP\",\"timestamp\":" + at(104) + ",\"process_id\":1,\"thread_id\":1}\n"
                  "{\"type\":\"NVTX_POP\",\"timestamp\":" + at(105) + ",\"process_id\":1,\"thread_id\":1}\n"
                  "{\"type\":\"NVTX_PUSH\",\"name\":\"next\",\"timestamp\":" + at(105) + ",\"process_id\":1,\"thread_id\":1}\n"
                  "{\"type\":\"NVTX_POP\",\"timestamp\":" + at(106) + ",\"process_id\":1,\"thread_id\":1}\n"
                  "{\"type\":\"NVTX_POP\",\"timestamp\":" + at(2000000000) + ",\"process_id\":1,\"thread_id\":1}\n"
                  "{\"type\":\"KERNEL\",\"name\":\"k\",\"gpu_start\":" + at(1999999997) + ",\"gpu_end\":" + at(1999999999) +
                  ",\"correlation_id\":1,\"device\":0,\"stream\":1}\n";
  MergeResult r = MergeAppendixText(d);
  JsonOut out;
  const TraceStats st = WriteChromeTrace(r, &out);
  EXPECT_EQ(st.time_origin_ns, 1763700000000000000);
  const json trace = json::parse(out.text());
  ASSERT_EQ(trace["otherData"]["time_origin_ns"], "1763700000000000000");
  const long long origin = std::stoll(trace["otherData"]["time_origin_ns"].get<std::string>());
  std::map<std::string, std::pair<long long, long long>> got;
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<long long, long long>>> tracks;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const long long s = origin + std::llround(e["ts"].get<double>() * 1000.0);  // as Perfetto does
    const long long en = s + std::llround(e["dur"].get<double>() * 1000.0);
    got[e["name"].get<std::string>()] = {s, en};
    tracks[{e["pid"], e["tid"]}].push_back({s, en});
  }
  const std::map<std::string, std::pair<long long, long long>> want = {
      {"step_execute_model[request_ids:a]", {t0, t0 + 2000000000}}, {"outer", {t0 + 100, t0 + 105}},
      {"inner", {t0 + 101, t0 + 104}}, {"cudaLaunchKernel", {t0 + 102, t0 + 103}},
      {"next", {t0 + 105, t0 + 106}}, {"k", {t0 + 1999999997, t0 + 1999999999}}};
  EXPECT_EQ(got, want);
  for (auto& [track, v] : tracks)  // read back as doubles, slices on a track nest or are disjoint
    for (auto& a : v)
      for (auto& b : v)
        EXPECT_FALSE(a.first < b.first && b.first < a.second && a.second < b.second)
            << track.second << ": [" << a.first << "," << a.second << ") crosses [" << b.first << "," << b.second << ")";
}

// A track's slices are put in (start, longer first) order before lanes are assigned: kernels
// listed in a few sorted runs (merged as visited) or in over 64 (the fallback sort) must get the
// lanes a plain sort then greedy assignment gives. Each start time has a short kernel listed
// first and a longer one listed later, which must come first.
TEST(ChromeTrace, LanesFollowStartOrderWhateverTheFileOrder) {
  for (int runs : {1, 4, 100}) {  // 4 blocks: four sorted runs, merged; 1 or 100: over 64 runs, sorted
    std::string d = "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"h\",\"process_id\":1,\"rank\":0,"
                    "\"clock\":\"realtime\",\"clock_sync\":{\"realtime_ns\":0,\"monotonic_ns\":0}}\n"
                    "{\"type\":\"NVTX_PUSH\",\"name\":\"step_execute_model[request_ids:a]\",\"timestamp\":0,\"process_id\":1,\"thread_id\":1}\n"
                    "{\"type\":\"NVTX_POP\",\"timestamp\":1000000,\"process_id\":1,\"thread_id\":1}\n";
    const int n = 200;
    std::vector<std::pair<long long, long long>> spans;  // kernel k's (start, end), file order
    for (int k = 0; k < n; ++k) {
      d += "{\"type\":\"RUNTIME\",\"name\":\"cudaLaunchKernel\",\"start\":" + std::to_string(100 + k) + ",\"end\":" +
           std::to_string(100 + k) + ",\"correlation_id\":" + std::to_string(k + 1) + ",\"process_id\":1,\"thread_id\":1}\n";
      // Kernel k starts at slot p(k): the file lists `runs` blocks, each ascending, whose slots
      // interleave; 15 or 25 ns long on a 10 ns grid, two per start time.
      const int p = (k % (n / runs)) * runs + k / (n / runs);
      const long long start = 1000 + (p / 2) * 10, end = start + 15 + (p % 2) * 10;  // the later-listed one is longer
      spans.push_back({start, end});
    }
    for (int k = 0; k < n; ++k)
      d += "{\"type\":\"KERNEL\",\"name\":\"k\",\"gpu_start\":" + std::to_string(spans[k].first) + ",\"gpu_end\":" +
           std::to_string(spans[k].second) + ",\"correlation_id\":" + std::to_string(k + 1) + ",\"device\":0,\"stream\":1}\n";
    MergeResult r = MergeAppendixText(d);
    JsonOut out;
    TraceStats st = WriteChromeTrace(r, &out);
    // The reference: sort by (start, longer first, file order), then first lane that nests.
    std::vector<int> order(n);
    for (int k = 0; k < n; ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      if (spans[a].first != spans[b].first) return spans[a].first < spans[b].first;
      return spans[a].second != spans[b].second ? spans[a].second > spans[b].second : a < b;
    });
    std::vector<std::vector<long long>> lanes;
    std::map<std::pair<long long, long long>, std::multiset<size_t>> want;  // span -> lanes
    uint64_t moved = 0;
    for (int k : order) {
      size_t lane = 0;
      for (;; ++lane) {
        if (lane == lanes.size()) lanes.emplace_back();
        auto& stack = lanes[lane];
        while (!stack.empty() && stack.back() <= spans[k].first) stack.pop_back();
        if (stack.empty() || spans[k].second <= stack.back()) { stack.push_back(spans[k].second); break; }
      }
      moved += lane > 0;
      want[spans[k]].insert(lane);
    }
    EXPECT_EQ(st.moved_to_overflow_track, moved) << runs << " runs";
    EXPECT_GT(moved, 0u);
    std::map<std::pair<long long, long long>, std::multiset<size_t>> got;
    const json trace = json::parse(out.text());
    for (const json& e : trace["traceEvents"]) {
      if (e.value("ph", "") != "X" || e.value("cat", "") != "kernel") continue;
      const long long s = std::llround(e["ts"].get<double>() * 1000), du = std::llround(e["dur"].get<double>() * 1000);
      const int64_t tid = e["tid"].get<int64_t>();
      got[{s, s + du}].insert(size_t(tid / 100000000 - 20));  // tid = 2e9 + device*1e5 + stream + lane*1e8
    }
    EXPECT_EQ(got, want) << runs << " runs";
  }
}

}  // namespace
}  // namespace truffld::merge
