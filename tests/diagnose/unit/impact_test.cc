// Impact of blamed families (peer/impact.h) on a hand-built tensor-parallel pair: an anomaly
// both ranks share is removed from both, a different anomaly on the late peer is not.
#include "peer/impact.h"

#include <gtest/gtest.h>

namespace truffld::diagnose {
namespace {

constexpr int64_t kUs = 1000;

// Two ranks of one TP pair, step 5, vertical view. Each rank: an input copy (host [0, 10] us,
// device from 10 us), an all-reduce launched at 12 us (each op launches at its host end), a sync that waits for it until 41 us.
// Rank 0's copy ends at 25 us, rank 1's at `peer_copy_end_us`; both enter the all-reduce as
// their copy ends; the transfer takes 10 us after the last entry.
struct Pair {
  InstanceTable t;
  std::vector<CommTiming> comm;
  std::vector<TestRow> rows;
  DecisionResult d;
  std::vector<std::vector<BlamedFamily>> blame;
  uint32_t copy = 0, other = 0;
};

void AddRank(Pair* p, int64_t rank, int64_t copy_end_us, int64_t last_entry_us) {
  StepInfo s;
  s.rank = rank;
  s.step_index = 5;
  s.start_ns = 0;
  s.end_ns = 41 * kUs;
  s.first_instance = static_cast<uint32_t>(p->t.size());
  p->t.steps.push_back(s);
  const uint32_t layer = p->t.strings.Intern("backend_op");
  const uint32_t ar = p->t.strings.Intern("nccl:all_reduce");
  const uint32_t sync = p->t.strings.Intern("cudaStreamSynchronize");
  auto add = [&](uint32_t family, int64_t a, int64_t b, int64_t ds, int64_t de, int64_t wait) {
    FeatureVector f{};
    f[kLaunchLatencyNs] = de > 0 ? static_cast<double>((ds - b) * kUs) : 0.0;  // launched at its host end
    const uint32_t i = p->t.Add(family, layer, kNoString, a * kUs, b * kUs, f);
    InstanceDetail det;
    if (de > 0) {
      det.flags = kDetailHasDevice;
      det.device_start = ds * kUs;
      det.device_end = de * kUs;
    }
    det.wait_ns = static_cast<float>(wait * kUs);
    p->t.detail.push_back(det);
    p->comm.emplace_back();
    return i;
  };
  const uint32_t copy = add(p->copy, 0, 10, 10, copy_end_us, 0);
  const uint32_t all_reduce = add(ar, 10, 12, copy_end_us, last_entry_us + 10, 0);
  add(sync, 12, 41, 0, 0, 28);
  CommTiming& c = p->comm[all_reduce];
  c.participants = 2;
  c.arrival = copy_end_us * kUs;
  c.last_arrival = last_entry_us * kUs;
  c.last_rank = copy_end_us == last_entry_us ? rank : 1 - rank;
  c.wait_ns = static_cast<float>((last_entry_us - copy_end_us) * kUs);
  p->t.steps.back().instance_count = static_cast<uint32_t>(p->t.size()) - s.first_instance;
  // The copy's device time against its TP expectation of 5 us, blamed with that excess.
  TestRow r;
  r.unit = static_cast<uint32_t>(p->t.steps.size() - 1);
  r.instance = copy;
  r.family = p->copy;
  r.metric = Metric::kDevice;
  r.observed = static_cast<float>((copy_end_us - 10) * kUs);
  r.expected[static_cast<int>(PeerSource::kTp)] = 5 * kUs;
  p->rows.push_back(r);
}

void Blame(Pair* p, uint32_t unit, uint32_t family, double excess_us) {
  BlamedFamily b;
  b.family = family;
  b.metric = Metric::kDevice;
  b.excess_ns = excess_us * kUs;
  p->blame[unit].push_back(b);
}

// Rank 0's copy 10 us too long, rank 1's `peer_excess_us` too long (it entered last at 30 us).
Pair MakePair(uint32_t peer_family_of_blame_is_copy) {
  Pair p;
  p.copy = p.t.strings.Intern("aten::copy_");
  p.other = p.t.strings.Intern("aten::index_select");
  AddRank(&p, 0, 25, 30);
  AddRank(&p, 1, 30, 30);
  p.d.units.resize(2);
  p.blame.resize(2);
  Blame(&p, 0, p.copy, 10);
  Blame(&p, 1, peer_family_of_blame_is_copy ? p.copy : p.other, 15);
  return p;
}

TEST(Impact, AnAnomalyTheLatePeerSharesIsRemovedFromBoth) {
  Pair p = MakePair(true);
  ReplayBlame(p.t, p.rows, p.comm, &p.d, &p.blame);
  // Both copies back to 5 us: the peer enters at 15 us, this rank at 15 keeping its observed
  // 15 us in the all-reduce (conservative): it ends at 30, the sync at 31.
  EXPECT_DOUBLE_EQ(p.blame[0][0].impact_ns, 10 * kUs);
  EXPECT_DOUBLE_EQ(p.blame[0][0].absorbed_ns, 0);
  EXPECT_DOUBLE_EQ(p.d.units[0].impact_ns, 10 * kUs);
  // The late rank's own saving is the same 15 us (nothing bounded it).
  EXPECT_DOUBLE_EQ(p.blame[1][0].impact_ns, 15 * kUs);
}

TEST(Impact, ADifferentAnomalyOnTheLatePeerStays) {
  Pair p = MakePair(false);
  ReplayBlame(p.t, p.rows, p.comm, &p.d, &p.blame);
  // Rank 1's blame is another family: without rank 0's slow copy it still waits for rank 1.
  EXPECT_DOUBLE_EQ(p.blame[0][0].impact_ns, 0);
  EXPECT_DOUBLE_EQ(p.blame[0][0].absorbed_ns, 10 * kUs);
  EXPECT_DOUBLE_EQ(p.d.units[0].impact_ns, 0);
}

}  // namespace
}  // namespace truffld::diagnose
