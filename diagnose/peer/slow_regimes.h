// Slower regimes: a cost that a quarter or more of its similar steps share, reported once.
//
// Scoring takes a slower mode holding at least ScoringOptions::regime_weight of a residual
// population as a normal regime of the run (healthy runs have such modes: a cache that is
// sometimes cold, steps that do extra work the workload tags do not show), so none of its steps
// is flagged for it. When the same cost is a fault that touches many steps (a scheduler delay
// before a third of the steps, an input copy that stalls in every other one), nothing would say
// so. ScoreRows lists the rows in such a mode (ScoringResult::regime_rows, similar-steps instance
// populations only, a mode at least 25% slower than the population's main one); this pass
// reports, per lane (rank and view) and family of the time no operator range covers
// (outside_time.h: host gaps, the time between steps, calls under the step, device idle), the
// units where the regime cost at least `min_share` of their step: how many, how much (typical
// and range), its share of those steps and what it summed to over the run. What a step paid is
// its excess, or less where the step's cycle (its duration and the time before it) was not that
// much longer than its similar steps' median (StepCycles): a host gap that a busy device queue
// absorbed costs nothing. It changes no verdict. Operators' own slower modes stay unreported: on healthy synthetic runs they are a
// kernel's second algorithm (+30 us, 1.1-1.3% of a step, in 3 to 56 of 150 steps), which is
// how those runs behave.
// Pure; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "peer/decision.h"
#include "peer/peers.h"
#include "peer/scoring.h"
#include "peer/types.h"
#include "read/instances.h"

namespace truffld::diagnose {

struct SlowRegimeOptions {
  int min_units = 3;         // a regime needs at least this many units in a lane, and ...
  double min_lane_share = 0.1;  // ... at least this share of the lane's judged units, ...
  double min_share = 0.01;   // ... whose regime excess is at least this share of their step.
  // A handful of steps is not how the run behaves: in the default suite's seed-3 workload a
  // (device idle) mode cost 15-20% of 5-8% of each rank's steps where the generator put no fault.
  size_t max_per_lane = 3;   // the costliest regimes of a lane (summed excess) are reported
};

// One family's slower regime in one lane. Times in ns.
struct SlowRegime {
  View view = View::kVertical;
  int64_t rank = -1;           // -1: the process had no rank
  uint32_t family = 0;
  Metric metric = Metric::kHost;
  int judged = 0;              // judged units of the lane
  double typical_excess_ns = 0, min_excess_ns = 0, max_excess_ns = 0;  // per unit, over the main mode
  double typical_share = 0;    // median paid / step duration over its units
  double total_ns = 0;         // summed paid over the run
  double absorbed_ns = 0;      // summed excess its steps did not pay
  std::vector<int64_t> steps;  // the step index of each of its units, ascending
  std::string sentence;        // the finding in one sentence with numbers
  // Units in the regime at or past min_share of their step.
  int units() const { return static_cast<int>(steps.size()); }
};

// ScoreRows' part, for one similar-steps instance population modelled by `m` (its rows `list`,
// their residuals `r`): the rows in a common slower mode (ScoringResult::regime_rows), with
// their cost over the main mode's expectation, in ns. None when the mixture has no such mode.
std::vector<RegimeRow> SlowerRegimeRows(const ResidualModel& m, const ScoringOptions& o, const std::vector<uint32_t>& list,
                                        const std::vector<double>& r, const std::vector<TestRow>& rows);

// `rows` and `scoring` from ScoreRows; `d` from JudgeUnits (which units were judged); `cycles`
// from BuildTests (nullptr, or a unit without similar steps: the excess counts as paid).
std::vector<SlowRegime> FindSlowRegimes(const InstanceTable& t, const std::vector<TestRow>& rows,
                                        const ScoringResult& scoring, const DecisionResult& d,
                                        const SlowRegimeOptions& o, const StepCycles* cycles = nullptr);

}  // namespace truffld::diagnose
