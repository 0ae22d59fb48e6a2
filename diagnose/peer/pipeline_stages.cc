// Pipeline stages longer than the others (see pipeline_stages.h).
#include "peer/pipeline_stages.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "peer/format_ns.h"
#include "peer/robust_stats.h"

namespace truffld::diagnose {
namespace {

int Find(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

// Device time of compute (no communication, no pseudo-instance) of vertical unit `u`.
double ComputeNs(const InstanceTable& t, uint32_t u) {
  const StepInfo& s = t.steps[u];
  double sum = 0;
  for (uint32_t i = s.first_instance; i < s.first_instance + s.instance_count; ++i) {
    const InstanceDetail& d = t.detail[i];
    if ((d.flags & kDetailOutside) || !(d.flags & kDetailHasDevice) || t.strings.Get(t.layer[i]) == "comm") continue;
    sum += d.device_ns;
  }
  return sum;
}

// One logical step of a pipeline: each stage's load (same order as the pipeline's stage keys)
// and the replica's step duration.
struct StepLoads {
  std::vector<double> load;
  double step_ns = 0;
};

struct Pipeline {
  std::vector<std::set<std::string>> hosts;  // per stage
  std::vector<StepLoads> steps;
};

// The stages of horizontal logical step `members` (ranks that shared a matched collective),
// as sorted rank lists in order of their lowest rank; empty unless the step is a pipeline (two
// stages or more, and a send/recv between ranks). `p2p_of_family`: per family id, whether it is a
// send/recv (2: not yet known), filled as families are met.
std::vector<std::vector<uint32_t>> Stages(const InstanceTable& t, const std::vector<uint32_t>& members,
                                          const std::vector<CommTiming>& comm, std::vector<uint8_t>* p2p_of_family) {
  std::vector<int> parent(members.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::map<uint32_t, int> first_of_match;
  bool p2p = false;
  for (int m = 0; m < static_cast<int>(members.size()); ++m) {
    const StepInfo& s = t.steps[members[static_cast<size_t>(m)]];
    for (uint32_t i = s.first_instance; i < s.first_instance + s.instance_count && i < comm.size(); ++i) {
      if (comm[i].participants == 0) continue;
      uint8_t& is_p2p = (*p2p_of_family)[t.family[i]];  // 2: not yet known
      if (is_p2p == 2) is_p2p = IsPointToPoint(t.strings.Get(t.family[i])) ? 1 : 0;
      if (is_p2p) {
        p2p = true;
        continue;
      }
      if (comm[i].match == 0) continue;
      const auto [it, fresh] = first_of_match.emplace(comm[i].match, m);
      if (!fresh) parent[static_cast<size_t>(Find(parent, m))] = Find(parent, it->second);
    }
  }
  std::map<int, std::vector<uint32_t>> by_root;
  for (int m = 0; m < static_cast<int>(members.size()); ++m) by_root[Find(parent, m)].push_back(members[static_cast<size_t>(m)]);
  if (!p2p || by_root.size() < 2) return {};
  std::vector<std::vector<uint32_t>> out;
  for (auto& [root, units] : by_root) out.push_back(units);
  auto low = [&](const std::vector<uint32_t>& us) {
    int64_t r = INT64_MAX;
    for (uint32_t u : us) r = std::min(r, t.steps[u].rank.value_or(-1));
    return r;
  };
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) { return low(a) < low(b); });
  return out;
}

std::string RanksText(const std::vector<int64_t>& r) {
  if (r.size() == 1) return "rank " + std::to_string(r[0]);
  bool contiguous = r.back() - r.front() + 1 == static_cast<int64_t>(r.size());
  if (contiguous) return "ranks " + std::to_string(r.front()) + "-" + std::to_string(r.back());
  std::string out = "ranks ";
  for (size_t k = 0; k < r.size(); ++k) out += (k ? ", " : "") + std::to_string(r[k]);
  return out;
}

std::string StageText(const PipelineStage& s) {
  std::string hosts;
  for (const std::string& h : s.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
  return RanksText(s.ranks) + (hosts.empty() ? "" : " (host" + std::string(s.hosts.size() > 1 ? "s " : " ") + hosts + ")");
}

std::optional<PipelineImbalance> Judge(const std::vector<std::vector<int64_t>>& keys, const Pipeline& p, double min_share) {
  const size_t n_stages = keys.size();
  std::vector<int> longest(n_stages, 0);
  std::vector<double> saving, step_ns;
  std::vector<std::vector<double>> loads(n_stages);
  for (const StepLoads& s : p.steps) {
    const size_t top = static_cast<size_t>(std::max_element(s.load.begin(), s.load.end()) - s.load.begin());
    ++longest[top];
    const double mean = std::accumulate(s.load.begin(), s.load.end(), 0.0) / static_cast<double>(n_stages);
    saving.push_back(s.load[top] - mean);
    step_ns.push_back(s.step_ns);
    for (size_t k = 0; k < n_stages; ++k) loads[k].push_back(s.load[k]);
  }
  const size_t top = static_cast<size_t>(std::max_element(longest.begin(), longest.end()) - longest.begin());
  const int steps = static_cast<int>(p.steps.size());
  if (steps < 3 || 4 * longest[top] < 3 * steps) return std::nullopt;
  PipelineImbalance out;
  out.longest = top;
  out.steps = steps;
  out.steps_longest = longest[top];
  out.saving_ns = Median(saving);
  out.step_ns = Median(step_ns);
  out.share = out.step_ns > 0 ? out.saving_ns / out.step_ns : 0;
  if (out.share < min_share) return std::nullopt;
  for (size_t k = 0; k < n_stages; ++k) {
    PipelineStage st;
    st.ranks = keys[k];
    st.hosts.assign(p.hosts[k].begin(), p.hosts[k].end());
    st.load_ns = Median(loads[k]);
    out.stages.push_back(std::move(st));
  }
  return out;
}

}  // namespace

std::vector<PipelineImbalance> FindPipelineImbalance(const InstanceTable& t, const UnitGroups& groups,
                                                     const std::vector<CommTiming>& comm, double min_share) {
  if (t.detail.size() != t.size() || comm.size() != t.size()) return {};
  const std::map<std::pair<int64_t, int64_t>, uint32_t> vertical = VerticalUnits(t);
  std::map<std::vector<std::vector<int64_t>>, Pipeline> pipelines;  // by its stages' ranks
  std::vector<uint8_t> p2p_of_family(t.strings.size(), 2);
  for (const std::vector<uint32_t>& members : groups.members) {
    if (members.size() < 2 || t.steps[members[0]].view != View::kHorizontal) continue;
    const std::vector<std::vector<uint32_t>> stages = Stages(t, members, comm, &p2p_of_family);
    if (stages.empty()) continue;
    std::vector<std::vector<int64_t>> key;
    StepLoads loads;
    bool complete = true;
    for (const std::vector<uint32_t>& stage : stages) {
      std::vector<int64_t> ranks;
      double sum = 0;
      for (uint32_t hu : stage) {
        const StepInfo& h = t.steps[hu];
        const auto it = vertical.find({h.rank.value_or(-1), h.step_index});
        if (it == vertical.end() || !t.steps[it->second].device_detail) {
          complete = false;
          break;
        }
        ranks.push_back(h.rank.value_or(-1));
        sum += ComputeNs(t, it->second);
        const StepInfo& v = t.steps[it->second];
        loads.step_ns = std::max(loads.step_ns, static_cast<double>(v.end_ns - v.start_ns));
      }
      if (!complete) break;
      std::sort(ranks.begin(), ranks.end());
      key.push_back(ranks);
      loads.load.push_back(sum / static_cast<double>(stage.size()));
    }
    if (!complete) continue;
    Pipeline& p = pipelines[key];
    if (p.hosts.empty()) p.hosts.resize(stages.size());
    for (size_t k = 0; k < stages.size(); ++k)
      for (uint32_t hu : stages[k]) p.hosts[k].insert(t.steps[hu].host);
    p.steps.push_back(std::move(loads));
  }
  std::vector<PipelineImbalance> out;
  for (const auto& [key, p] : pipelines) {
    if (auto f = Judge(key, p, min_share)) out.push_back(std::move(*f));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.saving_ns > b.saving_ns; });
  return out;
}

std::string PipelineImbalanceSentence(const PipelineImbalance& p) {
  const PipelineStage& top = p.stages[p.longest];
  std::string others;
  for (size_t k = 0; k < p.stages.size(); ++k) {
    if (k == p.longest) continue;
    others += (others.empty() ? "" : ", ") + FormatNs(p.stages[k].load_ns) + " for " + StageText(p.stages[k]);
  }
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", 100 * p.share);
  return "pipeline stage of " + StageText(top) + " was the longest of " + std::to_string(p.stages.size()) +
         " stages in " + std::to_string(p.steps_longest) + " of " + std::to_string(p.steps) + " steps: " +
         FormatNs(top.load_ns) + " of device compute a step against " + others +
         "; with a batch in flight per stage (as vLLM and SGLang run pipelines) the replica runs at its slowest "
         "stage's pace, and an even split of the work would save about " + FormatNs(p.saving_ns) + " a step (" + share +
         " of a step): compare that stage's GPUs with other replicas' (truffld-fleet), or move layers off it "
         "(vLLM: VLLM_PP_LAYER_PARTITION)";
}

}  // namespace truffld::diagnose
