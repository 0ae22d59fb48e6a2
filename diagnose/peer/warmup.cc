// Host cost of loading GPU code, kept out of the judged tests (see warmup.h).
#include "peer/warmup.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "peer/blame.h"

namespace truffld::diagnose {
namespace {

bool LoadsCode(const InstanceTable& t, uint32_t instance) {
  return instance < t.detail.size() && (t.detail[instance].flags & kDetailLoadsCode);
}

}  // namespace

void MarkWarmupRows(const InstanceTable& t, std::vector<TestRow>& rows) {
  std::set<std::pair<uint32_t, uint32_t>> loading;  // (unit, family) with a loading instance
  for (TestRow& row : rows) {
    if (row.metric != Metric::kHost || row.instance == kFamilyRow || !LoadsCode(t, row.instance)) continue;
    row.warmup = true;
    loading.emplace(row.unit, row.family);
  }
  if (loading.empty()) return;
  for (TestRow& row : rows) {
    if (row.metric == Metric::kHost && row.instance == kFamilyRow && loading.count({row.unit, row.family})) {
      row.warmup = true;
    }
  }
}

std::vector<std::vector<WarmupCost>> WarmupCosts(const InstanceTable& t, const std::vector<TestRow>& rows) {
  std::vector<std::vector<WarmupCost>> out(t.steps.size());
  std::map<std::pair<uint32_t, uint32_t>, WarmupCost> cost;
  for (const TestRow& row : rows) {
    if (!row.warmup || row.instance == kFamilyRow) continue;
    WarmupCost& c = cost[{row.unit, row.family}];
    c.family = row.family;
    ++c.instances;
    c.observed_ns += row.observed;
    const double e = BestExpected(row, nullptr);
    c.expected_ns += std::isnan(e) ? row.observed : std::min<double>(e, row.observed);
  }
  for (auto& [key, c] : cost) {
    const StepInfo& st = t.steps[key.first];
    c.excess_ns = std::max(0.0, c.observed_ns - c.expected_ns);
    c.share = std::min(1.0, c.excess_ns / std::max(1.0, static_cast<double>(st.end_ns - st.start_ns)));
    out[key.first].push_back(c);
  }
  for (auto& list : out) {
    std::sort(list.begin(), list.end(), [](const WarmupCost& a, const WarmupCost& b) {
      return a.excess_ns != b.excess_ns ? a.excess_ns > b.excess_ns : a.family < b.family;
    });
  }
  return out;
}

WarmupTally TallyWarmup(const InstanceTable& t, const std::vector<std::vector<WarmupCost>>& warmup,
                        double min_impact_share) {
  WarmupTally w;
  for (uint32_t u = 0; u < warmup.size() && u < t.steps.size(); ++u) {
    if (warmup[u].empty()) continue;
    const int v = ViewIndex(t.steps[u].view);
    double sum = 0;
    for (const WarmupCost& c : warmup[u]) sum += c.excess_ns;
    ++w.units[v];
    w.material[v] += sum > 0 && sum >= min_impact_share * static_cast<double>(t.steps[u].end_ns - t.steps[u].start_ns);
    w.excess_ns[v] += sum;
  }
  return w;
}

}  // namespace truffld::diagnose
