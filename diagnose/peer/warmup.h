// Warm-up: the host cost of loading GPU code, reported apart from faults.
//
// The first use of a kernel makes its operator load code into the CUDA context: lazy module
// loading (the default since CUDA 12), a kernel generated and compiled at run time (cuDNN's
// runtime-fused attention, NVRTC, Triton), a GEMM configuration's library. On a real serving
// engine that costs from tens of microseconds to hundreds of milliseconds, once per new shape,
// and it is the largest source of "impossible" host times in healthy runs. It is warm-up, not a
// fault: judging it cries wolf on every new shape, and fitting it widens the null that real
// faults are judged against.
// So the host rows of an instance whose own calls loaded code (kDetailLoadsCode), and the host
// family-sum row of its family in that unit, are marked `warmup`: scoring leaves them out of
// the residual models and decisions leave them out of the tests. WarmupCosts says per unit what
// those instances cost against their peers' expectation, for the evidence ("first use of GPU
// code: ..."). Times in ns. Pure; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <vector>

#include "read/instances.h"
#include "peer/types.h"

namespace truffld::diagnose {

struct WarmupCost {
  uint32_t family = kNoString;
  int instances = 0;         // its instances in the unit that loaded code
  double observed_ns = 0;    // their own host time
  double expected_ns = 0;    // what peers say it should have been (observed when none had peers)
  double excess_ns = 0;      // observed - expected, at least 0
  double share = 0;          // excess / unit duration
};

// Per view [vertical, horizontal]: units with a code load, those whose warm-up cost reached
// `min_impact_share` of the step, and the summed excess (ns).
struct WarmupTally {
  int units[2] = {0, 0}, material[2] = {0, 0};
  double excess_ns[2] = {0, 0};
};

// Sets TestRow::warmup on the rows described above. Call before scoring.
void MarkWarmupRows(const InstanceTable& t, std::vector<TestRow>& rows);

// Per unit, the families whose instances loaded code, highest excess first (empty for most).
std::vector<std::vector<WarmupCost>> WarmupCosts(const InstanceTable& t, const std::vector<TestRow>& rows);

WarmupTally TallyWarmup(const InstanceTable& t, const std::vector<std::vector<WarmupCost>>& warmup,
                        double min_impact_share);

}  // namespace truffld::diagnose
