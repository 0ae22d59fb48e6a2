// Fusion of Stage I and Stage II into the final per-step diagnosis.
//
// A step is abnormal iff some Stage I candidate is also in Stage II's faulty set; the faulty
// operators are exactly that intersection. Each faulty operator carries its scores and its
// parent chain (family -> parent -> ... as seen in the step) so the report can show where in
// the call chain it sits.
// Thread-safety: pure functions over caller-owned data.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "stage2/evidence.h"

namespace truffld::diagnose {

struct FaultyOperator {
  std::string family, layer, method;
  double score = 0, probability = 1;
  int instances = 0;
  std::vector<std::string> parent_chain;  // nearest parent first
  std::optional<PeerCost> cost;           // peer detector: what it cost against its peers
  double ExcessNs() const { return cost ? cost->excess_ns : 0.0; }
};

struct StepDiagnosis {
  StepEvidence evidence;
  StageTwoDecision decision;
  double threshold = 0;  // the detector's threshold for this unit (peer: the run's BH p-value cut)
  bool abnormal = false;
  // abnormal iff `faulty` is non-empty; insufficient_evidence when the peer detector had no
  // peers to judge the unit with; else normal.
  Verdict label = Verdict::kNormal;
  std::vector<FaultyOperator> faulty;  // highest score first (peer mode: highest excess first)
};

// Parent chain of `family` inside the step (stops at the root, a cycle, or 16 levels).
std::vector<std::string> ParentChain(const StepEvidence& step, const std::string& family);

// candidates(evidence) intersected with decision.faulty.
StepDiagnosis Fuse(StepEvidence evidence, StageTwoDecision decision, double threshold);

}  // namespace truffld::diagnose
