// Where a unit's verdict is made, once: JudgeUnits runs the three rules in order and nothing
// after it changes a verdict (Stage II and fusion read UnitVerdict::verdict).
//   1. Statistics (DecideUnits, decision.h): each unit's p-value (Bonferroni over its judged
//      rows, with the lone-instance and witness rules) against the run's Benjamini-Hochberg
//      threshold at the stated false-alarm rate, judged against the run's own null when its
//      units are inflated; a unit with no judged row is insufficient_evidence.
//   2. Blame (BlameUnits, blame.h): the operators that explain each abnormal unit, once each,
//      with the time they cost against their peers.
//   3. Impact floor: an abnormal unit whose blamed operators together explain less than
//      DecisionOptions::min_impact_share of its step is labelled normal; its UnitVerdict keeps
//      what they would have explained (immaterial_*), its blame is cleared, and the view's
//      count moves from `flagged` to `immaterial`.
// Pure; thread-safety: reentrant.
#pragma once

#include <vector>

#include "peer/blame.h"
#include "peer/decision.h"
#include "peer/types.h"
#include "read/instances.h"

namespace truffld::diagnose {

struct Judgement {
  DecisionResult decision;                        // verdicts per unit, thresholds per view
  std::vector<std::vector<BlamedFamily>> blame;   // per unit; empty unless abnormal
};

// `rows` must be scored (TestRow::p_value set).
Judgement JudgeUnits(const InstanceTable& t, const std::vector<TestRow>& rows, const DecisionOptions& decision,
                     const BlameOptions& blame);

}  // namespace truffld::diagnose
