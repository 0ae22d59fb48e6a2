// Clock alignment: the linear (offset + drift) fit of clock_sync pairs, its fallbacks, and that
// Merge() places a monotonic_raw file's late events where the drifting clock says they are.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "merge_test_util.h"
#include "truffld/merge/pipeline.h"

namespace truffld::merge {
namespace {

using testing::FileFromLines;

// realtime = mono + offset + drift * mono, sampled every 60 s for an hour.
std::vector<std::pair<TimeNs, TimeNs>> Pairs(TimeNs offset, double drift, int n = 61) {
  std::vector<std::pair<TimeNs, TimeNs>> p;
  for (int i = 0; i < n; ++i) {
    TimeNs mono = 5'000'000'000LL + TimeNs(i) * 60'000'000'000LL;
    p.emplace_back(mono + offset + TimeNs(drift * double(mono)), mono);
  }
  return p;
}

TEST(ClockMap, FitsOffsetAndDriftAndMapsWithinAMicrosecond) {
  const TimeNs offset = 1'763'700'000'000'000'000LL;
  const double drift = 40e-6;  // 40 ppm: 144 ms over the hour
  std::string method;
  ClockMap m = FitClockMap(Pairs(offset, drift), &method);
  EXPECT_EQ(method, "clock_sync_linear");
  EXPECT_NEAR(m.drift * 1e6, 40.0, 0.01);
  for (TimeNs mono : {5'000'000'000LL, 1'800'000'000'000LL, 3'605'000'000'000LL}) {
    TimeNs want = mono + offset + TimeNs(drift * double(mono));
    EXPECT_NEAR(double(m.Map(mono) - want), 0.0, 1000.0) << mono;
  }
}

TEST(ClockMap, RobustToAFewBadPairs) {
  auto p = Pairs(1'000'000'000LL, -25e-6);
  p[10].first += 5'000'000'000LL;   // a realtime step (NTP jump) on two samples
  p[40].first -= 3'000'000'000LL;
  std::string method;
  ClockMap m = FitClockMap(p, &method);
  EXPECT_EQ(method, "clock_sync_linear");
  EXPECT_NEAR(m.drift * 1e6, -25.0, 0.5);
  TimeNs mono = 2'000'000'000'000LL;
  EXPECT_NEAR(double(m.Map(mono) - (mono + 1'000'000'000LL + TimeNs(-25e-6 * double(mono)))), 0.0, 20000.0);
}

TEST(ClockMap, FallsBackToTheMedianOffset) {
  std::string method;
  // One pair: constant offset.
  ClockMap one = FitClockMap({{1'000'500, 500}}, &method);
  EXPECT_EQ(method, "clock_sync_median");
  EXPECT_EQ(one.drift, 0.0);
  EXPECT_EQ(one.Map(700), 1'000'700);
  // Pairs spanning under 10 s say nothing reliable about drift.
  FitClockMap({{100, 0}, {1'000'000'200, 1'000'000'000}, {2'000'000'300, 2'000'000'000}}, &method);
  EXPECT_EQ(method, "clock_sync_median");
  // An implausible slope (10 %) is not a clock: median offset, no drift.
  ClockMap bad = FitClockMap(Pairs(0, 0.1), &method);
  EXPECT_EQ(method, "clock_sync_median");
  EXPECT_EQ(bad.drift, 0.0);
  EXPECT_EQ(FitClockMap({}, &method).offset, 0);
  EXPECT_EQ(method, "none");
}

TEST(ClockMap, HostileValuesStayDefined) {
  // Pairs whose difference overflows int64 are dropped; mapping extreme times wraps instead of
  // overflowing (the ASan/UBSan merge run and the fuzzer check there is no undefined behaviour).
  std::string method;
  const TimeNs hi = std::numeric_limits<TimeNs>::max(), lo = std::numeric_limits<TimeNs>::min();
  ClockMap m = FitClockMap({{hi, lo}, {lo, hi}, {1000, 10}}, &method);
  EXPECT_EQ(method, "clock_sync_median");
  EXPECT_EQ(m.offset, 990);
  EXPECT_EQ(FitClockMap({{hi, lo}}, &method).offset, 0);
  EXPECT_EQ(method, "none");
  ClockMap big{hi, 9e-4, lo};
  (void)big.Map(hi);
  (void)big.Map(lo);
  ClockMap plain{hi, 0, 0};
  EXPECT_EQ(plain.Map(1), lo);  // wraps
}

TEST(ClockMap, MergePlacesLateEventsOfADriftingFile) {
  // A monotonic_raw file whose CLOCK records show +50 ppm; its step one hour in must land where
  // the drifting clock puts it, not where the start-of-run offset would (180 ms apart).
  const TimeNs offset = 1'000'000'000'000LL;
  const double drift = 50e-6;
  std::string d = "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"h\",\"process_id\":7,\"rank\":0,"
                  "\"clock\":\"monotonic_raw\"}\n";
  for (auto [rt, mono] : Pairs(offset, drift))
    d += "{\"type\":\"CLOCK\",\"clock_sync\":{\"realtime_ns\":" + std::to_string(rt) + ",\"monotonic_ns\":" +
         std::to_string(mono) + "}}\n";
  const TimeNs s = 3'600'000'000'000LL;
  d += "{\"type\":\"NVTX_PUSH\",\"name\":\"step_execute_model[request_ids:a]\",\"timestamp\":" + std::to_string(s) +
       ",\"process_id\":7,\"thread_id\":1}\n{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(s + 1'000'000) +
       ",\"process_id\":7,\"thread_id\":1}\n";
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(d, "drift.jsonl"));
  auto r = Merge(std::move(files), {});
  ASSERT_TRUE(r.ok());
  const FileSummary& f = r->summary.files[0];
  EXPECT_EQ(f.clock_offset_method, "clock_sync_linear");
  EXPECT_NEAR(f.clock_drift_ppm, 50.0, 0.01);
  ASSERT_FALSE(r->trees.empty());
  const Node& root = r->node(r->trees[0].root);
  const TimeNs want = s + offset + TimeNs(drift * double(s));
  EXPECT_NEAR(double(r->Start(root) - want), 0.0, 1000.0);
  EXPECT_NEAR(double(r->End(root) - r->Start(root)), 1'000'050.0, 2.0);  // durations stretch with the drift
}

TEST(MergeCounters, ImporterProblemsReachTheTotals) {
  // Kineto and nsys importers report under prefixed keys; they must count like raw problems.
  TraceFile f = FileFromLines("{\"type\":\"NVTX_MARK\",\"name\":\"x\",\"timestamp\":1,\"process_id\":1,\"thread_id\":1}\n",
                              "k.json");
  f.stats.Report("k.json:3", Problem::kKinetoBadNumber, "ts is not a number");
  f.stats.Report("k.json:4", Problem::kKinetoNegativeDuration, "dur -5 us < 0");
  f.stats.Report("n.sqlite:CUPTI_ACTIVITY_KIND_KERNEL:9", Problem::kNsysMissingField, "no start");
  f.stats.Add(Problem::kKinetoSkippedMetadata, 40);  // skipped by design: not a problem
  std::vector<TraceFile> files;
  files.push_back(std::move(f));
  auto r = Merge(std::move(files), {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->summary.total.malformed_lines, 2u);
  EXPECT_EQ(r->summary.total.negative_durations, 1u);
}

}  // namespace
}  // namespace truffld::merge
