// The one owner of a unit's verdict (verdict.h).
#include "peer/verdict.h"

#include <cmath>
#include <string>

#include "peer/format_ns.h"

namespace truffld::diagnose {
namespace {

// Labels normal every abnormal unit whose blame saves less than `min_impact_share` of its
// duration (its replayed impact, else its blamed families' summed excess; none blamed counts as
// nothing), records what was blamed in its UnitVerdict, moves it from `flagged` to
// `immaterial`, and clears its blame.
void ApplyImpactFloor(const InstanceTable& t, double min_impact_share, DecisionResult* d,
                      std::vector<std::vector<BlamedFamily>>* blame) {
  if (min_impact_share <= 0) return;
  for (uint32_t u = 0; u < t.steps.size() && u < d->units.size(); ++u) {
    UnitVerdict& v = d->units[u];
    if (v.verdict != Verdict::kAbnormal) continue;
    const StepInfo& st = t.steps[u];
    const auto& blamed = (*blame)[u];
    double total = 0;
    for (const BlamedFamily& b : blamed) total += b.excess_ns;
    const double impact = std::isnan(v.impact_ns) ? total : v.impact_ns;
    if (impact >= min_impact_share * static_cast<double>(st.end_ns - st.start_ns)) continue;
    const int view = ViewIndex(st.view);
    v.verdict = Verdict::kNormal;
    v.immaterial = true;
    v.immaterial_excess_ns = total;
    v.immaterial_family = blamed.empty() ? kNoString : blamed.front().family;
    v.immaterial_families = static_cast<int>(blamed.size());
    --d->views[view].flagged;
    ++d->views[view].immaterial;
    (*blame)[u].clear();
  }
}

// A collective's device time on a rank whose other participants are not in the trace is its
// transfer plus its wait for them, which nothing here separates: blaming it would guess. Such
// blame is set aside; a unit left with none is insufficient_evidence, saying why.
void SetAsideUnseenPeers(const InstanceTable& t, const std::vector<CommTiming>& comm, DecisionResult* d,
                         std::vector<std::vector<BlamedFamily>>* blame) {
  if (comm.size() != t.size()) return;
  for (uint32_t u = 0; u < t.steps.size() && u < d->units.size(); ++u) {
    auto& blamed = (*blame)[u];
    if (d->units[u].verdict != Verdict::kAbnormal || blamed.empty()) continue;
    const StepInfo& st = t.steps[u];
    std::string unseen;
    double unseen_ns = 0;
    for (size_t k = blamed.size(); k-- > 0;) {
      const BlamedFamily& b = blamed[k];
      if (b.metric != Metric::kDevice) continue;
      bool alone = false, matched = false;
      double world = 0;
      for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) {
        if (t.family[i] != b.family || comm[i].participants == 0) continue;
        alone = alone || comm[i].participants == 1;
        matched = matched || comm[i].participants > 1;
        world = std::max(world, t.features[i][kWorldSize]);
      }
      if (!alone || matched || world == 1) continue;
      unseen = t.strings.Get(b.family) + (world > 1 ? " (" + std::to_string(static_cast<int64_t>(world)) + " ranks)" : "");
      unseen_ns += b.excess_ns;
      blamed.erase(blamed.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (!blamed.empty() || unseen.empty()) continue;
    UnitVerdict& v = d->units[u];
    v.verdict = Verdict::kInsufficient;
    v.reason = "the collective " + unseen + " took +" + FormatNs(unseen_ns) +
               " longer than its peers, but the other ranks of its communicator are not in the trace: its "
               "time may be spent waiting for them (merge every rank's trace to judge it)";
    --d->views[ViewIndex(st.view)].flagged;
    ++d->views[ViewIndex(st.view)].insufficient;
  }
}

}  // namespace

Judgement JudgeUnits(const InstanceTable& t, const std::vector<TestRow>& rows, const std::vector<CommTiming>& comm,
                     const DecisionOptions& decision, const BlameOptions& blame, const RunPatternOptions& patterns,
                     const StepCycles* cycles) {
  Judgement j;
  j.decision = DecideUnits(t, rows, decision, cycles);
  j.blame = BlameUnits(t, rows, j.decision, blame);
  SetAsideUnseenPeers(t, comm, &j.decision, &j.blame);
  ReplayBlame(t, rows, comm, &j.decision, &j.blame, IdleCauseCandidates(t, rows, j.decision, j.blame));
  j.findings = FindRunPatterns(t, patterns, &j.decision, &j.blame);
  ApplyImpactFloor(t, decision.min_impact_share, &j.decision, &j.blame);
  return j;
}

}  // namespace truffld::diagnose
