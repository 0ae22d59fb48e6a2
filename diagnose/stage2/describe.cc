// A unit described for Stage II, the same for every detector (describe.h).
#include "stage2/describe.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace truffld::diagnose {
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

// Per-family context gathered in one pass over the step's instances.
struct FamilyContext {
  std::unordered_map<uint32_t, uint64_t> parents, kernels, apis;
  double total = 0;
  uint32_t layer = kNoString;
};

// The most frequent parent (ties: a named parent over none, then the smaller name).
uint32_t MostFrequentParent(const StringTable& strings, const FamilyContext& c) {
  uint32_t best_parent = kNoString;
  uint64_t best_count = 0;
  for (const auto& [p, n] : c.parents) {
    bool better = n > best_count ||
                  (n == best_count && p != kNoString &&
                   (best_parent == kNoString || strings.Get(p) < strings.Get(best_parent)));
    if (better) { best_parent = p; best_count = n; }
  }
  return best_parent;
}

}  // namespace

std::vector<uint32_t> FamiliesInOrder(const InstanceTable& t, uint32_t unit) {
  const StepInfo& st = t.steps[unit];
  std::vector<uint32_t> out;
  std::unordered_set<uint32_t> seen;
  for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) {
    if (seen.insert(t.family[i]).second) out.push_back(t.family[i]);
  }
  return out;
}

StepEvidence DescribeUnit(const InstanceTable& t, uint32_t unit, const std::vector<uint32_t>& families) {
  const StepInfo& st = t.steps[unit];
  StepEvidence ev;
  ev.rank = st.rank;
  ev.step_index = st.step_index;
  ev.step_name = st.step_name;
  ev.view = st.view;
  ev.requests = st.requests;
  ev.phase = st.phase;
  ev.step_duration_ns = st.end_ns - st.start_ns;
  ev.device_detail = st.device_detail;
  ev.operator_detail = st.operator_detail;
  ev.start_ns = st.start_ns;
  ev.end_ns = st.end_ns;
  ev.operator_instances = static_cast<int>(st.instance_count);
  ev.comm_bytes = st.comm_bytes;
  ev.world_size = st.world_size;
  ev.regime = st.regime;
  ev.nvtx_domains = st.nvtx_domains;
  const bool have_names = t.kernels.size() == t.size() && t.api_calls.size() == t.size();
  std::unordered_map<uint32_t, FamilyContext> ctx;
  std::unordered_map<uint32_t, int> count;
  for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) {
    FamilyContext& c = ctx[t.family[i]];
    ++count[t.family[i]];
    c.layer = t.layer[i];
    c.total += static_cast<double>(t.end_ns[i] - t.start_ns[i]);
    c.parents[t.parent[i]]++;
    if (have_names) {
      for (const auto& k : t.kernels[i]) c.kernels[k.name] += k.count;
      for (const auto& a : t.api_calls[i]) c.apis[a.name] += a.count;
    }
  }
  for (uint32_t family : families) {
    const FamilyContext& c = ctx[family];
    FamilyEvidence fe;
    fe.family = t.strings.Get(family);
    fe.layer = c.layer == kNoString ? "" : t.strings.Get(c.layer);
    const uint32_t parent = MostFrequentParent(t.strings, c);
    fe.parent = parent == kNoString ? "" : t.strings.Get(parent);
    fe.instances = count[family];
    fe.total_time_ns = c.total;
    fe.kernels = TopNames(t.strings, c.kernels, 5);
    fe.api_calls = TopNames(t.strings, c.apis, 5);
    ev.families.push_back(std::move(fe));
  }
  return ev;
}

}  // namespace truffld::diagnose
