// DescribeUnit: the part of a unit's evidence every detector shares (evidence.h): identity,
// workload, backend context, and each operator family present with its layer, most frequent
// parent, summed duration and the kernels and API calls it launched most. Scores, candidates
// and verdicts are the detector's to add.
// Pure; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <vector>

#include "read/instances.h"
#include "stage2/evidence.h"

namespace truffld::diagnose {

// The unit's families (interned ids) in order of first appearance among its instances.
std::vector<uint32_t> FamiliesInOrder(const InstanceTable& t, uint32_t unit);

// Unit `unit` of `t` with one FamilyEvidence per entry of `families` (interned ids, in that
// order; each should occur in the unit), described but not scored.
StepEvidence DescribeUnit(const InstanceTable& t, uint32_t unit, const std::vector<uint32_t>& families);

}  // namespace truffld::diagnose
