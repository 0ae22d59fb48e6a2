// Fusion rule: abnormal iff Stage I candidates and Stage II's faulty set intersect.
#include "stage2/fusion.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace truffld::diagnose {

std::vector<std::string> ParentChain(const StepEvidence& step, const std::string& family) {
  std::unordered_map<std::string, const FamilyEvidence*> by_name;
  for (const auto& f : step.families) by_name.emplace(f.family, &f);
  std::vector<std::string> chain;
  std::set<std::string> seen{family};
  auto it = by_name.find(family);
  std::string parent = it == by_name.end() ? "" : it->second->parent;
  while (!parent.empty() && chain.size() < 16 && seen.insert(parent).second) {
    chain.push_back(parent);
    auto p = by_name.find(parent);
    if (p == by_name.end()) break;
    parent = p->second->parent;
  }
  return chain;
}

StepDiagnosis Fuse(StepEvidence evidence, StageTwoDecision decision, double threshold) {
  StepDiagnosis d;
  d.threshold = threshold;
  std::set<std::string> confirmed(decision.faulty.begin(), decision.faulty.end());
  for (const FamilyEvidence& f : evidence.families) {
    if (!f.candidate || !confirmed.count(f.family)) continue;
    FaultyOperator op;
    op.family = f.family;
    op.layer = f.layer;
    op.method = f.method;
    op.score = f.score;
    op.probability = f.probability;
    op.instances = f.instances;
    op.parent_chain = ParentChain(evidence, f.family);
    op.cost = f.cost;
    d.faulty.push_back(std::move(op));
  }
  if (evidence.peer) {
    // Causes by excess, then the effects they explain (peer/impact.h).
    std::stable_sort(d.faulty.begin(), d.faulty.end(), [](const FaultyOperator& a, const FaultyOperator& b) {
      const bool ea = !CostOrNone(a.cost).effect_of.empty(), eb = !CostOrNone(b.cost).effect_of.empty();
      return ea != eb ? eb : a.ExcessNs() > b.ExcessNs();
    });
  } else {
    std::stable_sort(d.faulty.begin(), d.faulty.end(),
                     [](const FaultyOperator& a, const FaultyOperator& b) { return a.score > b.score; });
  }
  d.abnormal = !d.faulty.empty();
  d.label = d.abnormal ? Verdict::kAbnormal
            : evidence.peer && evidence.peer->verdict == Verdict::kInsufficient ? Verdict::kInsufficient
                                                                               : Verdict::kNormal;
  d.evidence = std::move(evidence);
  d.decision = std::move(decision);
  return d;
}

}  // namespace truffld::diagnose
