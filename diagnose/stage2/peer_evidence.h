// The peer detector's result as Stage II input: one StepEvidence per unit with its verdict, the blamed families (candidates, highest excess first) with their costs, and one
// sentence of evidence per unit and per blamed family that a person can check, e.g.
//   "aten::mm on rank 2, step 41: device time 412 us vs 133 us expected (+279 us, 8.1% of the
//    step); 3.10x its 3 TP peers, 2.90x 10 similar steps, 1.02x its 35 layers; host time normal"
// Thread-safety: reentrant.
#pragma once

#include <string>
#include <vector>

#include "peer/format_ns.h"  // FormatNs, used with the evidence
#include "peer/stage.h"
#include "stage2/evidence.h"

namespace truffld::diagnose {

// Per instance: the smallest p-value of its tested rows (1 when untested); what
// --export-features writes as "rho" in the peer mode.
std::vector<double> InstancePValues(const InstanceTable& t, const PeerStageResult& r);

// One StepEvidence per unit of `t`: DescribeUnit, each family's smallest row p-value as its
// probability, the blamed families first (highest excess) with their costs, and the verdict.
std::vector<StepEvidence> BuildPeerEvidence(const InstanceTable& t, const PeerStageResult& r);

}  // namespace truffld::diagnose
