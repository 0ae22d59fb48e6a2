// The Stage II decision policy as plain deterministic code, and the helpers the LLM path shares
// with it (anomaly classes, upward propagation).
//
// The same rules are written in words in the model's system prompt (llm_prompt.cc); the offline
// policy is what runs with `--llm off`, when a step has no Stage I candidate, and whenever the
// model fails. Resolved ambiguities (documented in diagnose/LLM.md):
//   * anomalies are counted per operator INSTANCE, as in the design: S = sum of the families'
//     strong_instances (instances with rho(x) < 1e-6), and the vertical rule compares S with the
//     number of operator instances (sum of the families' instance counts); a family is listed as
//     strong when at least one of its instances is strong;
//   * strong: p < 1e-6 (p == 0 included); weak: 1e-6 <= p < 0.5; NaN/out-of-range = no anomaly;
//     hand-built evidence without instance counters falls back to the family's rho-bar (one);
//   * the vertical rule also fires on an absolute count: S >= vertical_min_strong (3) is abnormal
//     whatever the step's size, because a fault in one family of a large (prefill) step touches
//     few of its instances, while a healthy step under a calibrated model has ~n*1e-6 strong
//     instances (3 = one slow operator seen at frontend, backend and leaf level, or several);
//   * a view other than "horizontal" uses the vertical rule;
//   * related weak anomalies = weak families sharing a non-empty parent with a strong one; they
//     are included (configurable);
//   * upward propagation is transitive and only adds parents that are families of the step.
// Pure: no I/O, no threads, no globals. Thread-safety: all functions are reentrant.
#pragma once

#include <string>
#include <vector>

#include "stage2/evidence.h"

namespace truffld::diagnose {

struct PolicyThresholds {
  double strong = 1e-6;             // p below this: strong anomaly
  double weak = 0.5;                // p below this (and not strong): weak anomaly
  double vertical_fraction = 0.10;  // vertical: strong/instances below this means normal ...
  int vertical_min_strong = 3;      // ... unless at least this many strong instances (0: off)
  int horizontal_max_strong = 1;    // horizontal: at most this many strong means normal
  bool include_related_weak = true;  // add weak siblings of strong anomalies
};

enum class AnomalyClass { kNone, kWeak, kStrong };
AnomalyClass ClassifyProbability(double probability, const PolicyThresholds& t = {}) noexcept;

// True when the step is judged by the horizontal rule (view == View::kHorizontal).
bool IsHorizontalView(const StepEvidence& step) noexcept;

// Adds, transitively, every parent of a listed name that is itself a family of the step.
// Input order is kept; added parents follow; duplicates removed.
std::vector<std::string> PropagateUpward(const StepEvidence& step, std::vector<std::string> names);

// Strong / weak (strong included) instances of a family: its counters, or 1 when only its
// rho-bar is known and falls in the class (hand-built evidence).
int StrongInstances(const FamilyEvidence& f, const PolicyThresholds& t = {}) noexcept;
int WeakInstances(const FamilyEvidence& f, const PolicyThresholds& t = {}) noexcept;

// The policy. `source` is kOffline, `rationale` names the rule that fired, `raw` is empty.
StageTwoDecision DecideOffline(const StepEvidence& step, const PolicyThresholds& t);

}  // namespace truffld::diagnose
