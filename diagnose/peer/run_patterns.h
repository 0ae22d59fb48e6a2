// Run findings: a cost pattern most steps of a lane share is how the run behaves, not a fault of
// each step.
//
// Real training and serving runs often stall the host in some operator in nearly every step
// (garbage collection, autograd hooks, allocator growth): each stall is beyond its peers in
// other steps, so each step would be flagged, though nothing distinguishes one step from the
// next. Per lane (rank and view), when at least `min_share` of the judged units (and at least
// `min_units`) are abnormal with only host time blamed, the pattern is reported once as a
// RunFinding; a member stays abnormal only when its blamed excess is over `factor` times the
// pattern's typical (median) excess: when it differs from the run's own other steps. Members
// labelled normal name the finding (UnitVerdict::run_finding); the view's count moves from
// `flagged` to `run_pattern`.
// Pure; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "peer/blame.h"
#include "peer/decision.h"
#include "read/instances.h"

namespace truffld::diagnose {

struct RunPatternOptions {
  int min_units = 3;        // a pattern needs at least this many units ...
  double min_share = 0.5;   // ... and this share of the lane's judged units
  double factor = 2.0;      // a member beyond factor x the typical excess stays abnormal
};

// One pattern of one lane. Times in ns.
struct RunFinding {
  View view = View::kVertical;
  int64_t rank = -1;                 // -1: the process had no rank
  Metric metric = Metric::kHost;
  int units = 0;                     // units showing it
  int judged = 0;                    // judged units of the lane
  int demoted = 0;                   // members labelled normal as part of it
  double typical_excess_ns = 0;      // median over its units
  double min_excess_ns = 0, max_excess_ns = 0;
  double min_share = 0, max_share = 0;      // impact (else excess) / step duration over its units
  double impact_ns = 0;              // summed step time it cost (replayed; excess where not replayed)
  double absorbed_ns = 0;            // summed excess the steps never paid (the device queue absorbed it)
  std::vector<uint32_t> families;    // the families with the most excess, at most 3
  std::string sentence;              // the finding in one sentence with numbers
};

// Finds the patterns, labels their ordinary members normal and returns the findings in lane
// order. Call after ReplayBlame and before the impact floor.
std::vector<RunFinding> FindRunPatterns(const InstanceTable& t, const RunPatternOptions& o, DecisionResult* d,
                                        std::vector<std::vector<BlamedFamily>>* blame);

}  // namespace truffld::diagnose
