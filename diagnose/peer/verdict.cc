// The one owner of a unit's verdict (verdict.h).
#include "peer/verdict.h"

namespace truffld::diagnose {
namespace {

// Labels normal every abnormal unit whose blamed families together explain less than
// `min_impact_share` of its duration (none blamed counts as nothing explained), records what
// they would have explained in its UnitVerdict, moves it from `flagged` to `immaterial`, and
// clears its blame.
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
    if (total >= min_impact_share * static_cast<double>(st.end_ns - st.start_ns)) continue;
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

}  // namespace

Judgement JudgeUnits(const InstanceTable& t, const std::vector<TestRow>& rows, const DecisionOptions& decision,
                     const BlameOptions& blame) {
  Judgement j;
  j.decision = DecideUnits(t, rows, decision);
  j.blame = BlameUnits(t, rows, j.decision, blame);
  ApplyImpactFloor(t, decision.min_impact_share, &j.decision, &j.blame);
  return j;
}

}  // namespace truffld::diagnose
