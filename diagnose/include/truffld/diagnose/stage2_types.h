// The contract between Stage I (GMM scoring) and Stage II (LLM or offline confirmation).
//
// Stage I fills one StepEvidence per (rank, step, view): every operator family present in the
// step with its calibrated confidence, and which of them the robust selector made candidates.
// Stage II (an LLM under a strict schema, or the same decision policy as plain code) answers one
// StageTwoDecision per StepEvidence. Fusion then intersects candidates with the decision.
// Probabilities are Stage I's rho-bar: the confidence that the family behaved normally in this
// step (low = anomalous); scores are A = 1 - rho-bar.
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace truffld::diagnose {

// One operator family within one step and view.
struct FamilyEvidence {
  std::string family;               // normalised operator name, e.g. "aten::mm", "ncclAllReduce"
  std::string layer;                // "frontend_op", "backend_op", "comm", "kernel", ...
  std::string parent;               // most frequent parent family in the step ("" at the root)
  int instances = 0;                // operator instances of this family in the step
  double probability = 1.0;         // rho-bar in [0, 1]: confidence the family was normal
  double score = 0.0;               // A = 1 - rho-bar
  double min_instance_probability = 1.0;  // lowest rho(x) over the family's instances
  bool candidate = false;           // chosen by Stage I's selector (A >= threshold, top M)
  std::string method;               // "gmm", "gmm-reference", "robust-z" (too few instances)
  double total_time_ns = 0;         // sum of instance durations, for context
  std::vector<std::string> kernels;    // most frequent kernel families launched (<= 5)
  std::vector<std::string> api_calls;  // most frequent runtime/driver calls (<= 5)
  // (Last, so positional initialisers written before they existed stay valid.)
  // Instances whose own rho(x) is below the strong (1e-6) / weak (0.5) bounds. The decision
  // policy counts anomalies per INSTANCE (a slow collective slows many all-reduce calls of one
  // family), so these, not the family's rho-bar, drive S in the horizontal and vertical rules.
  int strong_instances = 0;
  int weak_instances = 0;           // includes the strong ones (rho < 0.5)
  // Peer-relative Stage I only (StepEvidence::calibrated): the family's cost against its peers.
  std::string metric;               // "host" | "device": the cost found excessive
  std::string basis;                // "tp_peers" | "similar_steps" | "layers": expectation source
  double observed_ns = 0, expected_ns = 0, excess_ns = 0;
  double share = 0;                 // excess / step duration
  std::vector<std::pair<std::string, double>> ratios;  // source -> observed / expected
  std::string sentence;             // the evidence in one sentence with numbers
};

// Host time an operator spent while loading GPU code (first use of a kernel): reported, not
// judged (warmup.h). Times in ns.
struct WarmupEvidence {
  std::string family;
  int instances = 0;
  double observed_ns = 0, expected_ns = 0, excess_ns = 0;
  double share = 0;  // excess / step duration
};

struct StepEvidence {
  std::optional<int64_t> rank;
  int64_t step_index = 0;
  std::string step_name;
  std::string view;                 // "vertical" or "horizontal"
  std::vector<std::string> requests;
  std::string phase;                // "prefill", "decode", "mixed", "unknown"
  int64_t step_duration_ns = 0;
  int operator_instances = 0;       // all operator instances in the step and view
  std::vector<FamilyEvidence> families;  // every family present, candidates flagged
  // Communication context (horizontal view): total message bytes and world size when known.
  int64_t comm_bytes = 0;
  int64_t world_size = 0;
  // Backend context for Stage II (BuildEvidence copies it from the reader's StepInfo):
  std::string regime;                     // "graph" (CUDA-graph replay), "eager", "" = unknown
  std::vector<std::string> nvtx_domains;  // NVTX domains seen in the step's view (trace text)
  // Peer-relative Stage I (--mode peer): a calibrated verdict with its evidence. When
  // `calibrated` is set, candidates are the blamed families (highest excess first) and the
  // offline policy follows `verdict`.
  bool calibrated = false;
  std::string verdict;              // "normal" | "abnormal" | "insufficient_evidence"
  double p_value = 1;               // unit p-value (Bonferroni over its judged tests)
  double threshold = 0;             // the run's Benjamini-Hochberg threshold for this view
  double null_centre = 0;           // the view's empirical null on the z scale (peer_decision.h);
  double null_scale = 1;            // {0, 1}: the assumed null
  bool null_blind = false;          // that null leaves a lone slow step no way to be flagged
  double alpha = 0;                 // the stated false-alarm rate
  int tests = 0;                    // judged tests (operator costs with peers)
  int tp_peers = 0;                 // other ranks that ran this logical step
  int with_similar_steps = 0;       // tests with a similar-steps expectation
  int with_layers = 0;              // tests with a same-step layer expectation
  std::string summary;              // one sentence with numbers (or the insufficiency reason)
  int64_t start_ns = 0, end_ns = 0; // the step on the merged axis
  double waited_ns = 0;             // horizontal: time spent waiting for other ranks
  int64_t waiting_on = -1;          // horizontal: the rank most of that wait was for
  std::vector<WarmupEvidence> warmup;  // first use of GPU code in the step, highest excess first
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
