// Residual scoring: how surprising is each tested quantity given what its peers say?
//
// For every row and source with an expectation, the residual is r = log((observed + f) /
// (expected + f)) (f = PeerOptions::floor_ns keeps tiny operators from dominating). Residuals
// are modelled per (view, operator kind, family, metric, source, instance-or-family row) by a
// one-dimensional Gaussian mixture (K by BIC, refitted after dropping the least likely 5%): a
// component is an operating regime of that operator relative to its peers (a kernel that
// sometimes takes another algorithm, a cache that is sometimes cold), not a batch size, because
// the workload has already been divided out. A residual's one-sided p-value is the normal upper
// tail under the most lenient central component (components holding `central_mass` of the
// weight): only slower-than-expected counts. Groups with too few residuals use the median and
// a floored MAD instead.
// Sources are combined so that one source alone cannot raise an alarm it cannot justify:
//   q_uniform = max(p_tp, p_time)                  (both agree when both exist)
//   q_partial = max(p_layers, min(p_tp, p_time))   (slower than its siblings and one witness)
//   p = min(1, 2 * min(q_uniform, q_partial))      (two hypotheses, Bonferroni)
// A row with neither a tensor-parallel nor a similar-steps expectation is not judged (layers
// alone would also flag legitimately different layers of a heterogeneous model).
// Thread-safety: ScoreRows is reentrant and uses `threads` workers.
#pragma once

#include <string>
#include <vector>

#include "truffld/diagnose/gmm.h"
#include "truffld/diagnose/instances.h"
#include "truffld/diagnose/peer_types.h"

namespace truffld::diagnose {

struct ScoringOptions {
  double floor_ns = 500;       // same as PeerOptions::floor_ns
  double min_scale = 0.02;     // smallest residual standard deviation (log units)
  double small_group_scale = 0.1;  // floor when a group is too small for a mixture
  int min_fit = 30;            // fewer residuals: median/MAD instead of a mixture
  int k_max = 3;
  double central_mass = 0.8;
  double trim = 0.05;
  size_t max_fit_samples = 4096;
  int threads = 1;
};

// How one residual group was modelled (reported in stats.json).
struct ResidualModel {
  std::string view, family, metric, source, level;  // level: "instance" | "family"
  int samples = 0, k = 0;
  std::vector<double> weights, means, sigmas;  // central components first
  int central = 0;                             // how many of them are central
  std::string method;                          // "gmm" | "median-mad"
};

struct ScoringResult {
  std::vector<ResidualModel> models;
  uint64_t fits = 0, fallbacks = 0;
};

// Fills TestRow::p and TestRow::p_value of every row.
ScoringResult ScoreRows(const InstanceTable& t, std::vector<TestRow>& rows, const ScoringOptions& o);

// One-sided combination of the per-source p-values (see above); 1 when the row is not judged.
double CombineSources(const TestRow& row);
// Whether a row can be judged (a tensor-parallel or similar-steps expectation exists).
bool Judged(const TestRow& row);
// Residual of one source: log((observed + f) / (expected + f)).
double Residual(const TestRow& row, Source s, double floor_ns);

}  // namespace truffld::diagnose
