// Impact of blamed operators by what-if replay (see impact.h).
#include "peer/impact.h"

#include <algorithm>
#include <cmath>

#include "peer/replay.h"

namespace truffld::diagnose {
namespace {

// The replay cuts that remove blamed family `b`'s excess from its unit's graph.
std::vector<ReplayCut> CutsOf(const std::vector<const TestRow*>& unit_rows, const BlamedFamily& b,
                              const std::vector<uint32_t>& item_of) {
  struct Share { uint32_t item; double weight; double observed; };
  std::vector<Share> shares;
  double weights = 0, observed = 0;
  for (const TestRow* r : unit_rows) {
    if (r->instance == kFamilyRow || r->family != b.family || r->metric != b.metric) continue;
    const uint32_t item = item_of[r->instance];
    if (item == UINT32_MAX) continue;
    const double e = BestExpected(*r, nullptr);
    const double w = std::isnan(e) ? 0.0 : std::max(0.0, double(r->observed) - e);
    shares.push_back({item, w, std::max(0.0, double(r->observed))});
    weights += w;
    observed += shares.back().observed;
  }
  std::vector<ReplayCut> cuts;
  if (b.excess_ns <= 0) return cuts;
  for (const Share& s : shares) {
    const double part = weights > 0 ? s.weight / weights : (observed > 0 ? s.observed / observed : 0.0);
    // An instance gives up at most what it cost.
    const double cut = std::min(s.observed, part * b.excess_ns);
    if (cut <= 0) continue;
    ReplayCut c;
    c.item = s.item;
    (b.metric == Metric::kHost ? c.host_ns : c.device_ns) = cut;
    cuts.push_back(c);
  }
  return cuts;
}

// When the unit blames a device idle that its cut does not save and no blamed host family saves
// time, adds the candidate cause whose cut saves most, if it explains half of the idle (impact.h).
void AdoptIdleCause(const StepGraph& g, const std::vector<const TestRow*>& unit_rows, const std::vector<uint32_t>& item_of,
                    const InstanceTable& t, const std::vector<BlamedFamily>& candidates, std::vector<BlamedFamily>* blamed,
                    std::vector<ReplayCut>* all) {
  double unexplained = 0;
  for (const BlamedFamily& b : *blamed) {
    const bool idle = t.strings.Get(b.family) == kDeviceIdleFamily;
    if (b.metric == Metric::kHost && !idle && b.impact_ns > 0) return;
    if (idle && b.impact_ns < 0.5 * b.excess_ns) unexplained = std::max(unexplained, b.excess_ns);
  }
  if (unexplained <= 0) return;
  const BlamedFamily* best = nullptr;
  std::vector<ReplayCut> best_cuts;
  double best_impact = 0;
  for (const BlamedFamily& c : candidates) {
    std::vector<ReplayCut> cuts = CutsOf(unit_rows, c, item_of);
    const double impact = ReplayImpactNs(g, cuts);
    if (impact > best_impact) best = &c, best_impact = impact, best_cuts = std::move(cuts);
  }
  if (!best || best_impact < 0.5 * unexplained) return;
  BlamedFamily cause = *best;
  cause.impact_ns = best_impact;
  cause.absorbed_ns = std::max(0.0, cause.excess_ns - best_impact);
  blamed->push_back(cause);
  all->insert(all->end(), best_cuts.begin(), best_cuts.end());
}

// Names the host family each device-idle family waited for (impact.h) and lists effects last.
void LinkIdleToCause(const InstanceTable& t, std::vector<BlamedFamily>* blamed) {
  const BlamedFamily* cause = nullptr;
  for (const BlamedFamily& b : *blamed) {
    if (b.metric != Metric::kHost || t.strings.Get(b.family) == kDeviceIdleFamily) continue;
    if (!(b.impact_ns > 0)) continue;
    if (!cause || b.impact_ns > cause->impact_ns) cause = &b;
  }
  if (!cause) return;
  const uint32_t family = cause->family;
  bool any = false;
  for (BlamedFamily& b : *blamed) {
    if (t.strings.Get(b.family) != kDeviceIdleFamily || !(b.impact_ns < 0.5 * b.excess_ns)) continue;
    b.effect_of = family;
    any = true;
  }
  if (any) std::stable_partition(blamed->begin(), blamed->end(), [](const BlamedFamily& b) { return b.effect_of == kNoString; });
}

}  // namespace

void ReplayBlame(const InstanceTable& t, const std::vector<TestRow>& rows, const std::vector<CommTiming>& comm,
                 DecisionResult* d, std::vector<std::vector<BlamedFamily>>* blame,
                 const std::vector<std::vector<BlamedFamily>>& idle_causes) {
  if (t.detail.size() != t.size()) return;
  std::vector<std::vector<const TestRow*>> by_unit(t.steps.size());
  for (const TestRow& r : rows)
    if (r.unit < by_unit.size() && !(*blame)[r.unit].empty()) by_unit[r.unit].push_back(&r);
  std::vector<uint32_t> item_of;
  for (uint32_t u = 0; u < t.steps.size() && u < blame->size(); ++u) {
    auto& blamed = (*blame)[u];
    if (blamed.empty()) continue;
    const StepGraph g = BuildStepGraph(t, u, comm, &item_of);
    std::vector<ReplayCut> all;
    double excess = 0;
    for (BlamedFamily& b : blamed) {
      const std::vector<ReplayCut> cuts = CutsOf(by_unit[u], b, item_of);
      b.impact_ns = ReplayImpactNs(g, cuts);
      b.absorbed_ns = std::max(0.0, b.excess_ns - b.impact_ns);
      all.insert(all.end(), cuts.begin(), cuts.end());
    }
    if (u < idle_causes.size() && !idle_causes[u].empty())
      AdoptIdleCause(g, by_unit[u], item_of, t, idle_causes[u], &blamed, &all);
    LinkIdleToCause(t, &blamed);
    for (const BlamedFamily& b : blamed)
      if (b.effect_of == kNoString) excess += b.excess_ns;  // an effect's time is its cause's
    UnitVerdict& v = d->units[u];
    v.impact_ns = ReplayImpactNs(g, all);
    v.absorbed_ns = std::max(0.0, excess - v.impact_ns);
  }
}

}  // namespace truffld::diagnose
