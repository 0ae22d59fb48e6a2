// The peer-relative Stage I as Stage II input: one StepEvidence per unit with the calibrated
// verdict, the blamed families (candidates, highest excess first) with their costs, and one
// sentence of evidence per unit and per blamed family that a person can check, e.g.
//   "aten::mm on rank 2, step 41: device time 412 us vs 133 us expected (+279 us, 8.1% of the
//    step); 3.10x its 3 TP peers, 2.90x 10 similar steps, 1.02x its 35 layers; host time normal"
// Thread-safety: reentrant.
#pragma once

#include <string>
#include <vector>

#include "truffld/diagnose/peer_stage.h"
#include "truffld/diagnose/stage1.h"
#include "truffld/diagnose/stage2_types.h"

namespace truffld::diagnose {

// Family scores in Stage I's shape (probability = smallest combined p-value of the family's
// rows, candidates = blamed families), so the shared context builder can describe each family.
StageOneResult PeerScores(const InstanceTable& t, const PeerStageResult& r);

// BuildEvidence(t, PeerScores(...)) plus the calibrated verdict, costs and sentences.
std::vector<StepEvidence> BuildPeerEvidence(const InstanceTable& t, const PeerStageResult& r);

// "412 us", "1.20 ms", "3.1 s" (3 significant digits; "us" for microseconds).
std::string FormatNs(double ns);

}  // namespace truffld::diagnose
