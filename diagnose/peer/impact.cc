// Impact of blamed operators by what-if replay (see impact.h).
#include "peer/impact.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <utility>

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

// The units with blame of each (rank, step), both views: a late peer's own blame.
using PeerUnits = std::map<std::pair<int64_t, int64_t>, std::vector<uint32_t>>;

// The late peers' graphs of one unit's step, by the peer's rank, built once for all of the
// unit's SharePeerCuts calls: a graph depends on the peer's step only, and the entries it wrote
// into the peers' item_of buffer stay (the peers of one step hold disjoint instances).
using PeerGraphs = std::map<int64_t, StepGraph>;

// The peer_entry_shift of `g`'s collectives whose late peer blamed one of `families` (family,
// metric) in the same step: how much earlier that peer's replay with the cuts of those families
// enters the collective, as (item, shift > 0) pairs. `items_u`: g's item per instance
// (BuildStepGraph's item_of); `item_of`: a second such buffer for the peers' graphs, which
// `graphs` (empty for a new unit) holds.
std::vector<std::pair<uint32_t, double>> SharePeerCuts(
    const InstanceTable& t, const std::vector<CommTiming>& comm, const PeerUnits& peers,
    const std::vector<std::vector<const TestRow*>>& by_unit, const std::vector<std::vector<BlamedFamily>>& blame,
    uint32_t u, const std::vector<std::pair<uint32_t, Metric>>& families, const std::vector<uint32_t>& items_u,
    std::vector<uint32_t>* item_of, PeerGraphs* graphs, const StepGraph& g) {
  std::vector<std::pair<uint32_t, double>> out;
  static const StepGraph kNoGraph;
  struct Peer { const StepGraph* graph = &kNoGraph; std::vector<double> shift; };
  std::map<int64_t, Peer> replayed;  // by the late peer's rank
  const int64_t step = t.steps[u].step_index;
  auto matches = [&](const BlamedFamily& b) {
    for (const auto& [family, metric] : families)
      if (b.family == family && b.metric == metric) return true;
    return false;
  };
  std::vector<uint32_t> instances;  // of u's (rank, step) whose collective a late peer bounded
  for (uint32_t su : StepUnits(t, u)) {
    const StepInfo& s = t.steps[su];
    for (uint32_t i = s.first_instance; i < s.first_instance + s.instance_count && i < comm.size(); ++i)
      if (items_u[i] != UINT32_MAX && g.items[items_u[i]].peer_entry != kNoPeerBound) instances.push_back(i);
  }
  for (uint32_t i : instances) {
    const uint32_t k = items_u[i];
    auto cached = replayed.find(comm[i].last_rank);
    if (cached == replayed.end()) {
      Peer p;
      const auto it = peers.find({comm[i].last_rank, step});
      bool shared = false;  // the peer blamed one of the families too
      if (it != peers.end())
        for (uint32_t pu : it->second) shared = shared || std::any_of(blame[pu].begin(), blame[pu].end(), matches);
      if (shared) {
        auto built = graphs->find(comm[i].last_rank);
        if (built == graphs->end())
          built = graphs->emplace(comm[i].last_rank, BuildStepGraph(t, it->second.front(), comm, item_of)).first;
        p.graph = &built->second;
        std::vector<ReplayCut> cuts;
        for (uint32_t pu : it->second)
          for (const BlamedFamily& b : blame[pu]) {
            if (!matches(b)) continue;
            const std::vector<ReplayCut> c = CutsOf(by_unit[pu], b, *item_of);
            cuts.insert(cuts.end(), c.begin(), c.end());
          }
        p.shift = ReplayedDeviceShifts(*p.graph, cuts);
      }
      cached = replayed.emplace(comm[i].last_rank, std::move(p)).first;
    }
    const Peer& p = cached->second;
    double shift = 0;
    for (uint32_t j = 0; j < p.shift.size(); ++j)  // the peer's side: it entered at last_arrival
      if (p.graph->items[j].collective && p.graph->items[j].device_start == comm[i].last_arrival)
        shift = std::max(shift, p.shift[j]);
    if (shift > 0) out.emplace_back(k, shift);
  }
  return out;
}

// The impact of `cuts` on `g`, with the late peers' entries moved by `shifts`.
double JointImpact(const StepGraph& g, const std::vector<std::pair<uint32_t, double>>& shifts,
                   const std::vector<ReplayCut>& cuts) {
  if (shifts.empty()) return ReplayImpactNs(g, cuts);
  StepGraph joint = g;
  for (const auto& [item, shift] : shifts)
    joint.items[item].peer_entry_shift = std::max(joint.items[item].peer_entry_shift, shift);
  return ReplayImpactNs(joint, cuts);
}

// When the unit blames a device idle that its cut does not save and no blamed host family saves
// time, adds the candidate cause whose cut saves most, if it explains half of the idle (impact.h).
// `impact`: what a family's cuts save (the unit's replay, joint with late peers when bounded).
void AdoptIdleCause(const std::vector<const TestRow*>& unit_rows, const std::vector<uint32_t>& item_of,
                    const InstanceTable& t, const std::vector<BlamedFamily>& candidates,
                    const std::function<double(const BlamedFamily&, const std::vector<ReplayCut>&)>& impact,
                    std::vector<BlamedFamily>* blamed, std::vector<ReplayCut>* all) {
  double unexplained = 0;
  for (const BlamedFamily& b : *blamed) {
    const bool idle = IsDeviceIdleFamily(t.strings, b.family);
    if (b.metric == Metric::kHost && !idle && b.impact_ns > 0) return;
    if (idle && b.impact_ns < 0.5 * b.excess_ns) unexplained = std::max(unexplained, b.excess_ns);
  }
  if (unexplained <= 0) return;
  const BlamedFamily* best = nullptr;
  std::vector<ReplayCut> best_cuts;
  double best_impact = 0;
  for (const BlamedFamily& c : candidates) {
    std::vector<ReplayCut> cuts = CutsOf(unit_rows, c, item_of);
    const double saved = impact(c, cuts);
    if (saved > best_impact) best = &c, best_impact = saved, best_cuts = std::move(cuts);
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
    if (b.metric != Metric::kHost || IsDeviceIdleFamily(t.strings, b.family)) continue;
    if (!(b.impact_ns > 0)) continue;
    if (!cause || b.impact_ns > cause->impact_ns) cause = &b;
  }
  if (!cause) return;
  const uint32_t family = cause->family;
  bool any = false;
  for (BlamedFamily& b : *blamed) {
    if (!IsDeviceIdleFamily(t.strings, b.family) || !(b.impact_ns < 0.5 * b.excess_ns)) continue;
    b.effect_of = family;
    any = true;
  }
  if (any)
    std::stable_partition(blamed->begin(), blamed->end(), [](const BlamedFamily& b) { return b.effect_of == kNoString; });
}

}  // namespace

void ReplayBlame(const InstanceTable& t, const std::vector<TestRow>& rows, const std::vector<CommTiming>& comm,
                 DecisionResult* d, std::vector<std::vector<BlamedFamily>>* blame,
                 const std::vector<std::vector<BlamedFamily>>& idle_causes) {
  if (t.detail.size() != t.size()) return;
  std::vector<std::vector<const TestRow*>> by_unit(t.steps.size());
  for (const TestRow& r : rows)
    if (r.unit < by_unit.size() && !(*blame)[r.unit].empty()) by_unit[r.unit].push_back(&r);
  PeerUnits peers;
  for (uint32_t u = 0; u < t.steps.size() && u < blame->size(); ++u)
    if (!(*blame)[u].empty() && t.steps[u].rank) peers[{*t.steps[u].rank, t.steps[u].step_index}].push_back(u);
  std::vector<uint32_t> item_of, peer_item_of;
  for (uint32_t u = 0; u < t.steps.size() && u < blame->size(); ++u) {
    auto& blamed = (*blame)[u];
    if (blamed.empty()) continue;
    const StepGraph g = BuildStepGraph(t, u, comm, &item_of);
    bool bounded = false;  // a collective waited for a late peer: the peer may share the anomaly
    for (const ReplayItem& it : g.items) bounded = bounded || it.peer_entry != kNoPeerBound;
    std::vector<ReplayCut> all;
    std::vector<std::pair<uint32_t, Metric>> families;
    double excess = 0;
    PeerGraphs peer_graphs;
    auto impact = [&](const BlamedFamily& b, const std::vector<ReplayCut>& cuts) {
      return bounded ? JointImpact(g, SharePeerCuts(t, comm, peers, by_unit, *blame, u, {{b.family, b.metric}}, item_of,
                                                    &peer_item_of, &peer_graphs, g), cuts)
                     : ReplayImpactNs(g, cuts);
    };
    for (BlamedFamily& b : blamed) {
      const std::vector<ReplayCut> cuts = CutsOf(by_unit[u], b, item_of);
      b.impact_ns = impact(b, cuts);
      b.absorbed_ns = std::max(0.0, b.excess_ns - b.impact_ns);
      all.insert(all.end(), cuts.begin(), cuts.end());
      families.emplace_back(b.family, b.metric);
    }
    if (u < idle_causes.size() && !idle_causes[u].empty()) {
      AdoptIdleCause(by_unit[u], item_of, t, idle_causes[u], impact, &blamed, &all);
      if (blamed.size() > families.size()) families.emplace_back(blamed.back().family, blamed.back().metric);
    }
    LinkIdleToCause(t, &blamed);
    for (const BlamedFamily& b : blamed)
      if (b.effect_of == kNoString) excess += b.excess_ns;  // an effect's time is its cause's
    UnitVerdict& v = d->units[u];
    v.impact_ns = bounded ? JointImpact(g, SharePeerCuts(t, comm, peers, by_unit, *blame, u, families, item_of,
                                                         &peer_item_of, &peer_graphs, g), all)
                          : ReplayImpactNs(g, all);
    v.absorbed_ns = std::max(0.0, excess - v.impact_ns);
  }
}

}  // namespace truffld::diagnose
