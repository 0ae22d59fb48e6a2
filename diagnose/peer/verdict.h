// Where a unit's verdict is made, once: JudgeUnits runs the three rules in order and nothing
// after it changes a verdict (Stage II and fusion read UnitVerdict::verdict).
//   1. Statistics (DecideUnits, decision.h): each unit's p-value (Bonferroni over its judged
//      rows, with the lone-instance and witness rules) against the run's Benjamini-Hochberg
//      threshold at the stated false-alarm rate, judged against the run's own null when its
//      units are inflated; a unit with no judged row is insufficient_evidence.
//   2. Blame (BlameUnits, blame.h): the operators that explain each abnormal unit, once each,
//      with the time they cost against their peers.
//   2b. Unseen peers: device time of a collective whose other participants are not in the trace
//      (transfer and wait cannot be told apart) is not blamed; a unit left with no blame is
//      insufficient_evidence, saying so.
//   3. Impact (ReplayBlame, impact.h): the what-if replay of each abnormal unit's step gives
//      every blamed family, and the unit, the step time saved without the excess.
//   4. Run patterns (FindRunPatterns, run_patterns.h): host stalls in most steps of a lane are
//      one run finding; its ordinary members are labelled normal and name it.
//   5. Impact floor: an abnormal unit whose blame together saves less than
//      DecisionOptions::min_impact_share of its step (the replayed impact; the summed excess
//      where nothing could be replayed) is labelled normal; its UnitVerdict keeps what was
//      blamed (immaterial_*, impact_ns, absorbed_ns), its blame is cleared, and the view's count
//      moves from `flagged` to `immaterial`.
// Pure; thread-safety: reentrant.
#pragma once

#include <vector>

#include "peer/blame.h"
#include "peer/decision.h"
#include "peer/impact.h"
#include "peer/run_patterns.h"
#include "peer/types.h"
#include "read/instances.h"

namespace truffld::diagnose {

struct Judgement {
  DecisionResult decision;                        // verdicts per unit, thresholds per view
  std::vector<std::vector<BlamedFamily>> blame;   // per unit; empty unless abnormal
  std::vector<RunFinding> findings;               // run patterns, reported once
};

// `rows` must be scored (TestRow::p_value set); `comm` is MatchCollectives' (may be empty);
// `cycles` as DecideUnits takes it.
Judgement JudgeUnits(const InstanceTable& t, const std::vector<TestRow>& rows, const std::vector<CommTiming>& comm,
                     const DecisionOptions& decision, const BlameOptions& blame, const RunPatternOptions& patterns,
                     const StepCycles* cycles = nullptr);

}  // namespace truffld::diagnose
