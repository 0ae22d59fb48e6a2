// The evidence Stage II judges: one StepEvidence per (rank, step, view) unit.
//
// Every detector describes a unit the same way (DescribeUnit, describe.h: its identity, workload
// and backend context, and every operator family present with where it sits in the call chain
// and what it launched), then adds what it found:
//   * the peer detector (the default): `peer` holds the unit's verdict at the stated false-alarm
//     rate with its calibration and one sentence of evidence; the blamed families are the
//     candidates, highest excess first, each with its `cost` against its peers; a family's
//     `probability` is the smallest p-value of its tested rows (method "peer");
//   * the legacy mixture modes (legacy/): a family's `probability` is its rho-bar (confidence it
//     behaved normally), candidates come from the robust selector, and the strong/weak instance
//     counts feed the design paper's decision rule.
// Stage II answers one StageTwoDecision per unit; fusion (fusion.h) turns both into the
// diagnosis. Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "read/instances.h"
#include "truffld/verdict.h"

namespace truffld::diagnose {

// What a blamed family cost against its peers (peer detector). Times in ns.
struct PeerCost {
  Metric metric = Metric::kHost;           // the cost found excessive
  PeerSource basis = PeerSource::kTp;      // the peers its expectation came from
  double observed_ns = 0, expected_ns = 0, excess_ns = 0;
  double share = 0;                        // excess / step duration
  // Step time saved without the excess (what-if replay) and what the step never paid of it;
  // NaN / 0 when the step could not be replayed (no operator detail).
  double impact_ns = std::numeric_limits<double>::quiet_NaN();
  double absorbed_ns = 0;
  std::vector<std::pair<PeerSource, double>> ratios;  // observed / expected, per source with peers
  std::string sentence;                    // the evidence in one sentence with numbers
  // (device idle) only: the family whose late launches the device waited for (its cause, whose
  // cost the idle is; peer/impact.h); empty otherwise.
  std::string effect_of;
};

// `cost`, or an all-zero PeerCost when it has none (legacy modes, hand-built evidence).
inline const PeerCost& CostOrNone(const std::optional<PeerCost>& cost) {
  static const PeerCost kNone;
  return cost ? *cost : kNone;
}

// One operator family within one step and view.
struct FamilyEvidence {
  std::string family;               // normalised operator name, e.g. "aten::mm", "ncclAllReduce"
  std::string layer;                // "frontend_op", "backend_op", "comm", "kernel", ...
  std::string parent;               // most frequent parent family in the step ("" at the root)
  int instances = 0;                // operator instances of this family in the step
  double probability = 1.0;         // in [0, 1]; low = anomalous (see the top of this file)
  double score = 0.0;               // 1 - probability
  double min_instance_probability = 1.0;  // lowest per-instance value
  bool candidate = false;           // legacy: chosen by the selector; peer: blamed
  std::string method;               // "peer", or the legacy "gmm", "gmm-reference", "robust-z"
  double total_time_ns = 0;         // sum of instance durations, for context
  std::vector<std::string> kernels;    // most frequent kernel families launched (<= 5)
  std::vector<std::string> api_calls;  // most frequent runtime/driver calls (<= 5)
  // Legacy modes: instances whose own rho(x) is below the strong (1e-6) / weak (0.5) bounds.
  // The design's policy counts anomalies per INSTANCE (a slow collective slows many all-reduce
  // calls of one family), so these, not the family's rho-bar, drive its rules.
  int strong_instances = 0;
  int weak_instances = 0;           // includes the strong ones (rho < 0.5)
  std::optional<PeerCost> cost;     // peer detector: set on the blamed families
};

// Host time an operator spent while loading GPU code (first use of a kernel): reported, not
// judged (peer/warmup.h). Times in ns.
struct WarmupEvidence {
  std::string family;
  int instances = 0;
  double observed_ns = 0, expected_ns = 0, excess_ns = 0;
  double share = 0;  // excess / step duration
};

// The peer detector's verdict on a unit, with what it rests on (peer/decision.h).
struct PeerUnitEvidence {
  Verdict verdict = Verdict::kInsufficient;
  double p_value = 1;               // unit p-value (Bonferroni over its judged tests)
  double threshold = 0;             // the run's Benjamini-Hochberg threshold for this view
  double null_centre = 0;           // the view's empirical null on the z scale;
  double null_scale = 1;            // {0, 1}: the assumed null
  bool null_blind = false;          // that null leaves a lone slow step no way to be flagged
  double best_possible_p = 0;       // the strongest evidence's q under that null (0: any)
  double long_step_ratio = 0;       // --long-step-ratio applied (0: off)
  double step_ratio = 0;            // cycle / median cycle of its similar steps (0: unknown)
  bool long_step = false;           // at least long_step_ratio: judged on the assumed null
  double alpha = 0;                 // the stated false-alarm rate
  int tests = 0;                    // judged tests (operator costs with peers)
  int tp_peers = 0;                 // other ranks that ran this logical step
  int with_similar_steps = 0;       // tests with a similar-steps expectation
  int with_layers = 0;              // tests with a same-step layer expectation
  std::string summary;              // one sentence with numbers (or the insufficiency reason)
  // What the blamed (or, below the impact floor, the immaterial) excess cost the step: the step
  // time saved without it (what-if replay) and what was absorbed; NaN / 0 when not replayed.
  double impact_ns = std::numeric_limits<double>::quiet_NaN();
  double absorbed_ns = 0;
  double waited_ns = 0;             // horizontal: time spent waiting for other ranks
  int64_t waiting_on = -1;          // horizontal: the rank most of that wait was for
  std::vector<WarmupEvidence> warmup;  // first use of GPU code in the step, highest excess first
};

struct StepEvidence {
  std::optional<int64_t> rank;
  int64_t step_index = 0;
  std::string step_name;
  View view = View::kVertical;
  std::vector<std::string> requests;
  std::string phase;                // "prefill", "decode", "mixed", "unknown"
  int64_t step_duration_ns = 0;
  int64_t start_ns = 0, end_ns = 0; // the step on the merged axis
  // Capture tiers: device activity recorded (inside a device window), operator ranges recorded
  // (false: judged on step-level evidence only; StepInfo::operator_detail).
  bool device_detail = true, operator_detail = true;
  int operator_instances = 0;       // all operator instances in the step and view
  std::vector<FamilyEvidence> families;  // every family present, candidates flagged
  // Communication context (horizontal view): total message bytes and world size when known.
  int64_t comm_bytes = 0;
  int64_t world_size = 0;
  // Backend context for Stage II, from the reader's StepInfo:
  std::optional<Regime> regime;           // CUDA-graph replay or eager; unknown in hand-built evidence
  std::vector<std::string> nvtx_domains;  // NVTX domains seen in the step's view (trace text)
  std::optional<PeerUnitEvidence> peer;   // the peer detector's verdict; absent in legacy modes
};

enum class DecisionSource { kLlm, kOffline, kLlmFallbackOffline, kCache };
const char* DecisionSourceName(DecisionSource s) noexcept;  // "llm", "offline", "offline-fallback", "cache"

struct StageTwoDecision {
  bool abnormal = false;
  std::vector<std::string> faulty;  // family names, always a subset of the step's families
  DecisionSource source = DecisionSource::kOffline;
  std::string rationale;            // short text (LLM's, or the policy rule that fired)
  std::string raw;                  // raw model output when source is kLlm/kCache (else empty)
  std::string note;                 // why a fallback happened, validation errors, ...
};

}  // namespace truffld::diagnose
