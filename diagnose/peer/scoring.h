// Residual scoring: how surprising is each tested quantity given what its peers say?
//
// For every row and source with an expectation, the residual is r = log((observed + f) /
// (expected + f)) (f = PeerOptions::floor_ns keeps tiny operators from dominating). Residuals
// are modelled per (view, family, metric, source, instance-or-family row, graph or eager unit,
// and for similar steps whether the expectation was fitted) by a
// one-dimensional Gaussian mixture (K by BIC, refitted after dropping the least likely 5%): a
// component is an operating regime of that operator relative to its peers (a kernel that
// sometimes takes another algorithm, a cache that is sometimes cold), not a batch size, because
// the workload has already been divided out. A residual's one-sided p-value is the upper tail of
// the mixture restricted to its null components: the heaviest, the heavy tails centred on it,
// and common slower regimes (at least `regime_weight` of the mass), or, when larger, the tail of
// one robust Gaussian over the whole group (median, 1.4826 MAD): BIC may split a broad
// distribution into narrow parts whose tails are far thinner than the data's. Only slower counts. Groups with too few residuals use the median and
// a floored MAD instead.
// Sources are combined (Combine in scoring.cc) so that one source alone cannot raise an alarm it
// cannot justify; four hypotheses, each taken only where its sources exist:
//   q_uniform = max(p_tp, p_time)                  (every unit-level witness agrees; the one
//                                                   that exists when only one does)
//   q_partial = max(p_layers, min(p_tp, p_time))   (slower than its siblings and the more
//                                                   surprised witness)
//   q_group   = max(p_time, p_group)               (its TP peers were as slow as it, and both
//                                                   slower than steps of the same shape: needs
//                                                   both sources, an exact-shape expectation
//                                                   and a step name carrying its context)
//   q_layers  = p_layers                           (only when the unit is judged through its
//                                                   other rows: TestRow::unit_judged)
//   p = min(1, 4 * min(q_uniform, q_partial, q_group, q_layers))  (Bonferroni over the four)
// The expectation behind p is the largest among the sources the winning hypothesis needed, so
// ratios and excess are never overstated. A row with neither a tensor-parallel nor a
// similar-steps expectation is judged only through q_layers (layers alone would also flag
// legitimately different layers of a heterogeneous model), and warm-up rows never.
// Thread-safety: ScoreRows is reentrant and uses `threads` workers.
#pragma once

#include <string>
#include <vector>

#include "peer/gmm.h"
#include "read/instances.h"
#include "peer/types.h"

namespace truffld::diagnose {

struct ScoringOptions {
  double floor_ns = 500;       // same as PeerOptions::floor_ns
  double min_scale = 0.02;     // smallest residual standard deviation (log units)
  // A fitted similar-steps expectation (a log-log fit over steps of other sizes) is trusted no
  // better than `fitted_scatter_factor` times the scatter of the steps it was fitted on around
  // its line (TestRow::fit_scatter), and never worse than needed: the floor is clamped to
  // [min_scale, fitted_min_scale]. Ten neighbours estimate a scatter to about +-25%, and the
  // row's own step adds its deviation from the line, hence the factor of 2.
  double fitted_min_scale = 0.1;
  double fitted_scatter_factor = 2.0;
  double small_group_scale = 0.1;  // floor when a group is too small for a mixture
  int min_fit = 30;            // fewer residuals: median/MAD instead of a mixture
  int k_max = 3;
  double regime_weight = 0.25;  // a component this heavy (and not faster) is a normal regime
  double trim = 0.05;
  // A group's mixture (at most k_max components in one dimension) and guard are fitted on an
  // even stride of at most this many of its residuals; 1,024 gave the same verdicts as 2,048 on
  // the real traces, the engine runs and the suite's held-out split (BENCHMARKS.md).
  size_t max_fit_samples = 1024;
  int threads = 1;
};

// How one residual group was modelled (reported in stats.json).
struct ResidualModel {
  std::string view, family, metric, source, level;  // level: "instance" | "family"
  std::string regime;                               // "graph" | "eager" units
  bool fitted = false;                              // similar steps by a log-log fit
  int samples = 0, k = 0;
  std::vector<double> weights, means, sigmas;  // central components first
  int central = 0;                             // how many of them are central
  std::string method;                          // "gmm" | "median-mad"
};

// A row in a slower mode its population's null takes as a normal regime (slow_regimes.h): its
// observed cost over what the population's main mode expects, in ns.
struct RegimeRow {
  uint32_t row = 0;
  float excess_ns = 0;
};

struct ScoringResult {
  std::vector<ResidualModel> models;
  uint64_t fits = 0, fallbacks = 0;
  // Rows of similar-steps instance populations whose residual lies in a mode of the mixture at
  // least kRegimeShift slower than its heaviest mode and holding at least regime_weight of the
  // mass (past halfway between the two): a slower regime no row of which is flagged. In
  // population order.
  std::vector<RegimeRow> regime_rows;
};

// How much slower than a population's main mode a common slower mode must be to be listed in
// ScoringResult::regime_rows: log(1.25), the slowdown the generator calls a fault.
inline constexpr double kRegimeShift = 0.22314355131420976;

// Fills TestRow::p and TestRow::p_value of every row.
ScoringResult ScoreRows(const InstanceTable& t, std::vector<TestRow>& rows, const ScoringOptions& o);

// One-sided combination of the per-source p-values (see above); 1 when the row is not judged.
double CombineSources(const TestRow& row);
// Whether a row has a unit-level witness (a tensor-parallel or similar-steps expectation). A
// unit is judged when one of its rows is; its rows with only layer peers then count as well.
// Warm-up rows (warmup.h) are neither.
bool Judged(const TestRow& row);
// Whether a row counts as a test of its unit: Judged, or layer peers in a judged unit.
bool Tested(const TestRow& row);
// Residual of one source: log((observed + f) / (expected + f)).
double Residual(const TestRow& row, PeerSource s, double floor_ns);

}  // namespace truffld::diagnose
