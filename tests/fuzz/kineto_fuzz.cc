// libFuzzer target: the Kineto importer (and the merge behind it) on arbitrary bytes.
//
// Whatever the input, importing must not crash, leak or trip a sanitizer, must return either an
// error or a TraceFile whose events are well formed (end >= start, device events carry a host
// process when the file has one), and merging an imported file must succeed. Strict mode is run
// too so the error paths it adds are covered. The batch reader (ImportOptions::kineto_batch_bytes)
// runs at a small batch size chosen from the input: its result, TraceFile or error, must be the
// whole-document reader's exactly, from memory and from a file read through its window (the
// input written to a scratch file in the temporary directory, one per fuzzing process). An input
// that --strict reads (valid JSON, no problem) with events is also gzip- or zstd-compressed, damaged in the middle (bytes chosen
// by the input flipped) and imported from a file: every event of the bytes decoded before the
// damage (the prefix the decoder gives that matches the input) must be kept. Seeds:
// tests/fuzz/corpus/kineto/ (hand-written, small); dictionary: tests/fuzz/kineto.dict. Run with
// tools/run-fuzz.sh.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <zlib.h>
#include <zstd.h>

#include "../merge/unit/trace_file_text.h"

#include "truffld/byte_source.h"
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

std::string Scratch(const char* suffix) {
  return (std::filesystem::temp_directory_path() /
          ("truffld_kineto_fuzz_" + std::to_string(::getpid()) + suffix)).string();
}

// The input as a file read through a window of four batches of `batch` bytes against the same
// file read whole (ImportKineto on a path: the name in messages is the path for both).
void CheckWindowOnFile(std::string_view doc, size_t batch) {
  static const std::string path = Scratch(".json");
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

std::string Compress(std::string_view doc, bool gzip) {
  std::string out;
  if (gzip) {
    z_stream zs{};
    Check(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    out.resize(deflateBound(&zs, doc.size()) + 64);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(doc.data()));
    zs.avail_in = static_cast<uInt>(doc.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    Check(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    out.resize(zs.total_out);
    deflateEnd(&zs);
  } else {
    out.resize(ZSTD_compressBound(doc.size()));
    const size_t n = ZSTD_compress(out.data(), out.size(), doc.data(), doc.size(), 3);
    Check(!ZSTD_isError(n));
    out.resize(n);
  }
  return out;
}

// What truffld's decoder gives for `path` before its first error.
std::string Decoded(const std::string& path) {
  std::string out;
  auto src = truffld::OpenByteSource(path);
  if (!src.ok()) return out;
  char buf[4096];
  for (;;) {
    auto r = (*src)->Read(buf, sizeof buf);
    if (!r.ok() || *r == 0) return out;
    out.append(buf, *r);
  }
}

// The events' identities (element number, kind, name): what a damaged import must keep.
std::vector<std::string> Identities(const TraceFile& tf) {
  std::vector<std::string> out;
  for (const Event& e : tf.events)
    out.push_back(std::to_string(tf.LineOf(e)) + " " + EventKindName(e.kind) + " " + std::string(tf.strings.Get(e.name)));
  return out;
}

// `doc` compressed, `n` bytes flipped from the middle on, read from a file: the events of the
// decoded bytes that match `doc` are all kept, in order.
void CheckDamagedCompressed(std::string_view doc, const uint8_t* data, size_t size) {
  const bool gzip = data[size / 5] & 1;
  std::string z = Compress(doc, gzip);
  const size_t at = z.size() / 2, n = std::min<size_t>(1 + data[size / 7] % 32, z.size() - at);
  for (size_t i = at; i < at + n; ++i) z[i] = static_cast<char>(z[i] ^ (data[i % size] | 1));
  const std::string path = Scratch(gzip ? ".json.gz" : ".json.zst");
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(z.data(), std::streamsize(z.size()));
  const std::string decoded = Decoded(path);
  size_t same = 0;
  while (same < decoded.size() && same < doc.size() && decoded[same] == doc[same]) ++same;
  ImportOptions o;
  auto damaged = ImportKineto(path, o);
  auto before = ImportKinetoFromBuffer(doc.substr(0, same), "fuzz.json", o);
  // Nothing to lose when no event could be read before the damage (a document with none is an
  // error or an empty TraceFile, depending on where the damage lies).
  if (!before.ok() || before->events.empty()) return;
  Check(damaged.ok());
  CheckFile(*damaged);
  const std::vector<std::string> want = Identities(*before), got = Identities(*damaged);
  Check(got.size() >= want.size());
  for (size_t i = 0; i < want.size(); ++i) Check(got[i] == want[i]);
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
  // A valid document (--strict reads it) has well-defined events before any damage.
  if (s.ok() && !s->events.empty()) CheckDamagedCompressed(doc, data, size);
  return 0;
}
