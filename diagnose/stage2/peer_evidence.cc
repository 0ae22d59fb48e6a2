// Evidence for Stage II and the outputs from the peer-relative Stage I (see peer_evidence.h).
#include "stage2/peer_evidence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "peer/format_ns.h"
#include "peer/impact.h"
#include "stage2/gap_edges.h"
#include "stage2/describe.h"

namespace truffld::diagnose {
namespace {

std::string Fmt(const char* f, double v) { return FormatNumber(f, v); }

std::string Where(const StepInfo& s) {
  return (s.rank ? "rank " + std::to_string(*s.rank) + ", " : std::string()) + "step " +
         std::to_string(s.step_index);
}

std::string RatioClause(const BlamedFamily& b) {
  std::string out;
  auto add = [&](PeerSource s, const std::string& what) {
    const size_t k = static_cast<size_t>(s);
    if (b.ratio[k] <= 0) return;
    out += (out.empty() ? "" : ", ") + Fmt("%.2fx ", b.ratio[k]) + what;
  };
  const int tp = b.peers[static_cast<size_t>(PeerSource::kTp)];
  const int tm = b.peers[static_cast<size_t>(PeerSource::kTime)];
  const int ly = b.peers[static_cast<size_t>(PeerSource::kLayer)];
  add(PeerSource::kTp, "its " + std::to_string(tp) + " TP peer" + (tp == 1 ? "" : "s"));
  add(PeerSource::kTime, std::to_string(tm) + " similar step" + (tm == 1 ? "" : "s"));
  add(PeerSource::kLayer, "its " + std::to_string(ly) + " layer sibling" + (ly == 1 ? "" : "s"));
  return out;
}

// "; it cost the step +1.20 ms (1.5%), 0.80 ms absorbed": what the what-if replay says; empty
// when nothing was replayed.
std::string ImpactClause(double impact_ns, double absorbed_ns, const StepInfo& s) {
  if (std::isnan(impact_ns)) return "";
  const double dur = std::max(1.0, static_cast<double>(s.end_ns - s.start_ns));
  std::string out = "; it cost the step +" + FormatNs(impact_ns) + Fmt(" (%.1f%%)", 100 * std::min(1.0, impact_ns / dur));
  if (AbsorbedWorthSaying(impact_ns, absorbed_ns))
    out += ", " + FormatNs(absorbed_ns) + " absorbed (the device queue or a waiting peer hid it)";
  return out;
}

// How long unit `u`'s device was still busy with the previous step's work from the start of
// the time between steps before it (`gap`: its BetweenStepsInstance): 0 idle throughout; -1 no
// such gap, or no device work in the step (its idling then says nothing).
int64_t BusyInGap(const InstanceTable& t, uint32_t u, int64_t gap) {
  if (gap < 0) return -1;
  const StepInfo& s = t.steps[u];
  bool device = false;
  for (uint32_t k = s.first_instance; k < s.first_instance + s.instance_count && !device; ++k)
    device = t.detail[k].flags & kDetailHasDevice;
  if (!device) return -1;
  const size_t i = static_cast<size_t>(gap);
  return std::clamp<int64_t>(s.prev_device_end - t.start_ns[i], 0, t.end_ns[i] - t.start_ns[i]);
}

// ", as on the group's other 3 ranks" when the unit's logical-step peers' devices idled through
// their own gap too (the whole group waited on the engine); "" otherwise.
std::string GroupIdleClause(const InstanceTable& t, const UnitGroups& g, uint32_t u) {
  if (u >= g.group.size() || g.group[u] >= g.members.size()) return "";
  size_t peers = 0, idle = 0;
  for (uint32_t m : g.members[g.group[u]]) {
    if (m == u) continue;
    ++peers;
    idle += BusyInGap(t, m, BetweenStepsInstance(t, m)) == 0;
  }
  if (peers == 0 || idle == 0) return "";
  if (idle == peers) return peers == 1 ? ", as on the group's other rank" : ", as on the group's other " + std::to_string(peers) + " ranks";
  return ", as on " + std::to_string(idle) + " of the group's other " + std::to_string(peers) + " ranks";
}

// The subject of a family sentence ("aten::mm on rank 2, step 41: device time"); the time no
// operator covers (outside_time.h) is named for what it is, with where it went. `group_idle`:
// GroupIdleClause, said after a between-steps gap the device idled through.
std::string Subject(const InstanceTable& t, const StepInfo& s, const BlamedFamily& b, const std::string& cost,
                    const std::string& group_idle) {
  const std::string& name = t.strings.Get(b.family);
  const uint32_t end = s.first_instance + s.instance_count;
  uint32_t i = s.first_instance;
  while (i < end && t.family[i] != b.family) ++i;
  if (i == end || t.detail.size() != t.size() || !(t.detail[i].flags & kDetailOutside))
    return name + " on " + Where(s) + ": " + cost + " ";
  const std::string rank = s.rank ? "rank " + std::to_string(*s.rank) + ", " : std::string();
  const int64_t from = t.start_ns[i], to = t.end_ns[i];
  if (name == kBetweenStepsFamily) {
    // The device idled from the later of the previous step's end and its device work's end.
    const int64_t busy = BusyInGap(t, t.step[i], i);
    const std::string gap = FormatNs(static_cast<double>(to - from));
    return "the engine's time between steps " + std::to_string(s.step_index - 1) + " and " +
           std::to_string(s.step_index) + (s.rank ? " on rank " + std::to_string(*s.rank) : std::string()) +
           (busy < 0 ? ": "
            : busy > 0 ? " once the device had finished the previous step (of a " + gap + " gap, the device busy for the first " +
                             FormatNs(static_cast<double>(busy)) + "): "
                       : " (" + gap + ", the device idle throughout" + group_idle + "): ");
  }
  if (name == kWholeStepFamily) return "the whole of " + rank + "step " + std::to_string(s.step_index) + ": ";
  if (name == kHostOutsideFamily) {
    return "host time outside every operator range in " + rank + "step " + std::to_string(s.step_index) +
           " (the longest gap " + FormatNs(static_cast<double>(to - from)) + ", " +
           FormatNs(static_cast<double>(from - s.start_ns)) + " into the step" + HostGapEdges(t, s, from, to) + "): ";
  }
  std::string calls;
  for (const NameCount& c : i < t.api_calls.size() ? t.api_calls[i] : std::vector<NameCount>{}) {
    if (calls.size() > 80) break;
    calls += (calls.empty() ? "" : ", ") + t.strings.Get(c.name) + (c.count > 1 ? " x" + std::to_string(c.count) : "");
  }
  return "the calls issued directly under " + rank + "step " + std::to_string(s.step_index) +
         (calls.empty() ? std::string() : " (" + calls + ")") + ", with no operator range around them: " + cost + " ";
}

// "the GPU of rank 0 idled 3.10 ms of step 41's 9.00 ms, against 0.40 ms in similar steps (...)":
// the device idle time (outside_time.h), with what it waited for (impact.h).
std::string IdleSentence(const InstanceTable& t, const StepInfo& s, const BlamedFamily& b, int64_t from, int64_t to) {
  const double dur = std::max(1.0, static_cast<double>(s.end_ns - s.start_ns));
  const char* peers = b.basis == PeerSource::kTp ? " on its tensor-parallel peers"
                      : b.basis == PeerSource::kTime ? " in similar steps" : " expected";
  std::string out = "the GPU" + (s.rank ? " of rank " + std::to_string(*s.rank) : std::string()) + " idled " +
                    FormatNs(b.observed_ns) + " of step " + std::to_string(s.step_index) + "'s " + FormatNs(dur) +
                    ", against " + FormatNs(b.expected_ns) + peers + " (+" + FormatNs(b.excess_ns) +
                    Fmt(", %.1f%% of the step; ", 100 * b.share) + "the longest idle stretch " +
                    FormatNs(static_cast<double>(to - from)) + ", " + FormatNs(static_cast<double>(from - s.start_ns)) +
                    " into the step" + IdleEdges(t, s, from, to) + ")";
  const std::string ratios = RatioClause(b);
  if (!ratios.empty()) out += "; " + ratios;
  if (b.effect_of != kNoString)
    return out + "; an effect, not a cause: the device waited for launches that " + t.strings.Get(b.effect_of) +
           " delayed, whose cost it is (cutting the idle alone would save +" + FormatNs(std::isnan(b.impact_ns) ? 0 : b.impact_ns) + ")";
  if (!std::isnan(b.impact_ns) && b.impact_ns < 0.5 * b.excess_ns)
    return out + "; the device waited for the host's launches (no host cost stands out on its own)" +
           ImpactClause(b.impact_ns, 0, s);
  return out + "; the work after it was launched before the device ran dry: it waited on a dependency (a stream "
               "wait, an event, a synchronisation), not on the host" + ImpactClause(b.impact_ns, b.absorbed_ns, s);
}

std::string FamilySentence(const InstanceTable& t, const StepInfo& s, const BlamedFamily& b,
                           const std::string& group_idle) {
  if (IsDeviceIdleFamily(t.strings, b.family)) {
    for (uint32_t i = s.first_instance; i < s.first_instance + s.instance_count; ++i)
      if (t.family[i] == b.family) return IdleSentence(t, s, b, t.start_ns[i], t.end_ns[i]);
  }
  const bool comm = s.view == View::kHorizontal && b.metric == Metric::kDevice;
  const std::string cost = comm ? "transfer" : (b.metric == Metric::kHost ? "host time" : "device time");
  std::string out = Subject(t, s, b, cost, group_idle) +
                    FormatNs(b.observed_ns) + " vs " + FormatNs(b.expected_ns) + " expected (+" +
                    FormatNs(b.excess_ns) + ", " + Fmt("%.1f%%", 100 * b.share) + " of the step";
  if (b.instances > 1) {
    out += b.significant > 0 ? ", " + std::to_string(b.significant) + " of " + std::to_string(b.instances) + " instances"
                             : ", all " + std::to_string(b.instances) + " instances together";
  }
  out += ")";
  const std::string ratios = RatioClause(b);
  if (!ratios.empty()) out += "; " + ratios;
  const std::string& name = t.strings.Get(b.family);
  const bool host_only = name == kBetweenStepsFamily || name == kHostOutsideFamily ||
                         name == kWholeStepFamily;  // no device side
  if (!comm && !host_only) out += std::string("; ") + (b.metric == Metric::kHost ? "device time" : "host time") +
                    (b.other_metric_normal ? " normal" : " also slow");
  return out + ImpactClause(b.impact_ns, b.absorbed_ns, s);
}

// "; first use of GPU code (warm-up, not judged): aten::mm +4.46 ms (5.6% of the step) and 1
// more": empty when loading cost nothing measurable.
std::string WarmupClause(const InstanceTable& t, const std::vector<WarmupCost>& warmup) {
  double total = 0, share = 0;
  for (const WarmupCost& c : warmup) {
    total += c.excess_ns;
    share += c.share;
  }
  if (warmup.empty() || total <= 0) return "";
  bool graph = false;  // the time between steps before a new CUDA graph's first replay (its capture)
  for (const WarmupCost& c : warmup) graph = graph || t.strings.Get(c.family) == kBetweenStepsFamily;
  return "; first use of GPU code (warm-up, not judged): " + t.strings.Get(warmup[0].family) +
         (warmup.size() > 1 ? " and " + std::to_string(warmup.size() - 1) + " more" : std::string()) +
         (graph ? " loaded code or captured a new CUDA graph" : " loaded code") + " and took +" + FormatNs(total) +
         Fmt(" (%.1f%% of the step)", 100 * std::min(1.0, share));
}

// How the unit was calibrated, when the view has its own null: against the run's steps, or, for
// a long step, against the assumed null with its duration beside its similar steps'.
std::string NullClause(const StepInfo& s, const UnitVerdict& v, const DecisionResult& d, int view) {
  const ViewDecision& vd = d.views[view];
  if (!d.Null(view).Active()) return {};
  if (v.long_step) {
    const double dur = static_cast<double>(s.end_ns - s.start_ns), cycle = dur + v.gap_before_ns;
    return ", judged against the assumed null: the step took " + FormatNs(dur) +
           (v.gap_before_ns > 0 ? " after " + FormatNs(v.gap_before_ns) + " between steps" : std::string()) +
           Fmt(", %.1fx", v.step_ratio) + " the " + FormatNs(cycle / v.step_ratio) +
           " of its similar steps, which the run's own spread (" + NullFiguresText(vd.null_centre, vd.null_scale) +
           ") cannot speak for";
  }
  return ", judged against this run's steps: " + NullFiguresText(vd.null_centre, vd.null_scale) +
         (vd.single_step_blind
              ? "; so wide that even the strongest evidence would reach only q = " + Fmt("%.2g", vd.best_possible_p) +
                    ": a lone slow step of this view cannot be flagged" +
                    (d.long_step_ratio > 0 ? Fmt(" unless it takes %gx its similar steps", d.long_step_ratio) : std::string())
              : std::string());
}

std::string UnitSentence(const StepInfo& s, const UnitVerdict& v, const DecisionResult& d,
                         const std::vector<BlamedFamily>& blamed, const InstanceTable& t,
                         const UnitWait& w, const std::vector<WarmupCost>& warmup,
                         const std::vector<RunFinding>& findings) {
  std::string what = s.phase != "unknown" ? s.phase : "";
  size_t named = 0;
  for (const auto& r : s.requests) named += r != "*";
  if (named) what += (what.empty() ? "" : ", ") + std::to_string(named) + " request" + (named == 1 ? "" : "s");
  if (s.tokens >= 0) what += (what.empty() ? "" : ", ") + std::to_string(s.tokens) + " tokens";
  std::string out = Where(s) + (what.empty() ? "" : " (" + what + ")") + ": ";
  if (v.verdict == Verdict::kInsufficient) return out + "insufficient evidence: " + v.reason;
  const int view = ViewIndex(s.view);
  const double threshold = d.UnitThreshold(view, v);
  out += std::string(VerdictName(v.verdict)) + ", p = " + Fmt("%.2g", v.p_value) + " over " +
         std::to_string(v.tests) + " test" + (v.tests == 1 ? "" : "s") + " (run threshold " +
         (threshold > 0 ? Fmt("%.2g", threshold) : std::string("none reached")) +
         " at a " + Fmt("%g", 100 * d.alpha) + "% false-alarm rate" + NullClause(s, v, d, view) + ")";
  if (!blamed.empty()) {
    double total = 0;
    for (const auto& b : blamed)
      if (b.effect_of == kNoString) total += b.excess_ns;  // an effect's time is its cause's
    out += "; " + t.strings.Get(blamed[0].family) + (blamed.size() > 1 ? " and " + std::to_string(blamed.size() - 1) + " more" : "") +
           " explain +" + FormatNs(total) + Fmt(" (%.1f%% of the step)", 100 * std::min(1.0, total / std::max(1.0, static_cast<double>(s.end_ns - s.start_ns)))) +
           ImpactClause(v.impact_ns, v.absorbed_ns, s);
  }
  if (v.immaterial) {
    const double dur = std::max(1.0, static_cast<double>(s.end_ns - s.start_ns));
    out += "; but " + (v.immaterial_family == kNoString ? std::string("no operator") :
                       t.strings.Get(v.immaterial_family) + (v.immaterial_families > 1
                           ? " and " + std::to_string(v.immaterial_families - 1) + " more" : std::string())) +
           " explain only +" + FormatNs(v.immaterial_excess_ns) + Fmt(" (%.3f%% of the step)", 100 * v.immaterial_excess_ns / dur) +
           (std::isnan(v.impact_ns) ? std::string()
                                    : ", of which the step paid +" + FormatNs(v.impact_ns) +
                                          Fmt(" (%.3f%%)", 100 * v.impact_ns / dur) +
                                          (v.absorbed_ns > 0 ? ", " + FormatNs(v.absorbed_ns) + " absorbed" : std::string())) +
           ", below the " + Fmt("%g", 100 * d.min_impact_share) + "% impact floor: not an alarm";
  }
  if (v.run_finding >= 0 && v.run_finding < static_cast<int>(findings.size())) {
    const RunFinding& f = findings[static_cast<size_t>(v.run_finding)];
    out += "; but host time beyond its peers is how this run behaves (" + std::to_string(f.units) + " of " +
           std::to_string(f.judged) + " steps, typically +" + FormatNs(f.typical_excess_ns) +
           "): reported once as a run finding, not an alarm for this step";
  }
  out += WarmupClause(t, warmup);
  if (!s.operator_detail) out += std::string("; ") + kNoOperatorDetail;
  if (w.waited_ns > 0 && w.waiting_on >= 0) {
    out += "; waited " + FormatNs(w.waited_ns) + " in " + std::to_string(w.collectives) +
           " collectives, " + FormatNs(w.waiting_on_ns) + " of it for rank " + std::to_string(w.waiting_on);
  }
  return out;
}

}  // namespace

std::vector<double> InstancePValues(const InstanceTable& t, const PeerStageResult& r) {
  std::vector<double> p(t.size(), 1.0);
  for (const TestRow& row : r.rows) {
    if (row.instance != kFamilyRow) p[row.instance] = std::min(p[row.instance], row.p_value);
  }
  return p;
}

namespace {

// The peer part of unit `u`'s evidence.
PeerUnitEvidence UnitEvidence(const InstanceTable& t, const PeerStageResult& r, uint32_t u, int tp_peers) {
  const StepInfo& st = t.steps[u];
  const UnitVerdict& v = r.decision.units[u];
  const int view = ViewIndex(st.view);
  PeerUnitEvidence e;
  e.verdict = v.verdict;
  e.p_value = v.p_value;
  e.threshold = r.decision.UnitThreshold(view, v);
  e.long_step_ratio = r.decision.long_step_ratio;
  e.step_ratio = v.step_ratio;
  e.long_step = v.long_step;
  e.null_centre = r.decision.views[view].null_centre;
  e.null_scale = r.decision.views[view].null_scale;
  e.null_blind = r.decision.views[view].single_step_blind;
  e.best_possible_p = r.decision.views[view].best_possible_p;
  e.alpha = r.decision.alpha;
  e.tests = v.tests;
  e.tp_peers = tp_peers;
  e.with_similar_steps = v.with_source[static_cast<size_t>(PeerSource::kTime)];
  e.with_layers = v.with_source[static_cast<size_t>(PeerSource::kLayer)];
  const UnitWait w = u < r.stragglers.waits.size() ? r.stragglers.waits[u] : UnitWait{};
  e.impact_ns = v.impact_ns;
  e.absorbed_ns = v.absorbed_ns;
  e.waited_ns = w.waited_ns;
  e.waiting_on = w.waiting_on;
  static const std::vector<WarmupCost> kNone;
  const std::vector<WarmupCost>& warm = u < r.warmup.size() ? r.warmup[u] : kNone;
  e.summary = UnitSentence(st, v, r.decision, r.blame[u], t, w, warm, r.findings);
  for (const WarmupCost& c : warm) {
    e.warmup.push_back({t.strings.Get(c.family), c.instances, c.observed_ns, c.expected_ns, c.excess_ns, c.share});
  }
  return e;
}

PeerCost CostOf(const InstanceTable& t, const StepInfo& st, const BlamedFamily& b, const std::string& group_idle) {
  PeerCost c;
  c.metric = b.metric;
  c.basis = b.basis;
  c.observed_ns = b.observed_ns;
  c.expected_ns = b.expected_ns;
  c.excess_ns = b.excess_ns;
  c.share = b.share;
  c.impact_ns = b.impact_ns;
  c.absorbed_ns = b.absorbed_ns;
  for (int s = 0; s < kPeerSourceCount; ++s) {
    const double ratio = b.ratio[static_cast<size_t>(s)];
    if (ratio > 0) c.ratios.emplace_back(static_cast<PeerSource>(s), ratio);
  }
  c.sentence = FamilySentence(t, st, b, group_idle);
  if (b.effect_of != kNoString) c.effect_of = t.strings.Get(b.effect_of);
  return c;
}

}  // namespace

std::vector<StepEvidence> BuildPeerEvidence(const InstanceTable& t, const PeerStageResult& r) {
  std::vector<int> tp_peers(t.steps.size(), 0);
  for (const auto& members : r.groups.members) {
    for (uint32_t u : members) tp_peers[u] = static_cast<int>(members.size()) - 1;
  }
  // A family's probability: the smallest p-value of its rows in the unit (1 when untested).
  std::vector<std::unordered_map<uint32_t, double>> min_p(t.steps.size());
  for (const TestRow& row : r.rows) {
    auto [it, fresh] = min_p[row.unit].emplace(row.family, row.p_value);
    if (!fresh) it->second = std::min(it->second, row.p_value);
  }
  std::vector<StepEvidence> ev;
  ev.reserve(t.steps.size());
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    const std::vector<uint32_t> order = FamiliesInOrder(t, u);
    StepEvidence e = DescribeUnit(t, u, order);
    for (size_t k = 0; k < order.size(); ++k) {
      FamilyEvidence& f = e.families[k];
      auto p = min_p[u].find(order[k]);
      f.probability = f.min_instance_probability = p == min_p[u].end() ? 1.0 : p->second;
      f.score = 1.0 - f.probability;
      f.method = "peer";
      for (const BlamedFamily& b : r.blame[u]) f.candidate = f.candidate || order[k] == b.family;
    }
    e.peer = UnitEvidence(t, r, u, tp_peers[u]);
    // Blamed families first, in excess order, each with its cost and sentence.
    std::vector<FamilyEvidence> ordered;
    for (const BlamedFamily& b : r.blame[u]) {
      for (auto& f : e.families) {
        if (f.family != t.strings.Get(b.family)) continue;
        const bool gap = t.strings.Get(b.family) == kBetweenStepsFamily;
        f.cost = CostOf(t, t.steps[u], b, gap ? GroupIdleClause(t, r.groups, u) : std::string());
        ordered.push_back(f);
      }
    }
    for (auto& f : e.families) {
      if (!f.candidate) ordered.push_back(std::move(f));
    }
    e.families = std::move(ordered);
    ev.push_back(std::move(e));
  }
  return ev;
}

}  // namespace truffld::diagnose
