// Every Kineto trace in ../shared/data/kineto imports with the counts its README states, and
// merges into trees that satisfy the structural invariants.
//
// The expected figures are the README's table (events, device ops, device ops linked by
// correlation), extended per kind; they were recomputed from each file independently with
// Python's json module (categories counted over ph == "X" events; a device op is "linked"
// when its args.correlation equals that of a cuda_runtime/cuda_driver event in the file).
#include <gtest/gtest.h>

#include "importers/kineto/document_parts.h"
#include "realdata_util.h"
#include "trace_file_text.h"
#include "truffld/byte_source.h"
#include "truffld/merge/import_kineto.h"
#include "truffld/merge/pipeline.h"

namespace truffld::merge::realdata {
namespace {

struct KinetoFacts {
  const char* file;
  uint64_t trace_events;  // len(traceEvents)
  uint64_t host_ranges;   // cpu_op + user_annotation + gpu_user_annotation + python_function
  uint64_t runtime, driver, kernels, memcpys, memsets;
  uint64_t device_ops, linked;
  std::optional<int64_t> rank;
};

const KinetoFacts kKinetoFiles[] = {
    {"deepseek-v3_train_dualpipe_rank0.json.gz", 14240, 4429, 3853, 40, 963, 8, 12, 983, 983, 0},
    {"hf_qwen1.5-0.5b_h100.json.gz", 18221, 8450, 1921, 1, 1465, 1, 241, 1707, 1198, std::nullopt},
    {"hta_ddp_2rank_nccl_a100.json.gz", 40573, 14418, 8740, 0, 2700, 960, 114, 3774, 3774, 0},
    {"hta_df_index_resolver.json.gz", 216092, 58715, 42373, 0, 19370, 2040, 880, 22290, 22290, 1},
    {"hta_sampled_rank-0.json.gz", 4855, 2402, 1204, 0, 1154, 40, 10, 1204, 1204, 0},
    {"hta_sampled_rank-1.json.gz", 4720, 2367, 1154, 0, 1104, 40, 10, 1154, 1154, 1},
    {"hta_trace_diff_control_a100.json.gz", 109123, 40794, 24692, 0, 8568, 228, 654, 9450, 9450, 3},
    {"sglang_qwen3-8b_prefilldecode_mi300x.json.gz", 60315, 57109, 1069, 0, 527, 7, 0, 534, 534, 0},
    {"vllm_gpt-oss_b200_tp8_rank0.json.gz", 24656, 20045, 1151, 221, 768, 161, 0, 929, 929, 0},
    {"vllm_qwen3-8b_decode_graph_capture_mi300x.json.gz", 131243, 123722, 3128, 0, 7, 3, 0, 10, 10, 0},
    {"vllm_qwen3-8b_decode_graph_replay_mi300x.json.gz", 1993, 1085, 20, 0, 425, 9, 0, 434, 434, 0},
};

void PrintTo(const KinetoFacts& f, std::ostream* os) { *os << f.file; }

class KinetoRealData : public ::testing::TestWithParam<KinetoFacts> {};

TEST_P(KinetoRealData, ImportsWithTheReadmeCountsAndMergesCleanly) {
  const KinetoFacts& x = GetParam();
  std::string why;
  std::string path = SharedDataFile(std::string("kineto/") + x.file, &why);
  if (path.empty()) GTEST_SKIP() << why;

  auto r = ImportKineto(path, ImportOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  TraceFile& tf = *r;
  EXPECT_EQ(tf.meta.format, "kineto");
  EXPECT_EQ(tf.meta.rank, x.rank);
  EXPECT_NE(tf.meta.process_id, kNone);
  EXPECT_EQ(tf.stats.Get(Problem::kKinetoTraceEvents), x.trace_events);
  EXPECT_EQ(CountKind(tf, EventKind::kRange), x.host_ranges);
  EXPECT_EQ(CountKind(tf, EventKind::kRuntime), x.runtime);
  EXPECT_EQ(CountKind(tf, EventKind::kDriver), x.driver);
  EXPECT_EQ(CountKind(tf, EventKind::kKernel), x.kernels);
  EXPECT_EQ(CountKind(tf, EventKind::kMemcpy), x.memcpys);
  EXPECT_EQ(CountKind(tf, EventKind::kMemset), x.memsets);
  EXPECT_EQ(x.kernels + x.memcpys + x.memsets, x.device_ops);
  EXPECT_EQ(DeviceOpsWithLaunch(tf), x.linked);
  // No real file has a problem record: nothing counted as missing, malformed or mistyped.
  for (const IngestIssue& i : tf.stats.issues) ADD_FAILURE() << i.where << ": " << ProblemKey(i.kind) << ": " << i.message;
  // Every trace event is accounted for: imported, or skipped under a named key (clamped_end
  // counts imported events whose end moved, not elements).
  uint64_t accounted = 0;
  for (const auto& [k, n] : tf.stats.counts.items)
    if (!(k == IngestStats::Of(Problem::kKinetoTraceEvents)) && !(k == IngestStats::Of(Problem::kKinetoClampedEnd)))
      accounted += n;
  EXPECT_EQ(accounted, x.trace_events);
  // Times: baseTimeNanoseconds applied (all files are from 2022 or later, UTC ns).
  for (const Event& e : tf.events) {
    ASSERT_GE(e.end, e.start);
    ASSERT_GT(e.start, int64_t{1600000000} * 1000000000) << "event #" << tf.LineOf(e);
  }

  MergeOptions mo;
  std::vector<TraceFile> files;
  files.push_back(std::move(tf));
  auto m = Merge(std::move(files), mo);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ExpectMergeInvariants(*m, x.kernels, x.device_ops, x.linked);
}

// The batch reader (ImportOptions::kineto_batch_bytes) reads every real file itself, without
// handing it back to the whole-document reader, and gives the same TraceFile at any batch size,
// from memory and through a window on the file.
TEST_P(KinetoRealData, BatchesGiveTheSameFileAsTheWholeDocument) {
  std::string why;
  std::string path = SharedDataFile(std::string("kineto/") + GetParam().file, &why);
  if (path.empty()) GTEST_SKIP() << why;
  ImportOptions whole_options;
  whole_options.kineto_batch_bytes = 0;
  auto whole = ImportKineto(path, whole_options);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  const std::string expected = testing::TraceFileText(*whole);
  auto bytes = ReadWholeFile(path, false, simdjson::SIMDJSON_PADDING);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  for (size_t target : {size_t{4096}, ImportOptions{}.kineto_batch_bytes, size_t{1} << 22}) {
    ImportOptions o;
    o.kineto_batch_bytes = target;
    kineto::DocFeed feed(bytes->data.get(), bytes->size, bytes->capacity);
    auto batched = kineto::ImportInBatches(&feed, path, o);
    if (bytes->size <= target) continue;  // ImportKineto reads such a file whole
    ASSERT_TRUE(batched.has_value()) << "handed back to the whole-document reader at target " << target;
    ASSERT_TRUE(batched->ok()) << batched->status().ToString();
    EXPECT_TRUE(testing::TraceFileText(**batched) == expected) << "target " << target << " differs";
    // The same through a window of four batches on the file, as ImportKineto reads a regular
    // file, never held whole.
    auto src = OpenByteSource(path);
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    kineto::DocFeed window(src->get(), 4 * target);
    ASSERT_TRUE(window.Refill(0));
    if (window.complete()) continue;  // ImportKineto reads a file that fits the window whole
    auto streamed = kineto::ImportInBatches(&window, path, o);
    ASSERT_TRUE(streamed.has_value()) << "streamed: handed back at target " << target;
    ASSERT_TRUE(streamed->ok()) << streamed->status().ToString();
    EXPECT_TRUE(testing::TraceFileText(**streamed) == expected) << "streamed, target " << target << " differs";
  }
}

INSTANTIATE_TEST_SUITE_P(AllFiles, KinetoRealData, ::testing::ValuesIn(kKinetoFiles),
                         [](const ::testing::TestParamInfo<KinetoFacts>& i) {
                           std::string n = i.param.file;
                           n = n.substr(0, n.find(".json"));
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace truffld::merge::realdata
