// libFuzzer target: the Kineto importer (and the merge behind it) on arbitrary bytes.
//
// Whatever the input, importing must not crash, leak or trip a sanitizer, must return either an
// error or a TraceFile whose events are well formed (end >= start, device events carry a host
// process when the file has one), and merging an imported file must succeed. Strict mode is run
// too so the error paths it adds are covered. The batch reader (ImportOptions::kineto_batch_bytes)
// runs at a small batch size chosen from the input: its result, TraceFile or error, must be the
// whole-document reader's exactly. Seeds: tests/fuzz/corpus/kineto/ (hand-written,
// small); dictionary: tests/fuzz/kineto.dict. Run with tools/run-fuzz.sh.
#include <cstdint>
#include <cstdlib>
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
