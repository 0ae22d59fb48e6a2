// Stage I aggregation and selection: per-step family scores (rho-bar, A), the robust threshold
// median + lambda*MAD, top-M candidates, and the StepEvidence handed to Stage II (DescribeUnit
// plus the mixture scores).
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "legacy/features.h"
#include "stage2/llm_policy.h"
#include "legacy/stage1.h"
#include "stage2/describe.h"

namespace truffld::diagnose {

double RhoBar(std::vector<double> rho, double q) {
  if (rho.empty()) return 1.0;
  size_t m = rho.size();
  size_t take = std::max<size_t>(1, static_cast<size_t>(std::floor(q * static_cast<double>(m))));
  take = std::min(take, m);
  std::partial_sort(rho.begin(), rho.begin() + static_cast<std::ptrdiff_t>(take), rho.end());
  double sum = 0;
  for (size_t i = 0; i < take; ++i) sum += rho[i];
  return sum / static_cast<double>(take);
}

std::vector<StepScore> SelectCandidates(const InstanceTable& t, const std::vector<double>& rho,
                                        const std::vector<uint8_t>& method,
                                        const std::vector<std::string>& method_names,
                                        const StageOneOptions& o) {
  std::vector<StepScore> out(t.steps.size());
  for (uint32_t s = 0; s < t.steps.size(); ++s) {
    const StepInfo& st = t.steps[s];
    StepScore& ss = out[s];
    ss.step = s;
    std::unordered_map<uint32_t, size_t> slot;  // family -> index in ss.families
    std::vector<std::vector<double>> values;
    std::vector<int> robust;  // instances scored by robust-z per family
    for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) {
      auto [it, fresh] = slot.emplace(t.family[i], ss.families.size());
      if (fresh) {
        ss.families.push_back(FamilyScore{});
        ss.families.back().family = t.family[i];
        values.emplace_back();
        robust.push_back(0);
      }
      size_t k = it->second;
      values[k].push_back(rho[i]);
      ss.families[k].method = method_names[method[i]];
      robust[k] += method_names[method[i]] == "robust-z";
    }
    std::vector<double> scores;
    for (size_t k = 0; k < ss.families.size(); ++k) {
      FamilyScore& f = ss.families[k];
      f.instances = static_cast<int>(values[k].size());
      f.min_rho = *std::min_element(values[k].begin(), values[k].end());
      for (double v : values[k]) {
        f.strong_instances += ClassifyProbability(v) == AnomalyClass::kStrong;
        f.weak_instances += ClassifyProbability(v) != AnomalyClass::kNone;
      }
      f.rho_bar = RhoBar(values[k], o.q);
      f.score = 1.0 - f.rho_bar;
      if (robust[k] > 0) f.method = "robust-z";
      scores.push_back(f.score);
    }
    double med = Median(scores);
    ss.threshold = med + o.lambda * Mad(scores, med);
    std::sort(ss.families.begin(), ss.families.end(), [&](const FamilyScore& a, const FamilyScore& b) {
      if (a.score != b.score) return a.score > b.score;
      return t.strings.Get(a.family) < t.strings.Get(b.family);
    });
    int chosen = 0;
    for (auto& f : ss.families) {
      if (chosen >= o.top_m) break;
      if (f.score >= ss.threshold && f.score >= o.min_score) {
        f.candidate = true;
        ++chosen;
      }
    }
  }
  return out;
}

std::vector<StepEvidence> BuildEvidence(const InstanceTable& t, const StageOneResult& r) {
  std::vector<StepEvidence> out;
  out.reserve(r.steps.size());
  for (const StepScore& ss : r.steps) {
    std::vector<uint32_t> order;
    order.reserve(ss.families.size());
    for (const FamilyScore& f : ss.families) order.push_back(f.family);
    StepEvidence ev = DescribeUnit(t, ss.step, order);
    for (size_t k = 0; k < ss.families.size(); ++k) {
      const FamilyScore& f = ss.families[k];
      FamilyEvidence& fe = ev.families[k];
      fe.instances = f.instances;
      fe.probability = f.rho_bar;
      fe.score = f.score;
      fe.min_instance_probability = f.min_rho;
      fe.strong_instances = f.strong_instances;
      fe.weak_instances = f.weak_instances;
      fe.candidate = f.candidate;
      fe.method = f.method;
    }
    out.push_back(std::move(ev));
  }
  return out;
}

}  // namespace truffld::diagnose
