// Unit tests of the Nsight Systems SQLite importer on small databases built here.
#include "truffld/merge/import_nsys.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "importers/nsys/nsys_map.h"

namespace truffld::merge {
namespace {

// globalTid for (pid, tid) the way nsys writes it, with a host id in the top bits.
int64_t Gid(int64_t pid, int64_t tid) { return (int64_t{1} << 48) | (pid << 24) | tid; }

class NsysDb {
 public:
  explicit NsysDb(const std::string& name) : path_(::testing::TempDir() + "/" + name) {
    std::remove(path_.c_str());
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db_), SQLITE_OK);
  }
  ~NsysDb() {
    if (db_) sqlite3_close(db_);
    std::remove(path_.c_str());
  }
  void Exec(const std::string& sql) {
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << err << "\n" << sql;
  }
  const std::string& Close() {
    sqlite3_close(db_);
    db_ = nullptr;
    return path_;
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

TEST(NsysMap, GlobalIdsCarryPidAndTid) {
  // Values from a real export: thread 1701896 of process 1701896, and its globalPid.
  EXPECT_EQ(nsys::PidOf(310028055214088), 1701896);
  EXPECT_EQ(nsys::TidOf(310028055214088), 1701896);
  EXPECT_EQ(nsys::PidOf(310028053512192), 1701896);
  EXPECT_EQ(nsys::TidOf(310028053512192), 0);
  EXPECT_EQ(nsys::PidOf(Gid(42, 43)), 42);
  EXPECT_EQ(nsys::TidOf(Gid(42, 43)), 43);
}

TEST(NsysMap, EnumsAndRankNames) {
  EXPECT_EQ(nsys::CopyKindName(1), "HtoD");
  EXPECT_EQ(nsys::CopyKindName(8), "DtoD");
  EXPECT_EQ(nsys::CopyKindName(99), "");
  EXPECT_EQ(nsys::ClassifyNvtxRow(59), nsys::NvtxRow::kPushPop);
  EXPECT_EQ(nsys::ClassifyNvtxRow(60), nsys::NvtxRow::kStartEnd);
  EXPECT_EQ(nsys::ClassifyNvtxRow(34), nsys::NvtxRow::kMark);
  EXPECT_EQ(nsys::ClassifyNvtxRow(33), nsys::NvtxRow::kOther);
  EXPECT_EQ(nsys::MpiRankFromThreadName("MPI Rank 12"), 12);
  EXPECT_FALSE(nsys::MpiRankFromThreadName("MPI Rank x").has_value());
  EXPECT_FALSE(nsys::MpiRankFromThreadName("main").has_value());
}

// A database shaped like `nsys export --type sqlite`: two processes, NVTX of every kind.
void FillSample(NsysDb& db) {
  db.Exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
          "INSERT INTO StringIds VALUES (1,'cudaLaunchKernel'),(2,'gemm(float*)'),(3,'gemm'),"
          "(4,'cudaMemcpyAsync'),(5,'MPI_Send'),(6,'step_execute_model'),(7,'cudaMemcpyAsync_v3020');"
          "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT);"
          "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1000000000000, 'x');"
          "CREATE TABLE TARGET_INFO_SYSTEM_ENV (name TEXT, value TEXT);"
          "INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES ('Hostname','node7');"
          "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER,"
          " globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER);"
          "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,"
          " streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER,"
          " shortName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER,"
          " blockY INTEGER, blockZ INTEGER);"
          "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER,"
          " streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER,"
          " copyKind INTEGER);"
          "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER,"
          " category INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,"
          " domainId INTEGER);");
  const std::string a = std::to_string(Gid(100, 101)), b = std::to_string(Gid(200, 201));
  const std::string pa = std::to_string(Gid(100, 0));
  db.Exec("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES"
          " (10, 20, 0, " + a + ", 7, 1, 0), (30, 35, 0, " + a + ", 8, 4, 0), (31, 34, 0, " + a + ", 8, 7, 0),"
          " (12, 13, 0, " + a + ", 9, 1, 0), (NULL, 5, 0, " + a + ", 10, 1, 0),"
          " (50, 40, 0, " + a + ", 11, 1, 0), (60, 61, 0, " + b + ", 12, 1, 0);"
          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
          " (22, 28, 0, 7, 7, " + pa + ", 2, 3, 4, 1, 1, 256, 1, 1),"
          " (62, 63, 1, 9, 12, NULL, NULL, 3, 1, 1, 1, 32, 1, 1);"
          "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (36, 39, 0, 7, 8, " + pa + ", 4096, 2);"
          "INSERT INTO NVTX_EVENTS VALUES"
          " (1, NULL, 75, NULL, NULL, 'NCCL', " + a + ", NULL, NULL, 3),"
          " (2, NULL, 39, NULL, NULL, 'MPI Rank 2', " + a + ", NULL, NULL, 0),"
          " (5, 45, 59, NULL, NULL, NULL, " + a + ", NULL, 6, 0),"
          " (9, 21, 59, NULL, NULL, 'allreduce', " + a + ", NULL, NULL, 3),"
          " (11, 44, 60, 77, 4, 'async', " + a + ", " + b + ", NULL, 0),"
          " (15, 15, 34, NULL, NULL, 'here', " + a + ", NULL, NULL, 0),"
          " (46, NULL, 59, NULL, NULL, 'never popped', " + a + ", NULL, NULL, 0),"
          " (47, NULL, 60, 78, NULL, 'never ended', " + a + ", NULL, NULL, 0);");
}

const Event* Find(const TraceFile& tf, std::string_view name, EventKind kind) {
  for (const Event& e : tf.events)
    if (e.kind == kind && tf.strings.Get(e.name) == name) return &e;
  return nullptr;
}

TEST(ImportNsys, ReadsEveryTableIntoTheEventModel) {
  NsysDb db("nsys_sample.sqlite");
  FillSample(db);
  auto r = ImportNsys(db.Close(), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const TraceFile& tf = *r;
  constexpr int64_t kBase = 1000000000000;
  EXPECT_EQ(tf.meta.format, "nsys");
  EXPECT_EQ(tf.meta.host, "node7");
  EXPECT_EQ(tf.meta.process_id, 100);
  EXPECT_EQ(tf.meta.rank, 2);

  const Event* rt = Find(tf, "cudaLaunchKernel", EventKind::kRuntime);
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(rt->start, kBase + 10);
  EXPECT_EQ(rt->end, kBase + 20);
  EXPECT_EQ(tf.ProcessOf(*rt), 100);
  EXPECT_EQ(tf.ThreadIdOf(*rt), 101);
  EXPECT_EQ(tf.Correlation(*rt), 7);

  const Event* k = Find(tf, "gemm(float*)", EventKind::kKernel);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(tf.ProcessOf(*k), 100);
  EXPECT_EQ(tf.ThreadIdOf(*k), kNone);
  EXPECT_EQ(tf.Extra(*k).stream, 7);
  EXPECT_EQ(tf.Extra(*k).grid[0], 4);
  EXPECT_EQ(tf.Extra(*k).block[0], 256);
  // No globalPid and no demangled name: process of the launch (200), short name.
  const Event* k2 = Find(tf, "gemm", EventKind::kKernel);
  ASSERT_NE(k2, nullptr);
  EXPECT_EQ(tf.ProcessOf(*k2), 200);
  EXPECT_EQ(tf.Extra(*k2).device, 1);

  const Event* cp = Find(tf, "Memcpy", EventKind::kMemcpy);
  ASSERT_NE(cp, nullptr);
  EXPECT_EQ(tf.Extra(*cp).bytes, 4096);
  EXPECT_EQ(tf.strings.Get(tf.Extra(*cp).copy_kind), "DtoH");

  const Event* step = Find(tf, "step_execute_model", EventKind::kRange);  // name via textId
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->end, kBase + 45);
  const Event* ar = Find(tf, "allreduce", EventKind::kRange);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(tf.strings.Get(tf.Extra(*ar).domain), "NCCL");
  const Event* se = Find(tf, "async", EventKind::kRange);
  ASSERT_NE(se, nullptr);
  EXPECT_EQ(tf.Extra(*se).range_id, 77);
  EXPECT_EQ(tf.strings.Get(tf.Extra(*se).category), "4");
  EXPECT_NE(Find(tf, "here", EventKind::kNvtxMark), nullptr);
  EXPECT_NE(Find(tf, "never popped", EventKind::kNvtxPush), nullptr);
  const Event* ne = Find(tf, "never ended", EventKind::kNvtxStart);
  ASSERT_NE(ne, nullptr);
  EXPECT_EQ(tf.Extra(*ne).range_id, 78);

  EXPECT_EQ(tf.stats.Kept(EventKind::kRuntime), 4u);
  EXPECT_EQ(tf.stats.Get(Problem::kNsysSkippedNestedApiAlias), 1u);  // cudaMemcpyAsync_v3020
  EXPECT_EQ(Find(tf, "cudaMemcpyAsync_v3020", EventKind::kRuntime), nullptr);
  EXPECT_NE(Find(tf, "cudaMemcpyAsync", EventKind::kRuntime), nullptr);
  EXPECT_EQ(tf.stats.Kept(EventKind::kKernel), 2u);
  EXPECT_EQ(tf.stats.Kept(EventKind::kMemcpy), 1u);
  EXPECT_EQ(tf.stats.Kept(EventKind::kRange), 3u);
  EXPECT_EQ(tf.stats.Get(Problem::kNsysMissingField), 1u);
  EXPECT_EQ(tf.stats.Get(Problem::kNsysNegativeDuration), 1u);
  EXPECT_EQ(tf.stats.Get(Problem::kNsysSkippedNvtxThreadName), 1u);
  ASSERT_FALSE(tf.stats.issues.empty());
  EXPECT_NE(tf.stats.issues[0].where.find("nsys_sample.sqlite:CUPTI_ACTIVITY_KIND_RUNTIME row 5"),
            std::string::npos)
      << tf.stats.issues[0].where;
}

TEST(ImportNsys, StrictFailsOnTheFirstProblem) {
  NsysDb db("nsys_strict.sqlite");
  FillSample(db);
  ImportOptions o;
  o.strict = true;
  auto r = ImportNsys(db.Close(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("row 5"), std::string::npos) << r.status().ToString();
}

TEST(ImportNsys, MissingTablesAreFineButNoTablesIsAnError) {
  {
    NsysDb db("nsys_kernels_only.sqlite");
    db.Exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,"
            " streamId INTEGER, correlationId INTEGER, globalPid INTEGER);"
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 0, 7, 1, " +
            std::to_string(Gid(5, 0)) + ");");
    auto r = ImportNsys(db.Close(), {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->events.size(), 1u);
    EXPECT_EQ(r->ProcessOf(r->events[0]), 5);
    EXPECT_EQ(r->events[0].start, 1);  // no session start: session-relative, counted
    EXPECT_EQ(r->stats.Get(Problem::kNsysRelativeTimes), 1u);
  }
  {
    NsysDb db("nsys_empty.sqlite");
    db.Exec("CREATE TABLE other (x INTEGER);");
    auto r = ImportNsys(db.Close(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kParseError);
    EXPECT_NE(r.status().message().find("nsys_empty.sqlite"), std::string::npos);
  }
}

TEST(ImportNsys, UnreadableInputsAreClearErrors) {
  auto missing = ImportNsys(::testing::TempDir() + "/does_not_exist.sqlite", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  std::string junk = ::testing::TempDir() + "/junk.sqlite";
  {
    std::ofstream f(junk);
    f << "this is not a database, just some text that is long enough to have a header......";
  }
  auto r = ImportNsys(junk, {});
  std::remove(junk.c_str());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("junk.sqlite"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace truffld::merge
