// The offline Stage II policy (see llm_policy.h for the rules and how ambiguities were resolved).
#include "stage2/llm_policy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "stage2/llm_stage2.h"

namespace truffld::diagnose {

const char* DecisionSourceName(DecisionSource s) noexcept {
  switch (s) {
    case DecisionSource::kLlm: return "llm";
    case DecisionSource::kOffline: return "offline";
    case DecisionSource::kLlmFallbackOffline: return "offline-fallback";
    case DecisionSource::kCache: return "cache";
  }
  return "unknown";
}

AnomalyClass ClassifyProbability(double p, const PolicyThresholds& t) noexcept {
  if (!std::isfinite(p) || p < 0.0 || p > 1.0) return AnomalyClass::kNone;
  if (p < t.strong) return AnomalyClass::kStrong;
  if (p < t.weak) return AnomalyClass::kWeak;
  return AnomalyClass::kNone;
}

bool IsHorizontalView(const StepEvidence& step) noexcept { return step.view == View::kHorizontal; }

std::vector<std::string> PropagateUpward(const StepEvidence& step, std::vector<std::string> names) {
  // family -> parent, first occurrence wins (families should be unique per step anyway).
  std::unordered_map<std::string, const std::string*> parent_of;
  for (const FamilyEvidence& f : step.families) parent_of.emplace(f.family, &f.parent);

  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  auto add = [&](const std::string& n) {
    if (seen.insert(n).second) out.push_back(n);
  };
  for (const std::string& n : names) add(n);
  // Walk up from every listed name; `out` grows while we iterate, so index-based.
  for (size_t i = 0; i < out.size(); ++i) {
    auto it = parent_of.find(out[i]);
    if (it == parent_of.end() || it->second->empty()) continue;
    const std::string& parent = *it->second;
    if (parent_of.count(parent) != 0) add(parent);  // only parents present in the step
  }
  return out;
}

namespace {

std::string Percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

}  // namespace

int StrongInstances(const FamilyEvidence& f, const PolicyThresholds& t) noexcept {
  // Evidence built by hand (tests, older callers) may carry only the family's rho-bar; a strong
  // rho-bar implies at least one strong instance, so it counts as one.
  const int from_bar = ClassifyProbability(f.probability, t) == AnomalyClass::kStrong ? 1 : 0;
  return std::max(std::max(f.strong_instances, 0), from_bar);
}

int WeakInstances(const FamilyEvidence& f, const PolicyThresholds& t) noexcept {
  const int from_bar = ClassifyProbability(f.probability, t) != AnomalyClass::kNone ? 1 : 0;
  return std::max({std::max(f.weak_instances, 0), from_bar, StrongInstances(f, t)});
}

namespace {

// The peer-relative Stage I already decided at the stated false-alarm rate and named the
// causes; the policy confirms that decision and its blamed families, in excess order.
StageTwoDecision DecidePeer(const StepEvidence& step) {
  StageTwoDecision d;
  d.source = DecisionSource::kOffline;
  d.abnormal = step.peer->verdict == Verdict::kAbnormal;
  if (d.abnormal) {
    for (const FamilyEvidence& f : step.families) {
      if (f.candidate) d.faulty.push_back(f.family);
    }
  }
  d.rationale = "calibrated rule: " + step.peer->summary;
  return d;
}

// Appends to `listed` the families with weak instances whose parent is also the parent of a
// strong family (siblings of a strong symptom); returns how many.
size_t AddRelatedWeak(const StepEvidence& step, const std::unordered_set<std::string>& strong_set,
                      const PolicyThresholds& t, std::vector<std::string>* listed) {
  std::unordered_set<std::string> strong_parents;
  for (const FamilyEvidence& f : step.families) {
    if (strong_set.count(f.family) != 0 && !f.parent.empty()) strong_parents.insert(f.parent);
  }
  size_t related = 0;
  std::unordered_set<std::string> added;
  for (const FamilyEvidence& f : step.families) {
    if (strong_set.count(f.family) == 0 && WeakInstances(f, t) > 0 && !f.parent.empty() &&
        strong_parents.count(f.parent) != 0 && added.insert(f.family).second) {
      listed->push_back(f.family);
      ++related;
    }
  }
  return related;
}

}  // namespace

StageTwoDecision DecideOffline(const StepEvidence& step, const PolicyThresholds& t) {
  if (step.peer) return DecidePeer(step);
  StageTwoDecision d;
  d.source = DecisionSource::kOffline;

  // S counts strong INSTANCES; ops_count counts instances (as in the design's prompt). A family
  // is listed as strong when at least one of its instances is strong.
  std::vector<std::string> strong;
  std::unordered_set<std::string> strong_set;
  int64_t n_strong = 0, n_ops = 0;
  int invalid = 0;
  for (const FamilyEvidence& f : step.families) {
    if (!std::isfinite(f.probability) || f.probability < 0.0 || f.probability > 1.0) ++invalid;
    const int s = StrongInstances(f, t);
    n_strong += s;
    n_ops += std::max(f.instances, 1);
    if (s > 0 && strong_set.insert(f.family).second) strong.push_back(f.family);
  }
  if (invalid > 0) {
    d.note = std::to_string(invalid) + " famil" + (invalid == 1 ? "y" : "ies") +
             " with a probability outside [0,1] treated as normal";
  }

  bool abnormal = false;
  if (IsHorizontalView(step)) {
    abnormal = n_strong > t.horizontal_max_strong;
    d.rationale = "horizontal rule: " + std::to_string(n_strong) + " strong anomal" +
                  (n_strong == 1 ? "y" : "ies") + " in " + std::to_string(strong.size()) +
                  " famil" + (strong.size() == 1 ? "y" : "ies") + (abnormal ? " > " : " <= ") +
                  std::to_string(t.horizontal_max_strong);
  } else {
    const double fraction =
        n_ops == 0 ? 0.0 : static_cast<double>(n_strong) / static_cast<double>(n_ops);
    const bool by_count = t.vertical_min_strong > 0 && n_strong >= t.vertical_min_strong;
    abnormal = n_ops > 0 && n_strong > 0 && (fraction >= t.vertical_fraction || by_count);
    d.rationale = "vertical rule: " + std::to_string(n_strong) + " strong of " +
                  std::to_string(n_ops) + " operator instances (" + Percent(fraction) + ")" +
                  (fraction >= t.vertical_fraction ? " >= " : " < ") + Percent(t.vertical_fraction);
    if (t.vertical_min_strong > 0) {
      d.rationale += std::string(by_count ? ", >= " : ", < ") + std::to_string(t.vertical_min_strong) + " strong";
    }
  }
  if (!abnormal) {
    d.rationale += ": normal";
    return d;
  }

  std::vector<std::string> listed = strong;
  const size_t related = t.include_related_weak ? AddRelatedWeak(step, strong_set, t, &listed) : 0;
  const size_t before = listed.size();
  d.faulty = PropagateUpward(step, std::move(listed));
  d.abnormal = true;
  d.rationale += ": abnormal; " + std::to_string(n_strong) + " strong, " +
                 std::to_string(related) + " related weak, " +
                 std::to_string(d.faulty.size() - before) + " parent(s) added";
  return d;
}

StageTwoDecision DecideOffline(const StepEvidence& step) { return DecideOffline(step, {}); }

}  // namespace truffld::diagnose
