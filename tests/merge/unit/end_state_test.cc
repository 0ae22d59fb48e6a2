// End states (core/end_state.h) through the whole merge: what a dump that stopped mid-step
// leaves in FileSummary::end_state, and what a clean dump leaves.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/end_state.h"
#include "merge_test_util.h"
#include "truffld/merge/raw_parser.h"
#include <sstream>
#include "truffld/merge/pipeline.h"

namespace truffld::merge {
namespace {

using testing::RawLaunch;
using testing::RawPop;
using testing::RawPush;
using testing::RawRec;

std::string EsKernel(long long s, long long e, long long corr) { return testing::RawKernel("k", s, e, corr); }
std::string EsNccl(long long s, long long e, const std::string& comm) {
  const std::string payload = comm.empty() ? "" : ",\"payload\":{\"comm\":\"" + comm + "\",\"bytes\":64,\"world_size\":2}";
  return RawPush("ncclAllReduce", s, ",\"domain\":\"NCCL\"" + payload) + RawPop(e, ",\"domain\":\"NCCL\"");
}
const std::string kEsMeta =
    "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"h\",\"process_id\":7,\"rank\":1,"
    "\"clock\":\"realtime\",\"clock_sync\":{\"realtime_ns\":0,\"monotonic_ns\":5}}\n";
const std::string kEsStats = "{\"type\":\"STATS\",\"records_written\":{},\"records_dropped\":{}}\n";

FileEndState EsEndOf(const std::string& dump) {
  std::vector<TraceFile> files;
  // A dump cut mid-line: its whole lines, then the cut one as the raw reader reads a last
  // line with no newline.
  const size_t cut = dump.back() == '\n' ? dump.size() : dump.rfind('\n') + 1;
  TraceFile f = testing::FileFromLines(dump.substr(0, cut), "r1.jsonl");
  if (cut < dump.size()) {
    TraceFile g;
    g.meta.path = "r1.jsonl";
    RawLineParser p(&g, "r1.jsonl");
    std::istringstream in(dump.substr(0, cut));
    std::string line;
    uint64_t n = 0;
    while (std::getline(in, line)) p.ParseLine(line, ++n);
    p.ParseCutLine(dump.substr(cut), n + 1);
    p.Finish();
    g.meta.format = "truffld";
    g.SortThreads();
    f = std::move(g);
  }
  files.push_back(std::move(f));
  auto r = Merge(std::move(files), MergeOptions{});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->summary.files.at(0).end_state : FileEndState{};
}

// Two steps; the second stops inside aten::mm after its second collective, with one launch
// whose kernel never arrived; a CLOCK record a minute later is the last sign of life.
std::string EsStoppedDump() {
  std::string d = kEsMeta + RawPush("step_execute_model[phase:decode]", 100) + RawLaunch(110, 1) + EsKernel(120, 130, 1) + EsNccl(140, 150, "c0") + RawPop(200);
  d += RawPush("step_execute_model[phase:prefill]", 300) + EsNccl(310, 320, "c0") + RawPush("aten::mm, op_id = 9", 330) + RawLaunch(340, 2);
  d += "{\"type\":\"CLOCK\",\"clock_sync\":{\"realtime_ns\":60000000000,\"monotonic_ns\":60000000005}}\n";
  return d + "{\"type\":\"NVTX_POP\",\"timest";  // cut mid-line
}

TEST(EndState, AStoppedDumpNamesItsOpenStackCollectivesAndPendingLaunch) {
  const FileEndState e = EsEndOf(EsStoppedDump());
  EXPECT_FALSE(e.clean_exit);
  EXPECT_FALSE(e.stats_record);
  EXPECT_TRUE(e.truncated_last_line);
  EXPECT_EQ(e.steps_entered, 2u);
  EXPECT_EQ(e.last_step, "step_execute_model[phase:prefill]");
  EXPECT_TRUE(e.last_step_open);
  ASSERT_EQ(e.open.size(), 2u);
  EXPECT_EQ(e.open[0].name, "step_execute_model[phase:prefill]");
  EXPECT_EQ(e.open[0].layer, Layer::kStep);
  EXPECT_EQ(e.open[1].name, "aten::mm, op_id = 9");
  EXPECT_EQ(e.open[1].layer, Layer::kBackend);
  ASSERT_EQ(e.collectives.size(), 1u);
  EXPECT_EQ(e.collectives[0].communicator, "c0");
  EXPECT_EQ(e.collectives[0].entered, 2u);
  EXPECT_EQ(e.collectives[0].bytes, 64);
  EXPECT_EQ(e.collectives[0].world_size, 2);
  EXPECT_EQ(e.collectives[0].last_start, 310);
  EXPECT_FALSE(e.collectives[0].last_open);
  EXPECT_EQ(e.pending_launches, 1u);  // correlation 2: launched at 340, no kernel
  ASSERT_EQ(e.first_pending.size(), 1u);
  EXPECT_EQ(e.first_pending[0].name, "cudaLaunchKernel");
  EXPECT_EQ(e.first_pending[0].start, 340);
  EXPECT_EQ(e.last_event, 345);
  EXPECT_EQ(e.last_alive, 60000000000);
}

TEST(EndState, ACleanDumpIsACleanExitWithNothingOpen) {
  const std::string d = kEsMeta + RawPush("step_execute_model[phase:decode]", 100) + RawLaunch(110, 1) + EsKernel(120, 130, 1) + EsNccl(140, 150, "") + RawPop(200) + kEsStats;
  const FileEndState e = EsEndOf(d);
  EXPECT_TRUE(e.clean_exit);
  EXPECT_TRUE(e.stats_record);
  EXPECT_TRUE(e.open.empty());
  EXPECT_EQ(e.pending_launches, 0u);
  ASSERT_EQ(e.collectives.size(), 1u);
  EXPECT_EQ(e.collectives[0].communicator, "op:ncclAllReduce");  // no payload: keyed by operator
  EXPECT_EQ(e.collectives[0].entered, 1u);
}

TEST(EndState, AWrapperRangeWithACommunicatorInsideCountsOnce) {
  // c10d::allreduce_ (comm layer, no payload) around ncclAllReduce (payload): one collective.
  std::string d = kEsMeta + RawPush("step_execute_model[phase:decode]", 100);
  for (int i = 0; i < 3; ++i) d += RawPush("c10d::allreduce_", 110 + 50 * i) + EsNccl(115 + 50 * i, 120 + 50 * i, "c9") + RawPop(130 + 50 * i);
  d += RawPop(300) + kEsStats;
  const FileEndState e = EsEndOf(d);
  ASSERT_EQ(e.collectives.size(), 1u);
  EXPECT_EQ(e.collectives[0].communicator, "c9");
  EXPECT_EQ(e.collectives[0].entered, 3u);
}

TEST(EndState, CommunicatorOfReadsStringsAndNumbers) {
  EXPECT_EQ(CommunicatorOf("{\"comm\":\"0x1f\",\"bytes\":4}"), "0x1f");
  EXPECT_EQ(CommunicatorOf("{\"comm\":123456}"), "123456");
  EXPECT_EQ(CommunicatorOf("{\"bytes\":4}"), "");
  EXPECT_EQ(CommunicatorOf("{\"comm\":"), "");  // not JSON: none
}

}  // namespace
}  // namespace truffld::merge
