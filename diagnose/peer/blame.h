// Blame: which operators caused an abnormal unit, once each, with the time they cost.
//
// Among a unit's significant rows (p-value times the unit's number of judged rows at or below
// the run's Benjamini-Hochberg threshold), the cause is the deepest operator that explains the
// excess. Costs are already "own" costs (an operator's host time excludes its child operators'
// ranges and time blocked on the device; its device time counts only work its own calls
// launched), so a wrapper around a slow operator rarely shows any excess; when it does and a
// descendant explains at least half of it, the wrapper is dropped. The expected cost comes from
// tensor-parallel peers when they exist (same step, same work), else from similar steps, else
// from the unit's own layers. Excess = observed - expected, summed over a family's significant
// instances, or its family row's excess when larger; host and device excess of one family are
// not added (a blocking copy's host time contains its device time): the larger one is kept.
// Pure; thread-safety: reentrant.
#pragma once

#include <array>
#include <limits>
#include <string>
#include <vector>

#include "read/instances.h"
#include "peer/decision.h"
#include "peer/types.h"

namespace truffld::diagnose {

struct BlamedFamily {
  uint32_t family = kNoString;
  uint32_t layer = kNoString;
  Metric metric = Metric::kHost;       // the cost that was excessive
  double observed_ns = 0, expected_ns = 0, excess_ns = 0;
  double share = 0;                    // excess / unit duration
  double p_value = 1;                  // smallest combined p-value of its rows
  int instances = 0;                   // of the family in the unit
  int significant = 0;                 // significant instance rows (0: only the family sum)
  PeerSource basis = PeerSource::kTp;          // which peers the expectation came from
  std::array<double, kPeerSourceCount> ratio{};     // observed / expected per source (0: none)
  std::array<int, kPeerSourceCount> peers{};
  bool other_metric_normal = true;     // the family's other cost had no significant row
  // Step time saved without its excess (what-if replay, impact.h); NaN when not replayed.
  double impact_ns = std::numeric_limits<double>::quiet_NaN();
  double absorbed_ns = 0;              // excess - impact: what the step never paid
  // (device idle) only: the host family whose late launches it waited for (impact.h), whose
  // cost it is; kNoString when it is a cost of its own.
  uint32_t effect_of = kNoString;
};

struct BlameOptions {
  int top_m = 0;                // at most this many families per unit (0: every one)
  double min_relative = 0.0;    // drop families under this fraction of the top excess
};

// Per unit (empty for units that are not abnormal), highest excess first.
std::vector<std::vector<BlamedFamily>> BlameUnits(const InstanceTable& t, const std::vector<TestRow>& rows,
                                                  const DecisionResult& d, const BlameOptions& o);

// Per unit whose blame holds (device idle): the unit's other host costs above their peers that
// pass Bonferroni within the unit at the run's level (row p-value x the unit's tests <= alpha)
// without passing the run-wide cut, blamed the same way (BlameUnits); empty elsewhere. The
// idle's significance already flagged the unit; these are what its late launches may have
// waited for (impact.h keeps the one the replay says explains the idle). Its metric alone,
// since the idle is host-caused or not a host cost at all.
std::vector<std::vector<BlamedFamily>> IdleCauseCandidates(const InstanceTable& t, const std::vector<TestRow>& rows,
                                                           const DecisionResult& d,
                                                           const std::vector<std::vector<BlamedFamily>>& blame);

// The expectation a row's excess is measured against: the scored effective expectation (the
// largest among the sources behind its p-value), else tensor-parallel peers, else similar
// steps, else layers; NaN when the row has none.
double BestExpected(const TestRow& row, PeerSource* basis);

}  // namespace truffld::diagnose
