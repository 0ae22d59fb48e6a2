// Unit tests of the Kineto (PyTorch profiler Chrome trace) importer on hand-written documents.
#include "truffld/merge/import_kineto.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace truffld::merge {
namespace {

Result<TraceFile> Import(const std::string& json, bool strict = false) {
  ImportOptions o;
  o.strict = strict;
  return ImportKinetoFromBuffer(json, "t.json", o);
}

const Event* Find(const TraceFile& tf, std::string_view name) {
  for (const Event& e : tf.events)
    if (tf.strings.Get(e.name) == name) return &e;
  return nullptr;
}

// A small trace with one of each category the importer maps, plus records it skips.
const char* kMixed = R"J({
 "schemaVersion": 1,
 "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 101,
   "ts": 1000.5, "dur": 50},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 101,
   "ts": 1001.25, "dur": 10.001, "args": {"External id": 7}},
  {"ph": "X", "cat": "python_function", "name": "model.py(1): forward", "pid": 100, "tid": 101,
   "ts": 1000.75, "dur": 40},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 101,
   "ts": 1002, "dur": 3, "args": {"cbid": 211, "correlation": 55}},
  {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 100, "tid": 101,
   "ts": 1006, "dur": 1, "args": {"cbid": 307, "correlation": 56}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 1, "tid": 7, "ts": 1010, "dur": 2.5,
   "args": {"device": 1, "stream": 7, "correlation": 55, "grid": [4, 2, 1], "block": [128, 1, 1],
            "registers per thread": 32}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 1, "tid": 7,
   "ts": 1013, "dur": 1, "args": {"device": 1, "stream": 7, "correlation": 56, "bytes": 4096}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 1, "tid": 7,
   "ts": 1015, "dur": 0.5, "args": {"device": 1, "stream": 7, "correlation": 999, "bytes": 8}},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 7,
   "ts": 1010, "dur": 6},
  {"ph": "s", "id": 55, "pid": 100, "tid": 101, "ts": 1002, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 55, "pid": 1, "tid": 7, "ts": 1010, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"name": "process_name", "ph": "M", "pid": 100, "tid": 0, "args": {"name": "python3"}},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 101,
   "ts": 1001},
  {"ph": "X", "cat": "Trace", "ts": 1000, "dur": 100, "pid": "Spans", "tid": "PyTorch Profiler",
   "name": "PyTorch Profiler (0)"}
 ],
 "baseTimeNanoseconds": 1700000000000000000
})J";

TEST(ImportKineto, MapsEveryCategoryToTheEventModel) {
  auto r = Import(kMixed);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const TraceFile& tf = *r;
  EXPECT_EQ(tf.meta.format, "kineto");
  EXPECT_EQ(tf.meta.rank, 3);
  EXPECT_EQ(tf.meta.world_size, 8);
  EXPECT_EQ(tf.meta.process_id, 100);
  ASSERT_EQ(tf.events.size(), 9u);

  const Event* mm = Find(tf, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->kind, EventKind::kRange);
  EXPECT_EQ(tf.strings.Get(tf.Extra(*mm).category), "cpu_op");
  // baseTimeNanoseconds (given after traceEvents) + exact decimal microseconds.
  EXPECT_EQ(mm->start, 1700000000000000000 + 1001250);
  EXPECT_EQ(mm->end, 1700000000000000000 + 1001250 + 10001);
  EXPECT_EQ(tf.ProcessOf(*mm), 100);
  EXPECT_EQ(tf.ThreadIdOf(*mm), 101);
  EXPECT_EQ(tf.LineOf(*mm), 2u);  // record index within traceEvents

  const Event* rt = Find(tf, "cudaLaunchKernel");
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(rt->kind, EventKind::kRuntime);
  EXPECT_EQ(tf.Extra(*rt).cbid, 211);
  EXPECT_EQ(tf.Correlation(*rt), 55);
  const Event* drv = Find(tf, "cuLaunchKernel");
  ASSERT_NE(drv, nullptr);
  EXPECT_EQ(drv->kind, EventKind::kDriver);

  const Event* k = Find(tf, "gemm");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->kind, EventKind::kKernel);
  EXPECT_EQ(tf.ProcessOf(*k), 100);  // the host process of the launch, not Kineto's pid = device
  EXPECT_EQ(tf.ThreadIdOf(*k), kNone);
  EXPECT_EQ(tf.Extra(*k).device, 1);
  EXPECT_EQ(tf.Extra(*k).stream, 7);
  EXPECT_EQ(tf.Correlation(*k), 55);
  EXPECT_EQ(tf.Extra(*k).grid[0], 4);
  EXPECT_EQ(tf.Extra(*k).grid[1], 2);
  EXPECT_EQ(tf.Extra(*k).block[0], 128);
  EXPECT_EQ(k->end - k->start, 2500);

  const Event* cp = Find(tf, "Memcpy DtoH (Device -> Pinned)");
  ASSERT_NE(cp, nullptr);
  EXPECT_EQ(cp->kind, EventKind::kMemcpy);
  EXPECT_EQ(tf.Extra(*cp).bytes, 4096);
  EXPECT_EQ(tf.strings.Get(tf.Extra(*cp).copy_kind), "DtoH");
  const Event* ms = Find(tf, "Memset (Device)");
  ASSERT_NE(ms, nullptr);
  EXPECT_EQ(ms->kind, EventKind::kMemset);
  EXPECT_EQ(tf.ProcessOf(*ms), 100);  // no matching launch: the trace's main host process

  EXPECT_EQ(tf.stats.Kept(EventKind::kRange), 4u);  // incl. gpu_user_annotation
  EXPECT_EQ(tf.stats.Kept(EventKind::kRuntime), 1u);
  EXPECT_EQ(tf.stats.Kept(EventKind::kKernel), 1u);
  EXPECT_EQ(tf.stats.Get(Problem::kKinetoSkippedFlowAc2g), 2u);
  EXPECT_EQ(tf.stats.Get(Problem::kKinetoSkippedMetadata), 1u);
  EXPECT_EQ(tf.stats.Get(Problem::kKinetoSkippedInstantCpu), 1u);
  EXPECT_EQ(tf.stats.Get(Problem::kKinetoSkippedTrace), 1u);
  EXPECT_EQ(tf.stats.Get(Problem::kKinetoTraceEvents), 14u);
  EXPECT_TRUE(tf.stats.issues.empty());
}

TEST(ImportKineto, LargeFractionalTimestampsConvertWithoutDrift) {
  // 1669783687464181.123 us does not fit a double exactly; the text route must.
  auto r = Import(R"J({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,
      "ts":1669783687464181.123,"dur":0.001}]})J");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->events[0].start, 1669783687464181123);
  EXPECT_EQ(r->events[0].end, 1669783687464181124);
}

TEST(ImportKineto, HipApiNamesAndCidWork) {
  auto r = Import(R"J({"traceEvents":[
    {"ph":"X","cat":"cuda_runtime","name":"hipLaunchKernel","pid":851,"tid":851,"ts":1,"dur":2,
     "args":{"cid":60,"correlation":5}},
    {"ph":"X","cat":"kernel","name":"k","pid":2,"tid":0,"ts":4,"dur":1,
     "args":{"device":2,"stream":0,"correlation":5}}]})J");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 2u);
  EXPECT_EQ(r->events[0].kind, EventKind::kRuntime);
  EXPECT_EQ(r->Extra(r->events[0]).cbid, 60);
  EXPECT_EQ(r->ProcessOf(r->events[1]), 851);
  EXPECT_EQ(r->Extra(r->events[1]).device, 2);
}

TEST(ImportKineto, FieldOrderAndEscapesDoNotMatter) {
  auto r = Import(R"J({"traceEvents":[{"args":{"correlation":9},"dur":1,"ts":5,"tid":3,"pid":2,
      "name":"a\"b\u00e9","cat":"cuda_runtime","ph":"X"}]})J");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->strings.Get(r->events[0].name), "a\"b\xc3\xa9");
  EXPECT_EQ(r->Correlation(r->events[0]), 9);
}

// Keys are matched after unescaping, as values are: an escaped key reads like its plain form.
TEST(ImportKineto, EscapedKeysAreRead) {
  auto r = Import(R"J({"traceEvents":[{"\u0070h":"X","c\u0061t":"cuda_runtime","\u006eame":"cudaMalloc",
      "pid":2,"tid":3,"ts":5,"dur":1,"args":{"c\u006frrelation":9}}]})J");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->strings.Get(r->events[0].name), "cudaMalloc");
  EXPECT_EQ(r->events[0].kind, EventKind::kRuntime);
  EXPECT_EQ(r->Correlation(r->events[0]), 9);
}

TEST(ImportKineto, BadRecordsAreCountedWithLocationAndTheRestKept) {
  auto r = Import(R"J({"traceEvents":[
    {"ph":"X","cat":"cpu_op","name":"no_ts","pid":1,"tid":1,"dur":1},
    {"ph":"X","cat":"cpu_op","name":"neg","pid":1,"tid":1,"ts":5,"dur":-1},
    {"ph":"X","cat":"cpu_op","name":"nullpid","pid":null,"tid":1,"ts":5,"dur":1},
    {"ph":"X","cat":"cpu_op","name":"badts","pid":1,"tid":1,"ts":"5","dur":1},
    {"ph":"X","cat":"kernel","name":"nocorr","pid":0,"tid":7,"ts":5,"dur":1},
    42,
    {"ph":"X","cat":"cuda_runtime","name":"hipMemcpyAsync","pid":1,"tid":1,"ts":5,"dur":1,
     "args":{"correlation":3,"bytes":"128","kind":"1","grid":"x"}},
    {"ph":"X","cat":"cpu_op","name":"good","pid":1,"tid":1,"ts":5,"dur":1}]})J");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const TraceFile& tf = *r;
  ASSERT_EQ(tf.events.size(), 3u);  // "nocorr" (kept, unlinkable), hipMemcpyAsync, "good"
  const Event* hip = Find(tf, "hipMemcpyAsync");
  ASSERT_NE(hip, nullptr);
  EXPECT_EQ(tf.Extra(*hip).bytes, 128);  // HIP writes some integers as strings
  EXPECT_EQ(tf.stats.Get(Problem::kKinetoIgnoredField), 1u);  // grid: kept without it
  EXPECT_EQ(tf.stats.Get(Problem::kKinetoMissingField), 2u);
  EXPECT_EQ(tf.stats.Get(Problem::kKinetoNegativeDuration), 1u);
  EXPECT_EQ(tf.stats.Get(Problem::kKinetoBadField), 1u);
  EXPECT_EQ(tf.stats.Get(Problem::kKinetoMissingCorrelation), 1u);
  EXPECT_EQ(tf.stats.Get(Problem::kKinetoNotAnObject), 1u);
  ASSERT_FALSE(tf.stats.issues.empty());
  EXPECT_EQ(tf.stats.issues[0].where.rfind("t.json:2 (byte", 0), 0u) << tf.stats.issues[0].where;
  EXPECT_NE(tf.stats.issues[0].message.find("'ts'"), std::string::npos);
  // Strict turns the first problem into the error.
  auto s = Import(R"J({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"dur":1}]})J",
                  /*strict=*/true);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("t.json:1"), std::string::npos) << s.status().ToString();
}

TEST(ImportKineto, TruncatedDocumentKeepsEarlierEventsAndSaysWhere) {
  std::string doc = R"J({"traceEvents":[
    {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1},
    {"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":2,"dur":1},
    {"ph":"X","cat":"cpu_op","name":"c","pid":1,"tid":1,"ts":3,)J";
  auto r = Import(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->events.size(), 2u);
  EXPECT_EQ(r->stats.Get(Problem::kKinetoTruncated), 1u);
  ASSERT_EQ(r->stats.issues.size(), 1u);
  EXPECT_NE(r->stats.issues[0].where.find("t.json:3 (byte"), std::string::npos)
      << r->stats.issues[0].where;
  EXPECT_NE(r->stats.issues[0].message.find("ends at byte"), std::string::npos);
  EXPECT_FALSE(Import(doc, /*strict=*/true).ok());
}

// The damaged element is skipped and reported where it is; reading goes on after it.
TEST(ImportKineto, MalformedEventIsSkippedAndTheOthersKept) {
  std::string doc = R"J({"traceEvents":[
    {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1},
    {"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":2,"dur":1},
    {"ph":"X","cat":"cpu_op","name":"c","pid":1,"tid":1,"ts":3,"dur":1 "oops": 1},
    {"ph":"X","cat":"cpu_op","name":"d","pid":1,"tid":1,"ts":4,"dur":1}]})J";
  auto r = Import(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 3u);
  EXPECT_EQ(r->strings.Get(r->events[2].name), "d");
  EXPECT_EQ(r->stats.Get(Problem::kKinetoMalformedJson), 1u);
  ASSERT_EQ(r->stats.issues.size(), 1u);
  EXPECT_NE(r->stats.issues[0].where.find("t.json:4 (byte"), std::string::npos)
      << r->stats.issues[0].where;
  EXPECT_FALSE(Import(doc, /*strict=*/true).ok());
}

// --strict reads only valid JSON: the on-demand walk skips the values it does not use, so an
// invalid token there ("x":tru, "name":broken in a record the importer skips) went unseen.
TEST(ImportKineto, StrictRejectsInvalidJsonInValuesTheImporterSkips) {
  const std::string good = R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2)";
  for (const std::string& bad : {good + R"(,"x":tru}]})", good + R"(}, {"ph":"i","name":broken}]})",
                                 good + R"(,"args":{"n":[1,2,}}]})"}) {
    auto strict = Import(bad, true);
    ASSERT_FALSE(strict.ok()) << bad;
    EXPECT_NE(strict.status().message().find("t.json"), std::string::npos) << strict.status().ToString();
  }
  auto valid = Import(good + "}]}", true);
  ASSERT_TRUE(valid.ok()) << valid.status().ToString();
  EXPECT_EQ(valid->events.size(), 1u);
}

TEST(ImportKineto, DocumentsThatAreNotTracesAreErrors) {
  for (const char* bad : {"", "[1,2]", "{\"a\":1}", "{\"traceEvents\":{}}", "nul", "{\"traceEvents\":[}"}) {
    auto r = Import(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kParseError) << bad;
      EXPECT_NE(r.status().message().find("t.json"), std::string::npos) << r.status().ToString();
    }
  }
}

TEST(ImportKineto, ReadsFilesAndNamesMissingOnes) {
  std::string path = ::testing::TempDir() + "/kineto_unit.json";
  {
    std::ofstream f(path);
    f << kMixed;
  }
  auto r = ImportKineto(path, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->events.size(), 9u);
  EXPECT_EQ(r->meta.path, path);
  std::remove(path.c_str());
  auto missing = ImportKineto(path + ".nope", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("kineto_unit.json.nope"), std::string::npos);
}

}  // namespace
}  // namespace truffld::merge
