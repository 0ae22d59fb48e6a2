// Step verdicts at a stated false-alarm rate.
//
// A unit's p-value is the smallest p-value of its judged rows times their number (Bonferroni:
// the chance that a healthy unit has any row that surprising). Verdicts are then taken per view
// with the Benjamini-Hochberg procedure at level `alpha` over all judged units of the run: on a
// healthy run (every null true) the chance of any alarm is at most alpha, so the expected share
// of healthy units flagged stays below alpha; with real faults present the procedure admits
// more units while keeping the expected share of false alarms among the flagged below alpha.
// Evidence must be strong or repeated: natural noise makes a single kernel or range run 15-40%
// long now and then, while a fault slows a family's instances together (a family in a step, a
// kind of work for a while). So a unit's p-value takes, over its families, the smallest of: the
// family-sum row's p-value (a pseudo-instance of the time no operator range covers is a sum of
// its kind of time in the step, read/outside_time.h, and counts as one); the second-smallest p-value of the family's instance rows (two
// instances must both be surprising); for device work, the second-smallest p-value of the other
// device rows starting near it (contention slows a window's kernels of every family together);
// and an instance row's own p-value only when it is at least `single_ratio` times its expectation.
// A unit with no judged row (no tensor-parallel peer and no step of similar workload on its
// rank) is `insufficient_evidence`, with the reason, never abnormal.
// The run's own null (Efron's empirical null): the per-row p-values assume residual tails the
// run may not have. On a real eager engine host times are heavy-tailed (allocator, lazy kernel
// loading, new GEMM shapes, the interpreter), so nearly every step of a healthy run holds some
// "impossible" row and unit p-values are tiny across the board. Under the assumed null a unit's
// p-value is conservative (at least uniform), so the z-score z = Q(p) (Q: the standard normal's
// upper-tail inverse) of most units is at most standard normal; when the run's units say
// otherwise -- even the lower quartile of unit z is above 0, where the assumed null puts the
// median, by more than three times its sampling error (6 / sqrt(units)) -- the units are judged
// against the run's own distribution instead: z ~ N(centre, scale^2), centre = the median z,
// scale = (median - lower quartile) / 0.6745 (at least 1). Units with p >= 0.5 count as z = 0.
// Requiring the bulk of the run to be inflated keeps runs where many units are faulty (a stress
// run can have half of them) on the assumed null: their surprising units may be the faults.
// It needs `min_null_units` judged units in the view; BH then runs on the recalibrated p-values
// and decides there, and the threshold is reported on the raw scale as the largest raw p-value
// that passed (the map is monotone), so a unit's p-value is at or below it exactly when it passed.
// The run's null speaks only for units that cost what the run's other steps cost: a step that
// took at least `long_step_ratio` times the median cycle of its similar steps (its duration and
// the time between steps before it, StepCycleNs in peers.h; the nearest
// units the similar-steps source reads) differs from them in the one quantity a user sees, so
// it keeps the assumed null (its raw p-value enters BH as it is; its threshold is the cut on the
// recalibrated scale). Otherwise a run whose healthy steps all carry surprising jitter (a loaded
// host's 100 us hiccups) widens its null until a step five times as long passes as normal.
// Pure; thread-safety: reentrant.
#pragma once

#include <array>
#include <limits>
#include <cstdint>
#include <string>
#include <vector>

#include "read/instances.h"
#include "peer/peers.h"
#include "peer/types.h"

namespace truffld::diagnose {

struct UnitVerdict {
  Verdict verdict = Verdict::kInsufficient;
  double p_value = 1;   // Bonferroni over judged rows
  int tests = 0;        // judged rows
  int rows = 0;         // all rows (judged or not)
  std::array<int, kPeerSourceCount> with_source{};  // rows having each source's expectation
  std::string reason;   // why insufficient_evidence
  // Set by the impact floor (verdict.h): the unit passed the statistical test, but the operators it blames
  // explain less than DecisionOptions::min_impact_share of the step, so it is labelled normal.
  bool immaterial = false;
  double immaterial_excess_ns = 0;   // their summed excess
  uint32_t immaterial_family = kNoString;  // the largest of them
  int immaterial_families = 0;
  // What-if replay of its blame (impact.h): the step time saved without the blamed excess, and
  // what the step never paid of it (absorbed). NaN / 0 when not replayed.
  double impact_ns = std::numeric_limits<double>::quiet_NaN();
  double absorbed_ns = 0;
  // Labelled normal as an ordinary member of a run pattern (run_patterns.h): the index of its
  // RunFinding, else -1.
  int run_finding = -1;
  // Its cycle (StepCycleNs: duration and the time between steps before it) over the median
  // cycle of its similar steps (0: no similar steps known), and whether that reached
  // DecisionOptions::long_step_ratio, so the assumed null judged it.
  double step_ratio = 0;
  bool long_step = false;
  double step_extra_ns = 0;   // its StepCycleNs minus its similar steps' median (0: unknown)
  double gap_before_ns = 0;   // of that cycle, the time between steps before it
};

// The empirical null of a view's unit p-values (see the top of this file): {centre, scale} on
// the z scale, {0, 1} when fewer than `min_units` are given or they show no inflation.
struct EmpiricalNull {
  double centre = 0, scale = 1;
  bool Active() const { return centre > 0 || scale > 1; }
};

// One view's decision over the run (vertical or horizontal).
struct ViewDecision {
  double threshold = 0;             // BH p-value threshold; 0: none flagged (on the raw scale of
                                    // UnitVerdict::p_value)
  double calibrated_threshold = 0;  // the BH cut on the recalibrated scale (what decides)
  double null_centre = 0;           // the empirical null (z scale); {0, 1}: the assumed one
  double null_scale = 1;
  // With an empirical null: the recalibrated p-value of the strongest evidence a unit can carry
  // (row p-values stop at kSmallestRowP), and whether that is above alpha / judged units, i.e. a
  // lone faulty step of the view could not be flagged however slow it was (say so: a clean
  // result there proves little).
  double best_possible_p = 0;
  bool single_step_blind = false;
  int judged = 0, flagged = 0, insufficient = 0;
  int immaterial = 0;               // significant but below the impact floor (not in flagged)
  int run_pattern = 0;              // significant but an ordinary member of a run pattern (not in flagged)
  int long_steps = 0;               // judged units with UnitVerdict::long_step
  // The BH critical value alpha * k / n (k units passed of n judged; 0: none passed): a row of a
  // long step is significant up to it (the assumed null holds there, and no unit lies between
  // the threshold and it), so the operator that made the step long is blamed even when another
  // row of the unit was more surprising.
  double long_step_row_cut = 0;
  EmpiricalNull Null() const { return {null_centre, null_scale}; }
};

struct DecisionResult {
  double alpha = 0.01;
  double min_impact_share = 0;        // the impact floor applied (verdict.h)
  double long_step_ratio = 0;         // DecisionOptions::long_step_ratio applied
  double long_step_row_share = 0.25;  // DecisionOptions::long_step_row_share applied
  // Per row (same order as the rows): the p-value it contributes as evidence. A family-sum row
  // and an instance at least SingleRatio times its expectation stand on their own; any other
  // instance needs a witness and contributes max(own, witness): the best other instance of its
  // family in the unit, or, for device work, the second-best other device row (strong ones
  // included) starting within a window of the unit (work slowed together, as under contention).
  std::vector<double> support_p;
  std::vector<UnitVerdict> units;     // per InstanceTable unit
  std::array<ViewDecision, kViewCount> views;  // by ViewIndex
  EmpiricalNull Null(int view) const { return views[view].Null(); }
  // Whether a raw unit-level p-value of `view` is at or below the run's cut (compared on the
  // recalibrated scale: mapping the cut back to the raw scale loses precision near underflow).
  // `assumed_null`: the unit is a long step, judged against the assumed null.
  bool Passes(int view, double raw_p, bool assumed_null = false) const;
  // The raw-scale threshold of a unit of `view` (ViewDecision::threshold, or the cut itself for a
  // long step).
  double UnitThreshold(int view, const UnitVerdict& v) const;
};

// The smallest p-value a row's tail test returns (scoring.cc clamps there: the normal tail
// underflows beyond z of about 37).
constexpr double kSmallestRowP = 1e-300;

struct DecisionOptions {
  double alpha = 0.01;        // Benjamini-Hochberg level per view
  // A lone instance needs at least this ratio to its expectation: device work (kernels run up
  // to ~1.4x their usual time now and then for no reason), host work (judged against host jitter).
  double single_ratio_device = 2.0;
  double single_ratio_host = 1.5;
  // A collective's transfer is shared by every participant, so a lone slow one is already seen
  // by all of them: it needs less.
  double single_ratio_transfer = 1.5;
  // ... and its excess must be at least this share of its step: a lone kernel or range that
  // cost a fraction of a percent more is noise a user does not want to be woken for (not
  // asked of a collective's transfer, which every participant saw).
  double lone_min_share = 0.005;
  // An abnormal unit's blame must have cost its step at least this share of its time (what-if
  // replay; the excess where nothing could be replayed). 0.01 = 1%: below the step-to-step
  // variation of every healthy real run we have (median absolute deviation 0.4-7.4% of the
  // median step, 0.74% in the steadiest, a CUDA-graph decode), so no step-time view would show
  // it and no one acts on one step for it; with thousands of tests per step, microseconds of
  // host jitter can still be statistically surprising.
  double min_impact_share = 0.01;
  // Judged units a view needs before its own null is estimated (fewer: the assumed null).
  int min_null_units = 20;
  // A unit at least this many times the median duration of its similar steps keeps the assumed
  // null (see the top of this file); 0 turns the rule off. 2: a step twice as long as the steps
  // that did the same work cost a user as much again, whatever else the run's steps show.
  double long_step_ratio = 2.0;
  // In a long step, a row whose excess is at least this share of the step's extra time (over its
  // similar steps) is significant when its own p-value passes alpha (see Significant).
  double long_step_row_share = 0.25;
  double cluster_window = 0.1;  // share of the unit's duration around a device row
  int64_t cluster_min_ns = 50000;
  double SingleRatio(const TestRow& r) const {
    if (r.metric == Metric::kHost) return single_ratio_host;
    return r.shared_tp ? single_ratio_transfer : single_ratio_device;
  }
};

// `rows` must be scored (TestRow::p_value set). `cycles`: every unit's cycle and its similar
// steps' (BuildTests); null or empty: no unit is a long step.
DecisionResult DecideUnits(const InstanceTable& t, const std::vector<TestRow>& rows, const DecisionOptions& o,
                           const StepCycles* cycles = nullptr);

// observed / expectation (BestExpected in blame.h); 0 when the row has none.
double RowRatio(const TestRow& row);

// Whether row `r` is significant evidence in an abnormal unit: its support p-value times the
// unit's number of tests is at or below the view's threshold. In a long step also when that is
// at or below the view's long_step_row_cut, or when the row's own support p-value is at most
// alpha and its excess is at least long_step_row_share of the step's extra time.
bool Significant(const DecisionResult& d, const InstanceTable& t, const std::vector<TestRow>& rows, uint32_t r);

// Largest p such that p <= alpha * k / n for the k-th smallest of `p` (0 when none qualifies).
double BenjaminiHochbergThreshold(std::vector<double> p, double alpha);

EmpiricalNull FitEmpiricalNull(const std::vector<double>& unit_p, int min_units);
// z = Q(p), the standard normal upper-tail inverse, for p in (0, 1]; clamped to [0, 38.5]
// (p >= 0.5 gives 0; 1e-300 gives about 37.0, p = 0 or a denormal about 38.5).
double UpperTailZ(double p);
// Upper tail of N(0, 1) at z.
double UpperTailP(double z);
// A raw unit p-value judged against `null`: the upper tail of N(centre, scale^2) at Q(p); p itself
// when the null is the assumed one.
double CalibratedP(const EmpiricalNull& null, double p);

}  // namespace truffld::diagnose
