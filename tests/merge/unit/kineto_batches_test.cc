// The Kineto batch reader (ImportInBatches, ImportOptions::kineto_batch_bytes) against the
// whole-document reader: every document, cut at every size, must give the same TraceFile (or
// the same error), and the batches must actually be used where they can be and be given up
// where they cannot.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "importers/kineto/document_parts.h"
#include "trace_file_text.h"
#include "truffld/merge/import_kineto.h"

namespace truffld::merge {
namespace {

std::string Text(Result<TraceFile>& r) {
  return r.ok() ? testing::TraceFileText(*r) : "error: " + r.status().ToString();
}

std::string Whole(const std::string& doc, bool keep_args = true) {
  ImportOptions o;
  o.kineto_batch_bytes = 0;
  o.keep_args = keep_args;
  auto r = ImportKinetoFromBuffer(doc, "t.json", o);
  return Text(r);
}

// ImportInBatches itself: "fallback" when it hands the document back.
std::string Batched(const std::string& doc, size_t target, bool keep_args = true) {
  ImportOptions o;
  o.kineto_batch_bytes = target;
  o.keep_args = keep_args;
  simdjson::padded_string copy(doc);
  auto r = kineto::ImportInBatches(copy.data(), copy.size(), copy.size() + simdjson::SIMDJSON_PADDING, "t.json", o);
  EXPECT_EQ(std::string_view(copy.data(), copy.size()), doc) << "the document was not restored";
  return r ? Text(*r) : std::string("fallback");
}

const std::string kEvents = R"J([
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 101, "ts": 1000.5, "dur": 50},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 101, "ts": 1001.25, "dur": 10.001,
   "args": {"External id": 7, "Input Dims": [[4, 8], [8, 2]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 101, "ts": 1002, "dur": 3,
   "args": {"cbid": 211, "correlation": 55}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 1, "tid": 7, "ts": 1010, "dur": 2.5,
   "args": {"device": 1, "stream": 7, "correlation": 55, "grid": [4, 2, 1], "block": [128, 1, 1]}},
  {"ph": "X", "cat": "kernel", "name": "lost", "pid": 1, "tid": 7, "ts": 1013, "dur": 1},
  {"ph": "s", "id": 55, "pid": 100, "tid": 101, "ts": 1002, "cat": "ac2g", "name": "ac2g"},
  7,
  {"name": "process_name", "ph": "M", "pid": 100, "tid": 0, "args": {"name": "python3"}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 100, "tid": 102, "ts": 1020, "dur": 4, "args": {"x": tru}}
 ])J";

// Healthy documents: the batches are used, whatever the target, and agree with the whole reader.
TEST(KinetoBatches, HealthyDocumentsGiveTheSameFileAtEveryBatchSize) {
  const std::vector<std::string> docs = {
      "{\"traceEvents\": " + kEvents + "}",
      "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 3, \"world_size\": 8},\n \"traceEvents\": " + kEvents +
          ",\n \"deviceProperties\": [{\"id\": 0}, {\"id\": 1}], \"baseTimeNanoseconds\": 1700000000000000000}",
      "{\"baseTimeNanoseconds\": 5, \"metadata\": {\"a\": [{}, {}]}, \"traceEvents\": " + kEvents +
          ", \"traceName\": \"x\"}",
      "{\"traceEvents\": []}",
  };
  for (const std::string& doc : docs) {
    const std::string whole = Whole(doc);
    ASSERT_EQ(whole.rfind("error", 0), std::string::npos) << whole;
    for (size_t target : {1, 2, 17, 64, 100, 333, 1000, 100000}) {
      EXPECT_EQ(Batched(doc, target), whole) << "target " << target << " in\n" << doc;
      EXPECT_EQ(Batched(doc, target, false), Whole(doc, false)) << "target " << target;
    }
  }
}

// Documents the batches must hand back: the public entry point then reads them whole, so its
// result (events, problems and their file:line, or the error) is the whole reader's.
TEST(KinetoBatches, DocumentsTheBatchesCannotReadAreReadWhole) {
  const std::string ev = R"({"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1})";
  const std::vector<std::string> docs = {
      R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"}, {","pid":1,"tid":1,"ts":1,"dur":1},)" + ev + "]}",
      R"({"traceEvents":[)" + ev + R"(,{"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":1,"dur":1,"args":{"l":[{"a":1},{"b":2}]}},)" + ev + "]}",
      R"({"traceEvents":[)" + ev + R"(,{"ph":"X","args":{"l":[{"a":1}]},"cat":"cpu_op","name":"c","pid":1,"tid":1,"ts":1,"dur":1},)" + ev + "]}",
      R"({"metadata":{"traceEvents":[)" + ev + R"(]},"traceEvents":[]})",
      R"({"metadata":{"traceEvents":[)" + ev + R"(]}})",
      R"({"traceEvents":[)" + ev + "," + ev + R"(],"traceEvents":[)" + ev + "]}",
      R"({"traceEvents":[)" + ev + "," + ev + R"(],"baseTimeNanoseconds":"soon"})",
      R"({"traceEvents":[)" + ev + "," + ev + R"(],"baseTimeNanoseconds":1} trailing)",
      R"({"traceEvents":[)" + ev + "," + ev + R"(,{"ph":"X","dur":1 "oops":1},)" + ev + "]}",
      R"({"traceEvents":[)" + ev + "," + ev + "," + ev.substr(0, 30),
      R"({"traceEvents":[)" + ev + "," + ev + R"(],"x":[1,}})",
      R"({"traceEvents":[1,2,3]})",
      R"({"traceEvents":{"a":)" + ev + "}}",
  };
  for (const std::string& doc : docs) {
    const std::string whole = Whole(doc);
    for (size_t target : {1, 5, 40, 200}) {
      const std::string batched = Batched(doc, target);
      EXPECT_TRUE(batched == "fallback" || batched == whole) << "target " << target << " in\n" << doc << "\n" << batched;
      ImportOptions o;
      o.kineto_batch_bytes = target;
      auto r = ImportKinetoFromBuffer(doc, "t.json", o);
      EXPECT_EQ(Text(r), whole) << "target " << target << " in\n" << doc;
    }
  }
  // A cut inside a string, or in a nested array of objects, is never read as a batch.
  EXPECT_EQ(Batched(docs[0], 1), "fallback");
  EXPECT_EQ(Batched(docs[1], 80), "fallback");
}

}  // namespace
}  // namespace truffld::merge
