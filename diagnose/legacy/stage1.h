// Stage I: Gaussian-mixture confidences per operator instance, aggregated per step and family.
//
// For every operator family (per view) the instances' features are log1p-transformed and
// robustly standardised, a mixture is fitted by EM with K chosen by BIC, and each instance gets
// a confidence rho(x) that it is normal: the responsibility mass of the central components.
// Responsibilities alone are relative (a point far from every component still "belongs" to
// the nearest one), so by default (RhoRule::kCalibrated) the central responsibility mass is
// multiplied by the chi-square tail of the Mahalanobis distance to the nearest central
// component, unscaled, so far-out points fall below 1e-6. `--rho gated` divides the tails by
// tail_alpha (capped at 1); `--rho paper` uses responsibilities only. Fitting data:
//   within-step: one mixture per (step, view, family), as in the design paper;
//   pooled:      one mixture per (view, family) over all steps, fitted after trimming the
//                least likely `trim` fraction and refitting (sees uniformly slow steps);
//   reference:   one mixture per (view, family) fitted on a healthy reference run.
// Groups with fewer than `min_instances` fitting samples use robust z-scores instead.
// Per step and family, rho-bar = mean of the lowest floor(q*m) rho values (at least one) and
// A = 1 - rho-bar; families with A >= median + lambda*MAD of the step's A (and >= min_score)
// become candidates, at most top_m of them.
// Thread-safety: RunStageOne is reentrant; it uses `threads` worker threads internally.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "peer/gmm.h"
#include "read/instances.h"
#include "stage2/evidence.h"
#include "truffld/status.h"

namespace truffld::diagnose {

enum class ScoringMode { kWithinStep, kPooled, kReference, kPeer };
// "within-step", "pooled", "reference", "peer" (the peer-relative detector, stage.h)
const char* ScoringModeName(ScoringMode m) noexcept;
// kCalibrated: rho = (sum of central responsibilities) x (chi-square tail of the Mahalanobis
// distance to the nearest central component) x (normal tail of columns that were constant in
// the fitting data). No rescaling, so a far-out instance reaches the 1e-6 "strong" bound.
// kGated: the same tails divided by tail_alpha and capped at 1 (rho stays 1 for plausible
// points, but rarely falls below ~1e-3 * p). kPaper: responsibilities only.
enum class RhoRule { kGated, kPaper, kCalibrated };

struct StageOneOptions {
  ScoringMode mode = ScoringMode::kPooled;
  int k_min = 1, k_max = 4;
  double central_mass = 0.8;
  bool top1 = false;               // central set = the single heaviest component
  RhoRule rho = RhoRule::kCalibrated;  // the CLI default too (--rho calibrated)
  double tail_alpha = 1e-3;        // gate: chi-square tail below this lowers rho
  double q = 0.25;
  double lambda = 1.0;
  int top_m = 8;
  double min_score = 0.1;          // A below this is never a candidate (MAD can be 0)
  int min_instances = 8;           // fewer fitting samples -> robust z-scores
  double trim = 0.05;              // pooled mode: fraction dropped before the refit
  size_t max_fit_samples = 4096;   // pooled/reference: deterministic subsample for fitting
  double min_scale = 0.05;         // robust scale floor, log1p units
  GmmOptions gmm;                  // covariance is used as given when auto_covariance is off
  bool auto_covariance = true;     // full with >= 10 samples per covariance entry, else diagonal
  // Populations: optionally split each (view, family) by rank and/or by regime (CUDA-graph
  // replay steps, i.e. decode, vs eager steps, i.e. prefill in vLLM's default mode). The regime
  // split is on by default: pooled, the few prefill instances of a family that decode dominates
  // are outliers in every prefill step (diagnose/README.md, "Regimes and replayed operators").
  bool split_rank = false;
  bool split_regime = true;
  // Horizontal view: graph-replayed collectives (rebuilt from captured_in, no payload) and
  // eager ones differ in shape, so they are modelled apart unless this is turned off.
  bool split_regime_horizontal = true;
  // Instances rebuilt from CUDA-graph replays (IsGraphReplayInstance) form their own population,
  // apart from traced host ranges of the same family (e.g. a replayed aten::mm vs the eager
  // LM-head aten::mm of the same decode step).
  bool split_graph_replay = true;
  int threads = 1;
};

// Scores of one family in one step.
struct FamilyScore {
  uint32_t family = kNoString;
  int instances = 0;
  double rho_bar = 1.0, score = 0.0, min_rho = 1.0;
  std::string method;  // "gmm", "gmm-pooled", "gmm-reference", "robust-z"
  bool candidate = false;
  int strong_instances = 0;  // instances with rho < 1e-6
  int weak_instances = 0;    // instances with rho < 0.5 (strong ones included)
};

struct StepScore {
  uint32_t step = 0;
  double threshold = 0.0;
  std::vector<FamilyScore> families;  // highest score first
};

// How one (view, family) was modelled (pooled/reference modes; one entry per group).
struct FamilyModelInfo {
  std::string family, view, method, covariance;
  int fit_samples = 0, k = 0, dims = 0;
  std::vector<double> bics;
};

struct StageOneResult {
  std::vector<double> rho;  // per instance of the target table
  std::vector<StepScore> steps;
  std::vector<FamilyModelInfo> models;
  uint64_t gmm_fits = 0, robust_z_groups = 0, fit_failures = 0, missing_in_reference = 0;
  std::vector<std::string> notes;  // fit failures and fallbacks, for the user
};

// `reference` is required in kReference mode and ignored otherwise.
Result<StageOneResult> RunStageOne(const InstanceTable& target, const InstanceTable* reference,
                                   const StageOneOptions& options);

// Aggregation and selection over already computed per-instance rho (used by RunStageOne;
// `method` gives each instance's method name).
std::vector<StepScore> SelectCandidates(const InstanceTable& t, const std::vector<double>& rho,
                                        const std::vector<uint8_t>& method,
                                        const std::vector<std::string>& method_names,
                                        const StageOneOptions& options);

// True when instance i was rebuilt from a CUDA-graph replay (captured_in) rather than read
// from a traced operator range: no runtime/driver calls of its own, a graph launch as API name.
bool IsGraphReplayInstance(const InstanceTable& t, uint32_t i);

// rho-bar of one family in one step: mean of the lowest max(1, floor(q*m)) values.
double RhoBar(std::vector<double> rho, double q);

// The Stage II input: one StepEvidence per step, families sorted by score.
std::vector<StepEvidence> BuildEvidence(const InstanceTable& t, const StageOneResult& r);

}  // namespace truffld::diagnose
