// Hang localisation (hang/hang.h) on hand-made end states, and summary.json parsing
// (hang/end_states.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hang/end_states.h"
#include "hang/hang.h"

namespace truffld::diagnose {
namespace {

constexpr int64_t kS = 1000000000;

// A rank of a TP group on `host` that stopped (no clean exit) after `entered` collectives on its
// own communicator `comm`, inside `stack` (outermost first), its last record at `last`.
RankEnd Stopped(int64_t rank, const std::string& host, uint64_t entered, std::vector<std::string> stack,
                int64_t last, const std::string& comm = "", int64_t world = 2) {
  RankEnd e;
  e.rank = rank;
  e.host = host;
  e.clean_exit = false;
  e.last_event_ns = last;
  e.last_alive_ns = 400 * kS;
  e.steps_entered = 9;
  for (size_t i = 0; i < stack.size(); ++i)
    e.open.push_back({stack[i], i == 0 ? "step" : "backend_op", last - int64_t(stack.size() - i), 1});
  e.collectives.push_back({comm.empty() ? "0xptr" + std::to_string(rank) : comm, "ncclAllReduce", entered, 64, world,
                           last - 10, last - 5, false});
  return e;
}

TEST(Hang, TheRankBehindInCollectivesIsTheCulpritWithItsStack) {
  // Two TP2 replicas on two hosts; on node1, rank 3 stopped inside aten::index_select one
  // collective before rank 2, which waits.
  std::vector<RankEnd> ends = {Stopped(0, "node0", 50, {"step_x", "aten::to"}, 100 * kS),
                               Stopped(1, "node0", 50, {"step_x", "aten::to"}, 100 * kS),
                               Stopped(2, "node1", 41, {"step_y", "aten::copy_"}, 100 * kS),
                               Stopped(3, "node1", 40, {"step_y", "aten::index_select, op_id = 4"}, 90 * kS)};
  const HangReport r = LocateHang(ends);
  EXPECT_EQ(r.status, HangStatus::kHang);
  ASSERT_EQ(r.culprits, std::vector<size_t>{3});
  EXPECT_EQ(r.waiting, std::vector<size_t>{2});
  EXPECT_NE(r.sentence.find("rank 3 never entered collective #41"), std::string::npos) << r.sentence;
  EXPECT_NE(r.sentence.find("step 8 > aten::index_select"), std::string::npos) << r.sentence;
  EXPECT_NE(r.sentence.find("open for 310"), std::string::npos) << r.sentence;
  EXPECT_EQ(r.rank_lines.size(), 4u);
  const auto j = HangJson(ends, r);
  EXPECT_EQ(j["culprits"][0], "rank 3");
  EXPECT_EQ(j["ranks"][3]["role"], "culprit");
  EXPECT_EQ(j["ranks"][2]["role"], "waiting");
}

TEST(Hang, SharedCommunicatorIdsGroupRanksAcrossHosts) {
  // A PP pair over two hosts naming one communicator: the host rule alone would miss it.
  std::vector<RankEnd> ends = {Stopped(0, "a", 7, {"s"}, 50 * kS, "c1"), Stopped(1, "b", 6, {"s"}, 40 * kS, "c1")};
  const HangReport r = LocateHang(ends);
  ASSERT_EQ(r.culprits, std::vector<size_t>{1});
  EXPECT_EQ(r.waiting, std::vector<size_t>{0});
  EXPECT_NE(r.sentence.find("communicator c1"), std::string::npos) << r.sentence;
}

TEST(Hang, StepsDecideWhenCollectivesAreEven) {
  std::vector<RankEnd> ends = {Stopped(0, "a", 5, {"s"}, 50 * kS), Stopped(1, "a", 5, {}, 40 * kS)};
  ends[1].steps_entered = 8;
  const HangReport r = LocateHang(ends);
  ASSERT_EQ(r.culprits, std::vector<size_t>{1});
  EXPECT_NE(r.sentence.find("never entered step #9"), std::string::npos) << r.sentence;
  EXPECT_NE(r.sentence.find("had nothing open"), std::string::npos) << r.sentence;
}

TEST(Hang, NobodyBehindIsInsufficientEvidence) {
  std::vector<RankEnd> ends = {Stopped(0, "a", 5, {"s"}, 50 * kS), Stopped(1, "a", 5, {"s"}, 50 * kS)};
  const HangReport r = LocateHang(ends);
  EXPECT_EQ(r.status, HangStatus::kHang);
  EXPECT_TRUE(r.culprits.empty());
  EXPECT_NE(r.sentence.find("insufficient evidence"), std::string::npos) << r.sentence;
}

TEST(Hang, CleanExitsAreCompleteAndStoppedBetweenStepsIsKilled) {
  std::vector<RankEnd> ends = {Stopped(0, "a", 5, {}, 50 * kS), Stopped(1, "a", 5, {}, 50 * kS)};
  ends[0].clean_exit = ends[1].clean_exit = true;
  EXPECT_EQ(LocateHang(ends).status, HangStatus::kComplete);
  ends[1].clean_exit = false;
  const HangReport r = LocateHang(ends);
  EXPECT_EQ(r.status, HangStatus::kKilled);
  EXPECT_TRUE(r.culprits.empty());
}

TEST(Hang, ParseEndStatesReadsSummaryFilesAndRejectsOldOnes) {
  const std::string ok = R"({"schema":"truffld.summary/1","files":[{"path":"d/r0.jsonl","format":"truffld","host":"h",
    "process_id":9,"rank":0,"end_state":{"clean_exit":false,"stats_record":false,"truncated_last_line":true,
    "last_event_ns":5,"last_alive_ns":7,"steps_entered":2,"last_step":"s","last_step_open":true,
    "open_ranges":[{"name":"s","layer":"step","start_ns":1,"thread_id":9}],
    "collectives":[{"communicator":"c","op":"ncclAllReduce","entered":3,"bytes":8,"world_size":2,
    "last_start_ns":2,"last_end_ns":3,"last_open":false}],"pending_launches":1,
    "first_pending_launches":[{"name":"cudaLaunchKernel","start_ns":4,"thread_id":9,"stream":null}]}}]})";
  auto e = ParseEndStates(ok, "summary.json");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->size(), 1u);
  const RankEnd& r = (*e)[0];
  EXPECT_TRUE(r.Killed());
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.last_alive_ns, 7);
  EXPECT_EQ(r.open.at(0).layer, "step");
  EXPECT_EQ(r.collectives.at(0).entered, 3u);
  EXPECT_EQ(r.first_pending.at(0).stream, -1);
  auto old = ParseEndStates(R"({"schema":"truffld.summary/1","files":[{"path":"x"}]})", "s.json");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("merge the dumps again"), std::string::npos);
  EXPECT_FALSE(ParseEndStates("[1,", "s.json").ok());
  std::string wrong = ok;
  wrong.replace(wrong.find("\"entered\":3"), 11, "\"entered\":\"3\"");
  auto typed = ParseEndStates(wrong, "summary.json");
  ASSERT_FALSE(typed.ok());
  EXPECT_NE(typed.status().message().find("summary.json: files[0]"), std::string::npos) << typed.status().message();
  EXPECT_NE(typed.status().message().find("entered"), std::string::npos);
}

}  // namespace
}  // namespace truffld::diagnose
