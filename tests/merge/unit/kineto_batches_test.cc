// The Kineto batch reader (ImportInBatches, ImportOptions::kineto_batch_bytes) against the
// whole-document reader: every document, cut at every size, from memory or through a window on
// a file (plain, gzip or zstd), must give the same TraceFile (or the same error), and the batches must
// actually be used where they can be and be given up where they cannot.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../common/test_files.h"
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
  kineto::DocFeed feed(copy.data(), copy.size(), copy.size() + simdjson::SIMDJSON_PADDING);
  auto r = kineto::ImportInBatches(&feed, "t.json", o);
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

// A larger healthy document: the window on a file (four batches) holds a small part of it.
std::string ManyEvents(int n) {
  std::string doc = "{\"schemaVersion\": 1,\n \"traceEvents\": [\n";
  for (int i = 0; i < n; ++i) {
    doc += i ? ",\n" : "";
    // Two records with problems far into the file, reported with their lines.
    if (i == 250) doc += "  42,\n";
    if (i == 120) doc += "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 5, \"dur\": 1},\n";
    doc += "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::op" + std::to_string(i % 7) +
           "\", \"pid\": 1, \"tid\": 2, \"ts\": " + std::to_string(1000 + 10 * i) +
           ", \"dur\": 5, \"args\": {\"External id\": " + std::to_string(i) + "}}";
  }
  return doc + "\n ],\n \"deviceProperties\": [{\"id\": 0}, {\"id\": 1}],\n \"baseTimeNanoseconds\": 7\n}\n";
}

class KinetoStreamed : public truffld::testing::TempDirTest {
 protected:
  // ImportInBatches through a window of four batches on the file: "fallback" when handed back.
  std::string Streamed(const std::string& path, size_t target) {
    ImportOptions o;
    o.kineto_batch_bytes = target;
    auto src = OpenByteSource(path);
    EXPECT_TRUE(src.ok());
    if (!src.ok()) return "";
    kineto::DocFeed window(src->get(), 4 * target);
    EXPECT_TRUE(window.Refill(0));
    EXPECT_FALSE(window.complete()) << "the file must not fit the window";
    auto r = kineto::ImportInBatches(&window, path, o);
    return r ? Text(*r) : std::string("fallback");
  }
  static std::string ViaPath(const std::string& path, size_t target) {
    ImportOptions o;
    o.kineto_batch_bytes = target;
    auto r = ImportKineto(path, o);
    return Text(r);
  }
};

TEST_F(KinetoStreamed, AWindowOnAFileGivesTheWholeReadersFile) {
  const std::string doc = ManyEvents(300);
  for (const std::string name : {"t.json", "t.json.gz", "t.json.zst"}) {
    const std::string path = Write(name, name == "t.json"      ? doc
                                         : name == "t.json.gz" ? truffld::testing::Gzip(doc)
                                                               : truffld::testing::Zstd(doc));
    const std::string whole = ViaPath(path, 0);
    ASSERT_EQ(whole.rfind("error", 0), std::string::npos) << whole;
    ASSERT_NE(whole.find(name + ":123 (byte 15011) kineto.missing_correlation event #121"), std::string::npos) << whole;
    ASSERT_NE(whole.find(name + ":254 (byte 31265) kineto.not_an_object traceEvents element #252"), std::string::npos);
    for (size_t target : {1, 50, 333, 4096}) {
      EXPECT_EQ(Streamed(path, target), whole) << name << " target " << target;
      EXPECT_EQ(ViaPath(path, target), whole) << name << " target " << target;
    }
  }
}

// An args object that is not valid JSON is found when the window moves on (its text is about
// to go), but reported where the whole-document reader reports it: after the problems met
// before its batch of args was checked (found by the fuzzer: the order of summary's issues).
TEST_F(KinetoStreamed, ArgsProblemsKeepTheWholeReadersOrder) {
  std::string doc = ManyEvents(300);
  doc.replace(doc.find("{\"External id\": 30}"), 19, "{\"x\": tru}");
  const std::string path = Write("args.json", doc);
  const std::string whole = ViaPath(path, 0);
  const size_t args_issue = whole.find("args is not a valid JSON object");
  ASSERT_NE(args_issue, std::string::npos) << whole;
  EXPECT_GT(args_issue, whole.find("kineto.not_an_object")) << "the whole reader reports it last";
  for (size_t target : {1, 50, 333, 4096}) EXPECT_EQ(Streamed(path, target), whole) << "target " << target;
}

// Files the window cannot read to the end are read again, whole: same result as the whole reader,
// problems and their file:line included.
TEST_F(KinetoStreamed, FilesHandedBackAreReadAgainWhole) {
  std::string bad_end = ManyEvents(300);
  bad_end.replace(bad_end.rfind("\"dur\": 5"), 9, "\"dur\" 5");
  std::string nested = ManyEvents(300);
  nested.replace(nested.find("{\"External id\": 150}"), 21, "{\"l\": [{\"a\": 1}, {\"b\": 2}]}");
  const std::string gz = truffld::testing::Gzip(ManyEvents(300));
  const std::vector<std::pair<std::string, std::string>> files = {
      {"bad_end.json", bad_end}, {"nested.json", nested}, {"cut.json.gz", gz.substr(0, gz.size() * 2 / 3)},
      {"cut.json", ManyEvents(300).substr(0, 20000)}};
  for (const auto& [name, bytes] : files) {
    const std::string path = Write(name, bytes);
    const std::string whole = ViaPath(path, 0);
    for (size_t target : {1, 64, 1000}) {
      const std::string streamed = Streamed(path, target);
      EXPECT_TRUE(streamed == "fallback" || streamed == whole) << name << " target " << target;
      EXPECT_EQ(ViaPath(path, target), whole) << name << " target " << target;
    }
  }
  EXPECT_EQ(Streamed(Write("bad_end.json", bad_end), 64), "fallback");
}

}  // namespace
}  // namespace truffld::merge
