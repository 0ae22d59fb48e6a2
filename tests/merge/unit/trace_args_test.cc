// trace.json's slice names and args: step facts, operators named by family with their call
// ids in args, and the importer's own (Kineto) args carried through.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "appendix_example.h"
#include "merge_test_util.h"
#include "truffld/merge/import_kineto.h"
#include "truffld/merge/writers.h"
#include "writers/trace_args.h"

namespace truffld::merge {
namespace {

using nlohmann::json;

std::string TraceText(std::vector<TraceFile> files) {
  auto r = Merge(std::move(files), {});
  if (!r.ok()) {
    ADD_FAILURE() << r.status().ToString();
    return "{}";
  }
  JsonOut out;
  WriteChromeTrace(*r, &out);
  return out.text();
}

json TraceOf(std::vector<TraceFile> files) { return json::parse(TraceText(std::move(files))); }

std::string TraceTextOf(TraceFile file) {
  std::vector<TraceFile> files;
  files.push_back(std::move(file));
  return TraceText(std::move(files));
}

// The line of `text` that holds `needle`, without its trailing comma ("" when none does).
std::string LineWith(const std::string& text, std::string_view needle) {
  const size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  const size_t begin = text.rfind('\n', at) + 1, end = text.find('\n', at);
  std::string line = text.substr(begin, end - begin);
  if (!line.empty() && line.back() == ',') line.pop_back();
  return line;
}

json TraceOfDump(const std::string& dump) {
  std::vector<TraceFile> files;
  files.push_back(testing::FileFromLines(dump, "t.jsonl"));
  return TraceOf(std::move(files));
}

std::vector<json> Slices(const json& t, const std::string& cat) {
  std::vector<json> out;
  for (const json& e : t["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == cat) out.push_back(e);
  return out;
}

TEST(NameFields, SplitsKeyValuePiecesOutsideBrackets) {
  using P = std::vector<NameField>;
  P f;
  EXPECT_TRUE(NameFields(", seq = 0, op_id = 42", &f));
  EXPECT_EQ(f, (P{{"seq", "0"}, {"op_id", "42"}}));
  EXPECT_TRUE(NameFields(", bytes=1048576, world_size=8", &f));
  EXPECT_EQ(f, (P{{"bytes", "1048576"}, {"world_size", "8"}}));
  EXPECT_FALSE(NameFields(", op_id = 3, sizes = [[1, 2], [3]], x", &f));  // "x" is no pair
  EXPECT_EQ(f, (P{{"op_id", "3"}, {"sizes", "[[1, 2], [3]]"}}));
  EXPECT_FALSE(NameFields(" f.py:1", &f));  // not ", "-separated: nothing
  EXPECT_EQ(f, P{});
  EXPECT_FALSE(NameFields(", bad key! = 1, ok = 2", &f));
  EXPECT_EQ(f, (P{{"ok", "2"}}));
  EXPECT_TRUE(NameFields("", &f));
  EXPECT_EQ(f, P{});
}

TEST(TraceArgs, StepsCarryIndexRankRequestsPhaseAndTags) {
  std::string d = testing::AppendixExampleDump();
  // A second step with tags and many requests.
  std::string reqs;
  for (int i = 0; i < 12; ++i) reqs += (i ? "_" : "") + std::string("r") + std::to_string(i);
  d += "{\"type\":\"NVTX_PUSH\",\"name\":\"step_execute_model[request_ids:" + reqs +
       "][phase:decode][tokens:12][ctx:4096]\",\"timestamp\":30000,\"process_id\":1,\"thread_id\":1}\n"
       "{\"type\":\"NVTX_POP\",\"timestamp\":31000,\"process_id\":1,\"thread_id\":1}\n";
  const json t = TraceOfDump(d);
  const std::vector<json> steps = Slices(t, "step");
  ASSERT_EQ(steps.size(), 2u);
  const json& a = steps[0]["args"];
  EXPECT_EQ(a["step_index"], 0);
  EXPECT_EQ(a["rank"], 0);
  EXPECT_EQ(a["requests"], json::array({"0", "1", "2"}));
  EXPECT_EQ(a["request_count"], 3);
  EXPECT_EQ(a["phase"], "unknown");
  EXPECT_FALSE(a.contains("tokens"));
  const json& b = steps[1]["args"];
  EXPECT_EQ(b["step_index"], 1);
  EXPECT_EQ(b["request_count"], 12);
  EXPECT_EQ(b["requests"].size(), kMaxRequestsListed);
  EXPECT_EQ(b["requests"][0], "r0");
  EXPECT_EQ(b["phase"], "decode");
  EXPECT_EQ(b["tokens"], 12);
  EXPECT_EQ(b["ctx"], 4096);
  EXPECT_EQ(steps[1]["name"].get<std::string>().rfind("step_execute_model[", 0), 0u);  // steps keep their name
}

TEST(TraceArgs, OperatorsAreNamedByFamilyWithCallIdsInArgs) {
  const json t = TraceOfDump(testing::AppendixExampleDump());
  std::map<std::string, json> ops;
  for (const std::string cat : {"backend_op", "frontend_op", "comm"})
    for (const json& e : Slices(t, cat)) ops[e["name"]] = e;
  ASSERT_TRUE(ops.count("aten::mm")) << t.dump();
  // The pairs say all the name held after its family: no args.name.
  EXPECT_EQ(ops["aten::mm"]["args"], json({{"seq", 0}, {"op_id", 5}}));
  EXPECT_EQ(ops["aten::empty"]["args"], json({{"op_id", 1}}));
  // Frontend family: the text before the first space; the rest is no key = value list.
  ASSERT_TRUE(ops.count("torch.nn.functional.linear"));
  EXPECT_EQ(ops["torch.nn.functional.linear"]["args"], json({{"name", "torch.nn.functional.linear f.py:1"}}));
  // A name equal to its family gets no args.name.
  ASSERT_TRUE(ops.count("ncclAllReduce"));
  EXPECT_FALSE(ops["ncclAllReduce"].contains("args"));
  // Kernels, calls and copies keep their names; API and device slices their correlation.
  std::set<std::string> kernels;
  for (const json& e : Slices(t, "kernel")) kernels.insert(e["name"]);
  EXPECT_TRUE(kernels.count("void gemm<float>(float*, int)"));
  for (const json& e : Slices(t, "runtime_call")) EXPECT_TRUE(e["args"].contains("correlation")) << e.dump();
}

const char* kKinetoWithArgs = R"J({
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 101,
   "ts": 1000, "dur": 50},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 101, "ts": 1001, "dur": 10,
   "args": {
     "External id": 7, "Input Dims": [[4, 8], [8, 16]],
     "Input type": ["float", "float"], "Sequence number": 3
   }},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 101,
   "ts": 1002, "dur": 3, "args": {"cbid": 211, "correlation": 55}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1010, "dur": 2.5,
   "args": {"correlation": 55, "device": 0, "stream": 7, "grid": [4, 1, 1], "block": [128, 1, 1],
            "registers per thread": 64, "note": "line\nbreak \u00e9"}},
  {"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "pid": 100, "tid": 101, "ts": 1020, "dur": 5,
   "args": {"Collective name": "allreduce", "In msg nelems": 1024, "dtype": "Float", "bad": tru}}
 ]
})J";

TEST(TraceArgs, KinetoArgsAreKeptCompactAndNotDuplicated) {
  auto tf = ImportKinetoFromBuffer(kKinetoWithArgs, "k.json", ImportOptions{});
  ASSERT_TRUE(tf.ok()) << tf.status().ToString();
  ASSERT_EQ(tf->args.size(), tf->events.size());
  // The object with an invalid token is not kept, and that is reported; the event is.
  bool reported = false;
  for (const IngestIssue& i : tf->stats.issues) reported |= i.message.find("args is not a valid JSON object") != std::string::npos;
  EXPECT_TRUE(reported);
  // One event per line: the multi-line args object became one line, a JSON object of its own.
  const std::string text = TraceTextOf(std::move(tf).value());
  const std::string mm_line = LineWith(text, "\"Input Dims\"");
  ASSERT_FALSE(mm_line.empty());
  EXPECT_TRUE(json::accept(mm_line)) << mm_line;
  const json t = json::parse(text);
  const json mm = Slices(t, "backend_op").at(0);
  EXPECT_EQ(mm["name"], "aten::mm");
  EXPECT_EQ(mm["args"]["Input Dims"], json::parse("[[4, 8], [8, 16]]"));
  EXPECT_EQ(mm["args"]["External id"], 7);
  const json k = Slices(t, "kernel").at(0);
  EXPECT_EQ(k["args"]["grid"], json::parse("[4, 1, 1]"));
  EXPECT_EQ(k["args"]["block"], json::parse("[128, 1, 1]"));
  EXPECT_EQ(k["args"]["note"], "line\nbreak \u00e9");
  EXPECT_EQ(k["args"]["correlation"], 55);
  // correlation appears once in the kernel's line (the kept args already hold it).
  const std::string kline = LineWith(text, "\"registers per thread\"");
  ASSERT_FALSE(kline.empty());
  EXPECT_EQ(kline.find("\"correlation\""), kline.rfind("\"correlation\"")) << kline;
  bool seen = false;
  for (const json& e : t["traceEvents"]) {
    if (e["name"] != "nccl:all_reduce") continue;
    seen = true;
    EXPECT_FALSE(e.contains("args")) << e.dump();  // its args were not valid JSON
  }
  EXPECT_TRUE(seen);
}

TEST(TraceArgs, TheOriginalNameNeverDuplicatesAKeptKey) {
  // "seq" is both in the name and in the profiler's args, so the name is kept whole; the args
  // already hold a "name", so it goes under "slice_name".
  const char* kineto = R"J({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 2, "ts": 1000, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm, seq = 3", "pid": 1, "tid": 2, "ts": 1001, "dur": 10,
     "args": {"seq": 9, "name": "from the profiler"}}]})J";
  auto tf = ImportKinetoFromBuffer(kineto, "k.json", ImportOptions{});
  ASSERT_TRUE(tf.ok()) << tf.status().ToString();
  const std::string text = TraceTextOf(std::move(tf).value());
  const std::string line = LineWith(text, "from the profiler");
  ASSERT_FALSE(line.empty());
  size_t names = 0;
  for (size_t p = line.find("\"name\":"); p != std::string::npos; p = line.find("\"name\":", p + 1)) ++names;
  EXPECT_EQ(names, 2u) << line;  // the slice's own name and the profiler's, nothing more
  const json mm = Slices(json::parse(text), "backend_op").at(0);
  EXPECT_EQ(mm["name"], "aten::mm");
  EXPECT_EQ(mm["args"]["name"], "from the profiler");
  EXPECT_EQ(mm["args"]["slice_name"], "aten::mm, seq = 3");
  EXPECT_EQ(mm["args"]["seq"], 9);
}

TEST(TraceArgs, ArgsAreNotReadWhenNoTraceWantsThem) {
  ImportOptions o;
  o.keep_args = false;  // truffld-merge --no-trace-json
  auto tf = ImportKinetoFromBuffer(kKinetoWithArgs, "k.json", o);
  ASSERT_TRUE(tf.ok()) << tf.status().ToString();
  ASSERT_EQ(tf->args.size(), tf->events.size());
  for (StrId a : tf->args) EXPECT_EQ(a, kNoStr);
  for (const IngestIssue& i : tf->stats.issues) EXPECT_EQ(i.message.find("args is not a valid JSON object"), std::string::npos);
}

}  // namespace
}  // namespace truffld::merge
