// Both Nsight Systems exports in ../shared/data/nsys import with the row counts the database
// itself reports (queried here with plain SQL, independently of the importer) and the README's
// figures, and merge into trees that satisfy the structural invariants.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "realdata_util.h"
#include "truffld/merge/import_nsys.h"
#include "truffld/merge/pipeline.h"

namespace truffld::merge::realdata {
namespace {

// Runs a scalar SQL query; -1 when it fails (e.g. the table does not exist).
int64_t Scalar(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int64_t v = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
      v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return v;
}

int64_t Rows(const std::string& path, const std::string& table) {
  int64_t n = Scalar(path, "SELECT count(*) FROM " + table);
  return n < 0 ? 0 : n;
}

struct NsysFacts {
  const char* file;
  int64_t kernels, runtime, nvtx_rows;  // README: "1,312 kernels, 3,048 runtime calls, no NVTX"
};

const NsysFacts kNsysFiles[] = {
    {"cloverleaf_4gpu_perlmutter.sqlite", 1312, 3048, 0},
    {"saxpy_mpi_cuda_perlmutter.sqlite", 5, 95, 24},
};

void PrintTo(const NsysFacts& f, std::ostream* os) { *os << f.file; }

class NsysRealData : public ::testing::TestWithParam<NsysFacts> {};

TEST_P(NsysRealData, ImportsEveryRowAndMergesCleanly) {
  const NsysFacts& x = GetParam();
  std::string why;
  std::string path = SharedDataFile(std::string("nsys/") + x.file, &why);
  if (path.empty()) GTEST_SKIP() << why;

  const int64_t kernels = Rows(path, "CUPTI_ACTIVITY_KIND_KERNEL");
  const int64_t runtime = Rows(path, "CUPTI_ACTIVITY_KIND_RUNTIME");
  const int64_t memcpys = Rows(path, "CUPTI_ACTIVITY_KIND_MEMCPY");
  const int64_t memsets = Rows(path, "CUPTI_ACTIVITY_KIND_MEMSET");
  const int64_t nvtx = Rows(path, "NVTX_EVENTS");
  EXPECT_EQ(kernels, x.kernels);
  EXPECT_EQ(runtime, x.runtime);
  EXPECT_EQ(nvtx, x.nvtx_rows);
  // NVTX rows the model keeps: closed push/pop and start/end ranges, and marks.
  const int64_t nvtx_ranges =
      nvtx ? Scalar(path, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end IS NOT NULL") : 0;
  const int64_t nvtx_marks = nvtx ? Scalar(path, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 34") : 0;
  // Device ops whose correlation id has a runtime call (same process) in the file.
  int64_t linked = 0;
  for (const char* t : {"KERNEL", "MEMCPY", "MEMSET"}) {
    std::string table = std::string("CUPTI_ACTIVITY_KIND_") + t;
    if (Scalar(path, "SELECT count(*) FROM " + table) < 0) continue;
    linked += Scalar(path, "SELECT count(*) FROM " + table + " d WHERE EXISTS (SELECT 1 FROM "
                           "CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = d.correlationId "
                           "AND ((r.globalTid >> 24) & 16777215) = ((d.globalPid >> 24) & 16777215))");
  }

  auto r = ImportNsys(path, ImportOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  TraceFile& tf = *r;
  EXPECT_EQ(tf.meta.format, "nsys");
  EXPECT_FALSE(tf.meta.host.empty());
  EXPECT_EQ(static_cast<int64_t>(CountKind(tf, EventKind::kKernel)), kernels);
  // nsys lists some calls twice under one correlation id: the entry point and, nested in it on
  // the same thread, its versioned alias (cudaMalloc_v3020); the importer keeps the outer one.
  const int64_t aliases = Scalar(path,
      "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME i WHERE EXISTS (SELECT 1 FROM "
      "CUPTI_ACTIVITY_KIND_RUNTIME o WHERE o.correlationId = i.correlationId AND o.globalTid = "
      "i.globalTid AND o.rowid != i.rowid AND o.start <= i.start AND i.end <= o.end AND "
      "(o.start < i.start OR o.end > i.end OR o.rowid < i.rowid))");
  EXPECT_EQ(static_cast<int64_t>(tf.stats.Get(Problem::kNsysSkippedNestedApiAlias)), aliases);
  EXPECT_EQ(static_cast<int64_t>(CountKind(tf, EventKind::kRuntime)), runtime - aliases);
  EXPECT_EQ(static_cast<int64_t>(CountKind(tf, EventKind::kMemcpy)), memcpys);
  EXPECT_EQ(static_cast<int64_t>(CountKind(tf, EventKind::kMemset)), memsets);
  EXPECT_EQ(static_cast<int64_t>(CountKind(tf, EventKind::kRange)), nvtx_ranges);
  EXPECT_EQ(static_cast<int64_t>(CountKind(tf, EventKind::kNvtxMark)), nvtx_marks);
  EXPECT_EQ(static_cast<int64_t>(DeviceOpsWithLaunch(tf)), linked);
  for (const IngestIssue& i : tf.stats.issues) ADD_FAILURE() << i.where << ": " << ProblemKey(i.kind) << ": " << i.message;
  // Session start applied: UTC ns of 2023.
  for (const Event& e : tf.events) ASSERT_GT(e.start, int64_t{1600000000} * 1000000000);

  std::vector<TraceFile> files;
  files.push_back(std::move(tf));
  auto m = Merge(std::move(files), MergeOptions{});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ExpectMergeInvariants(*m, kernels, kernels + memcpys + memsets, linked);
}

INSTANTIATE_TEST_SUITE_P(AllFiles, NsysRealData, ::testing::ValuesIn(kNsysFiles),
                         [](const ::testing::TestParamInfo<NsysFacts>& i) {
                           std::string n = i.param.file;
                           n = n.substr(0, n.find(".sqlite"));
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace truffld::merge::realdata
