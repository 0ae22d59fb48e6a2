// libFuzzer target: the Kineto importer (and the merge behind it) on arbitrary bytes.
//
// Whatever the input, importing must not crash, leak or trip a sanitizer, must return either an
// error or a TraceFile whose events are well formed (end >= start, device events carry a host
// process when the file has one), and merging an imported file must succeed. Strict mode is run
// too so the error paths it adds are covered. The batch reader (ImportOptions::kineto_batch_bytes)
// runs at a small batch size chosen from the input: its result, TraceFile or error, must be the
// whole-document reader's exactly, from memory and from a file read through its window (the
// input written to a scratch file in the temporary directory, one per fuzzing process). Seeds: tests/fuzz/corpus/kineto/ (hand-written,
// small); dictionary: tests/fuzz/kineto.dict. Run with tools/run-fuzz.sh.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "../merge/unit/trace_file_text.h"

#include "truffld/merge/import_kineto.h"
#include "truffld/merge/pipeline.h"

using namespace truffld::merge;

namespace {

void Check(bool ok) {
  if (!ok) std::abort();  // libFuzzer records the input that broke an invariant
}

void CheckFile(const TraceFile& tf) {
  for (const Event& e : tf.events) {
    Check(e.end >= e.start);
    Check(e.name != kNoStr);
    Check(e.thread < tf.threads.size());
    if (IsDeviceKind(e.kind)) Check(tf.ThreadIdOf(e) == kNone);
    if (IsDeviceKind(e.kind) && tf.meta.process_id != kNone) Check(tf.ProcessOf(e) != kNone);
  }
  Check(tf.stats.Get(Problem::kKinetoTraceEvents) >= tf.events.size());
  Check(tf.threads.sorted());  // importers sort the thread table last
}

// The input as a file read through a window of four batches of `batch` bytes against the same
// file read whole (ImportKineto on a path: the name in messages is the path for both).
void CheckWindowOnFile(std::string_view doc, size_t batch) {
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("truffld_kineto_fuzz_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(doc.data(), std::streamsize(doc.size()));
  ImportOptions whole, window;
  whole.kineto_batch_bytes = 0;
  window.kineto_batch_bytes = batch;
  auto w = ImportKineto(path, whole);
  auto f = ImportKineto(path, window);
  Check(w.ok() == f.ok());
  if (w.ok() && f.ok()) Check(testing::TraceFileText(*w) == testing::TraceFileText(*f));
  if (!w.ok() && !f.ok()) Check(w.status().ToString() == f.status().ToString());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view doc(reinterpret_cast<const char*>(data), size);
  ImportOptions lenient;
  lenient.kineto_batch_bytes = 0;
  auto r = ImportKinetoFromBuffer(doc, "fuzz.json", lenient);
  ImportOptions batched;
  batched.kineto_batch_bytes = 1 + (size ? data[size / 2] % 48 : 0);
  auto b = ImportKinetoFromBuffer(doc, "fuzz.json", batched);
  Check(r.ok() == b.ok());
  if (r.ok() && b.ok()) Check(testing::TraceFileText(*r) == testing::TraceFileText(*b));
  if (!r.ok() && !b.ok()) Check(r.status().ToString() == b.status().ToString());
  CheckWindowOnFile(doc, 1 + (size ? data[size / 3] % 32 : 0));
  if (r.ok()) {
    CheckFile(*r);
    std::vector<TraceFile> files;
    files.push_back(std::move(*r));
    MergeOptions mo;
    mo.threads = 1;
    auto m = Merge(std::move(files), mo);
    Check(m.ok());
  } else {
    Check(!r.status().message().empty());
  }
  ImportOptions strict;
  strict.strict = true;
  auto s = ImportKinetoFromBuffer(doc, "fuzz.json", strict);
  if (s.ok()) Check(s->stats.issues.empty());
  return 0;
}
