// Stage I aggregation and selection: per-step family scores (rho-bar, A), the robust threshold
// median + lambda*MAD, top-M candidates, and the StepEvidence handed to Stage II.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "truffld/diagnose/features.h"
#include "truffld/diagnose/llm_policy.h"
#include "truffld/diagnose/stage1.h"

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

namespace {
// Top `n` names by count (ties by name) from tallies.
std::vector<std::string> TopNames(const StringTable& strings,
                                  const std::unordered_map<uint32_t, uint64_t>& counts, size_t n) {
  std::vector<std::pair<uint32_t, uint64_t>> v(counts.begin(), counts.end());
  std::sort(v.begin(), v.end(), [&](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    return strings.Get(a.first) < strings.Get(b.first);
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size() && i < n; ++i) out.push_back(strings.Get(v[i].first));
  return out;
}
}  // namespace

std::vector<StepEvidence> BuildEvidence(const InstanceTable& t, const StageOneResult& r) {
  std::vector<StepEvidence> out;
  out.reserve(r.steps.size());
  const bool have_names = t.kernels.size() == t.size() && t.api_calls.size() == t.size();
  for (const StepScore& ss : r.steps) {
    const StepInfo& st = t.steps[ss.step];
    StepEvidence ev;
    ev.rank = st.rank;
    ev.step_index = st.step_index;
    ev.step_name = st.step_name;
    ev.view = st.view;
    ev.requests = st.requests;
    ev.phase = st.phase;
    ev.step_duration_ns = st.end_ns - st.start_ns;
    ev.operator_instances = static_cast<int>(st.instance_count);
    ev.comm_bytes = st.comm_bytes;
    ev.world_size = st.world_size;
    ev.regime = st.regime;
    ev.nvtx_domains = st.nvtx_domains;
    // Per-family context gathered in one pass over the step's instances.
    struct Ctx {
      std::unordered_map<uint32_t, uint64_t> parents, kernels, apis;
      double total = 0;
      uint32_t layer = kNoString;
    };
    std::unordered_map<uint32_t, Ctx> ctx;
    for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) {
      Ctx& c = ctx[t.family[i]];
      c.layer = t.layer[i];
      c.total += static_cast<double>(t.end_ns[i] - t.start_ns[i]);
      c.parents[t.parent[i]]++;
      if (have_names) {
        for (const auto& k : t.kernels[i]) c.kernels[k.name] += k.count;
        for (const auto& a : t.api_calls[i]) c.apis[a.name] += a.count;
      }
    }
    for (const FamilyScore& f : ss.families) {
      const Ctx& c = ctx[f.family];
      FamilyEvidence fe;
      fe.family = t.strings.Get(f.family);
      fe.layer = c.layer == kNoString ? "" : t.strings.Get(c.layer);
      uint32_t best_parent = kNoString;
      uint64_t best_count = 0;
      for (const auto& [p, n] : c.parents) {
        bool better = n > best_count ||
                      (n == best_count && p != kNoString &&
                       (best_parent == kNoString || t.strings.Get(p) < t.strings.Get(best_parent)));
        if (better) { best_parent = p; best_count = n; }
      }
      fe.parent = best_parent == kNoString ? "" : t.strings.Get(best_parent);
      fe.instances = f.instances;
      fe.probability = f.rho_bar;
      fe.score = f.score;
      fe.min_instance_probability = f.min_rho;
      fe.strong_instances = f.strong_instances;
      fe.weak_instances = f.weak_instances;
      fe.candidate = f.candidate;
      fe.method = f.method;
      fe.total_time_ns = c.total;
      fe.kernels = TopNames(t.strings, c.kernels, 5);
      fe.api_calls = TopNames(t.strings, c.apis, 5);
      ev.families.push_back(std::move(fe));
    }
    out.push_back(std::move(ev));
  }
  return out;
}

}  // namespace truffld::diagnose
