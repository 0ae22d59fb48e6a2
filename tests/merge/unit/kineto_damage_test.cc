// The Kineto importer on damaged and unusual documents: corrupt compressed files, bad elements
// inside traceEvents, bytes after the document, a byte-order mark, the JSON Array Format and
// older PyTorch exports, whole-microsecond rounding. What can be read is kept; what cannot is
// counted and reported with its offset.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "../../common/test_files.h"
#include "truffld/merge/import.h"
#include "truffld/merge/import_kineto.h"

namespace truffld::merge {
namespace {

std::string Ev(int i) {
  return R"({"ph":"X","cat":"cpu_op","name":"e)" + std::to_string(i) + R"(","pid":1,"tid":1,"ts":)" +
         std::to_string(10 * i) + R"(,"dur":5,"args":{"External id":)" + std::to_string(i) + "}}";
}

// {"traceEvents":[ev(0), ..., ev(n-1)]} with `between(i)` written before element i (i > 0).
std::string Doc(int n, const std::function<std::string(int)>& element = Ev) {
  std::string d = "{\"traceEvents\":[\n";
  for (int i = 0; i < n; ++i) d += (i ? ",\n" : "") + element(i);
  return d + "\n], \"baseTimeNanoseconds\": 1000000}";
}

Result<TraceFile> Import(const std::string& doc, size_t batch = size_t{512} << 10) {
  ImportOptions o;
  o.kineto_batch_bytes = batch;
  return ImportKinetoFromBuffer(doc, "t.json", o);
}

std::vector<std::string> Names(const TraceFile& tf) {
  std::vector<std::string> out;
  for (const Event& e : tf.events) out.emplace_back(tf.strings.Get(e.name));
  return out;
}

std::string Issues(const TraceFile& tf) {
  std::string s;
  for (const IngestIssue& i : tf.stats.issues) s += i.where + " " + ProblemKey(i.kind) + " " + i.message + "\n";
  return s;
}

class KinetoCompressed : public ::truffld::testing::TempDirTest {};

// `data` as one zstd frame with its content checksum, as the zstd tool writes it.
std::string ZstdWithChecksum(const std::string& data) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  std::string out(ZSTD_compressBound(data.size()), '\0');
  const size_t n = ZSTD_compress2(cctx, out.data(), out.size(), data.data(), data.size());
  ZSTD_freeCCtx(cctx);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

// 32 bytes flipped in the middle of a compressed trace: the events decoded before the damage
// stay, in order, and the damage is reported where it is: near a compressed byte before the
// file's end, or (a stream that decodes on to garbage until its checksum fails at the end) at
// the first damage the JSON reader met, a decoded offset.
TEST_F(KinetoCompressed, CorruptStreamKeepsTheDecodedPrefix) {
  const int n = 20000;  // zstd decodes whole 128 KiB blocks: several before the damage
  const std::string doc = Doc(n);
  for (const std::string name : {"t.json.gz", "t.json.zst"}) {
    std::string z = name == "t.json.gz" ? ::truffld::testing::Gzip(doc) : ZstdWithChecksum(doc);
    const size_t mid = z.size() / 2;
    for (size_t i = mid; i < mid + 32; ++i) z[i] = static_cast<char>(z[i] ^ 0x5a);
    auto r = ImportKineto(Write(name, z), {});
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    const std::vector<std::string> names = Names(*r);
    ASSERT_GT(names.size(), size_t{n / 10}) << name << "\n" << Issues(*r);
    for (size_t i = 0; i < size_t{n / 10}; ++i) ASSERT_EQ(names[i], "e" + std::to_string(i)) << name;
    ASSERT_EQ(r->stats.Get(Problem::kReadError), 1u) << name << "\n" << Issues(*r);
    EXPECT_EQ(Issues(*r).find("(byte 0)"), std::string::npos) << Issues(*r);
    for (const IngestIssue& i : r->stats.issues) {
      if (i.kind != Problem::kReadError) continue;
      EXPECT_NE(i.message.find("compressed byte"), std::string::npos) << i.message;
      if (i.message.find("compressed byte " + std::to_string(z.size())) != std::string::npos) {
        EXPECT_NE(i.message.find("first damage met in the decoded JSON is at "), std::string::npos) << i.message;
      }
    }
  }
}

// Every element Python's json could read once the bad one is cut out is kept; each bad one is
// counted with its byte offset, whichever reader (batches or whole) meets it.
TEST(KinetoDamage, BadElementsAreSkippedAndTheRestKept) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"tab", "{\"ph\":\"X\",\"name\":\"x\ty\"}"},
      {"utf8", "{\"ph\":\"X\",\"name\":\"x\xff\"}"},
      {"extra comma", ""},
      {"cut", "{\"ph\":\"X\",\"name\":\"cut"},
      {"cut object", "{\"ph\":\"X\",\"args\":{\"a\":1}"},
  };
  for (const auto& [what, text] : bad) {
    for (size_t batch : {size_t{0}, size_t{600}}) {
      const std::string& bad_element = text;  // clang 14 cannot capture a structured binding
      const std::string doc = Doc(40, [&](int i) { return i == 20 ? bad_element : Ev(i); });
      auto r = Import(doc, batch);
      ASSERT_TRUE(r.ok()) << what << ": " << r.status().ToString();
      std::vector<std::string> want;
      for (int i = 0; i < 40; ++i)
        if (i != 20) want.push_back("e" + std::to_string(i));
      EXPECT_EQ(Names(*r), want) << what << "\n" << Issues(*r);
      EXPECT_EQ(r->stats.Get(Problem::kKinetoMalformedJson), 1u) << what << "\n" << Issues(*r);
      const size_t offset = text.empty() ? doc.find(",\n,\n") + 2 : doc.find(text);
      const std::string at = "(byte " + std::to_string(offset) + ")";
      EXPECT_NE(Issues(*r).find(at), std::string::npos) << what << " " << at << "\n" << Issues(*r);
      EXPECT_EQ(r->events.front().start, 1000000) << "baseTimeNanoseconds after traceEvents was not read";
    }
  }
}

TEST(KinetoDamage, TrailingBytesAreReportedAndIgnored) {
  for (const std::string& tail : {std::string(4096, '\0'), std::string("\nINFO profiler done\n")}) {
    const std::string doc = Doc(30);
    for (size_t batch : {size_t{0}, size_t{600}}) {
      auto r = Import(doc + tail, batch);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->events.size(), 30u);
      EXPECT_EQ(r->stats.Get(Problem::kKinetoTrailingBytes), 1u) << Issues(*r);
      const std::string issues = Issues(*r);
      EXPECT_NE(issues.find(std::to_string(tail.size()) + " bytes after the end of the JSON document (byte " +
                            std::to_string(doc.size())),
                std::string::npos)
          << issues;
      EXPECT_EQ(issues.find("ended early"), std::string::npos) << issues;
      EXPECT_EQ(issues.find("(byte 0)"), std::string::npos) << issues;
    }
  }
}

TEST(KinetoDamage, ByteOrderMarkIsAccepted) {
  const std::string doc = "\xEF\xBB\xBF" + Doc(30);
  EXPECT_EQ(SniffFormatFromPrefix(doc), InputFormat::kKineto);
  for (size_t batch : {size_t{0}, size_t{600}}) {
    auto r = Import(doc, batch);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->events.size(), 30u);
    EXPECT_TRUE(r->stats.issues.empty()) << Issues(*r);
  }
}

// The Chrome trace spec's JSON Array Format as torch 1.13's export_chrome_trace writes it: no
// `cat`, "pid": "CPU functions", whole microseconds; the closing ']' may be missing.
TEST(KinetoDamage, JsonArrayFormatOfOlderPyTorch) {
  std::string doc = "[";
  for (int i = 0; i < 10; ++i)
    doc += std::string(i ? ", " : "") + R"({"name": "op)" + std::to_string(i) + R"(", "ph": "X", "ts": )" +
           std::to_string(100 * i) + R"(, "dur": 50, "tid": 1, "pid": "CPU functions", "args": {}})";
  EXPECT_EQ(SniffFormatFromPrefix(doc), InputFormat::kKineto);
  for (const std::string& d : {doc + "]", doc, doc + ",\n", doc + ", {\"name\": \"cut"}) {
    auto r = Import(d);
    ASSERT_TRUE(r.ok()) << d << ": " << r.status().ToString();
    ASSERT_EQ(r->events.size(), 10u) << Issues(*r);
    EXPECT_EQ(r->events[3].kind, EventKind::kRange);
    EXPECT_EQ(r->events[3].start, 300000);
    EXPECT_EQ(r->ThreadIdOf(r->events[3]), 1);
    EXPECT_EQ(r->ProcessOf(r->events[3]), r->ProcessOf(r->events[0]));
    EXPECT_GT(r->ProcessOf(r->events[3]), int64_t{1} << 32);
    // Only a cut element is a problem; a missing ']' is what the spec allows.
    EXPECT_EQ(r->stats.issues.size(), d.find("cut") != std::string::npos ? 1u : 0u) << Issues(*r);
  }
  // A string id holding a number is that number.
  auto r = Import(R"([{"name":"a","ph":"X","ts":1,"dur":1,"pid":"42","tid":"7"}])");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->ProcessOf(r->events[0]), 42);
  EXPECT_EQ(r->ThreadIdOf(r->events[0]), 7);
}

// ts and dur truncated to whole microseconds each on its own: a child ending 1 us after its
// parent ends with it; a longer overlap, or finer times, stay as they are.
TEST(KinetoDamage, WholeMicrosecondChildrenEndWithTheirParent) {
  auto r = Import(R"([
    {"name":"step","ph":"X","ts":100,"dur":10,"pid":1,"tid":1},
    {"name":"child","ph":"X","ts":105,"dur":6,"pid":1,"tid":1},
    {"name":"far","ph":"X","ts":106,"dur":8,"pid":1,"tid":1},
    {"name":"other thread","ph":"X","ts":105,"dur":6,"pid":1,"tid":2},
    {"name":"fine","ph":"X","ts":200,"dur":10,"pid":1,"tid":3},
    {"name":"fine child","ph":"X","ts":205.5,"dur":5,"pid":1,"tid":3}])");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->events.size(), 6u);
  EXPECT_EQ(r->events[1].end, 110000);  // clamped to step's end
  EXPECT_EQ(r->events[2].end, 114000);  // 4 us past: a real overlap
  EXPECT_EQ(r->events[3].end, 111000);  // no parent on its thread
  EXPECT_EQ(r->events[5].end, 210500);  // not whole microseconds
  EXPECT_EQ(r->stats.Get(Problem::kKinetoClampedEnd), 1u);
}

TEST(KinetoDamage, NoEventsReasonNamesEveryFile) {
  std::vector<TraceFile> files(2);
  files[0].meta.path = "a.json";
  files[0].meta.format = "kineto";
  files[0].stats.Report("a.json:3 (byte 70)", Problem::kKinetoMalformedJson, "bad element");
  files[1].meta.path = "b.jsonl";
  files[1].meta.format = "truffld";
  EXPECT_EQ(NoEventsReason(files),
            "no events in a.json (kineto; a.json:3 (byte 70): bad element), b.jsonl (truffld)");
  files[1].events.emplace_back();
  EXPECT_EQ(NoEventsReason(files), "");
}

}  // namespace
}  // namespace truffld::merge
