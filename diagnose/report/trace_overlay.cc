// The diagnosis as trace slices (see trace_overlay.h).
#include "report/trace_overlay.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

namespace truffld::diagnose {
namespace {

double Micros(double ns) { return std::round(ns) / 1000.0; }

// Tracks in display order: (rank, view, kind, lane), named once every slice has its lane.
struct TrackKey {
  int64_t rank;  // -1: no rank
  int view;      // 0 vertical, 1 horizontal
  int kind;      // 0 units, 1 faulty-operator markers
  bool operator<(const TrackKey& o) const { return std::tie(rank, view, kind) < std::tie(o.rank, o.view, o.kind); }
};

std::string TrackName(const TrackKey& k, uint32_t lane) {
  std::string s = (k.rank >= 0 ? "rank " + std::to_string(k.rank) : std::string("no rank")) +
                  (k.view ? " horizontal" : " vertical") + (k.kind ? ": faulty operators" : "");
  return lane ? s + " (overlap " + std::to_string(lane) + ")" : s;
}

nlohmann::json FaultyJson(const FaultyOperator& f) {
  nlohmann::json j = {{"family", f.family}, {"instances", f.instances}};
  if (f.cost) {
    const PeerCost& c = *f.cost;
    j["metric"] = MetricName(c.metric);
    j["basis"] = PeerSourceName(c.basis);
    j["observed_us"] = Micros(c.observed_ns);
    j["expected_us"] = Micros(c.expected_ns);
    j["excess_us"] = Micros(c.excess_ns);
    j["share_of_step"] = c.share;
    if (!c.sentence.empty()) j["evidence"] = c.sentence;
  }
  return j;
}

nlohmann::json UnitArgs(const StepDiagnosis& d, const StepInfo& s) {
  const StepEvidence& e = d.evidence;
  nlohmann::json a = {{"step_index", s.step_index}, {"view", ViewName(s.view)}, {"label", VerdictName(d.label)},
                      {"step", s.step_name}, {"phase", s.phase}};
  a["rank"] = s.rank ? nlohmann::json(*s.rank) : nlohmann::json(nullptr);
  if (e.peer && !e.peer->summary.empty()) a["evidence"] = e.peer->summary;
  double excess = 0;
  nlohmann::json faulty = nlohmann::json::array();
  for (const FaultyOperator& f : d.faulty) {
    excess += f.ExcessNs();
    faulty.push_back(FaultyJson(f));
  }
  if (!d.faulty.empty()) {
    a["excess_us"] = Micros(excess);
    a["faulty"] = std::move(faulty);
  }
  if (e.peer) {
    a["p_value"] = e.peer->p_value;
    a["threshold"] = e.peer->threshold;
    a["false_alarm_rate"] = e.peer->alpha;
    if (e.peer->waited_ns > 0) {
      a["waited_us"] = Micros(e.peer->waited_ns);
      if (e.peer->waiting_on >= 0) a["waiting_on_rank"] = e.peer->waiting_on;
    }
  }
  return a;
}

// The instances of `family` in step s, longest first, at most kMaxMarkersPerFamily.
std::vector<uint32_t> MarkedInstances(const InstanceTable& t, const StepInfo& s, const std::string& family) {
  std::vector<uint32_t> out;
  for (uint32_t i = s.first_instance; i < s.first_instance + s.instance_count; ++i)
    if (t.strings.Get(t.family[i]) == family) out.push_back(i);
  std::stable_sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) {
    return t.end_ns[a] - t.start_ns[a] > t.end_ns[b] - t.start_ns[b];
  });
  if (out.size() > kMaxMarkersPerFamily) out.resize(kMaxMarkersPerFamily);
  std::sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) { return t.start_ns[a] < t.start_ns[b]; });
  return out;
}

struct Pending {
  TrackKey key;
  OverlaySlice slice;
};

void AddMarkers(const InstanceTable& t, const StepInfo& s, const StepDiagnosis& d, const TrackKey& unit,
                std::vector<Pending>* out, TraceOverlay* o) {
  for (const FaultyOperator& f : d.faulty) {
    const std::vector<uint32_t> marked = MarkedInstances(t, s, f.family);
    for (size_t k = 0; k < marked.size(); ++k) {
      const uint32_t i = marked[k];
      const bool replay = !t.detail.empty() && (t.detail[i].flags & kDetailReplay);
      Pending p{{unit.rank, unit.view, 1}, {}};
      p.slice.start_ns = t.start_ns[i];
      p.slice.end_ns = std::max(t.start_ns[i], t.end_ns[i]);
      p.slice.name = "faulty " + f.family;
      p.slice.marker = true;
      p.slice.args = FaultyJson(f);
      p.slice.args["step_index"] = s.step_index;
      p.slice.args["view"] = ViewName(s.view);
      p.slice.args["instance_us"] = Micros(double(p.slice.end_ns - p.slice.start_ns));
      p.slice.args["marked"] = std::to_string(k + 1) + " of " + std::to_string(marked.size()) +
                               (size_t(f.instances) > marked.size() ? " (the longest of " + std::to_string(f.instances) + ")" : "");
      // Neither a CUDA-graph replay nor the time no operator covers has a slice to point at.
      p.slice.outside = !t.detail.empty() && (t.detail[i].flags & kDetailOutside);
      if (!replay && !p.slice.outside) {
        p.slice.target = int32_t(o->targets.size());
        o->targets.push_back({p.slice.start_ns, p.slice.end_ns, f.family, s.rank});
      }
      out->push_back(std::move(p));
      ++o->markers;
    }
  }
}

// Gives each pending slice its track (key + lane) and names the tracks.
void PlaceOnTracks(std::vector<Pending> pending, TraceOverlay* o) {
  std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
    if (a.key < b.key || b.key < a.key) return a.key < b.key;
    return a.slice.start_ns < b.slice.start_ns;
  });
  std::map<std::tuple<int64_t, int, int, uint32_t>, uint32_t> ids;  // (track key, lane) -> track
  for (size_t begin = 0; begin < pending.size();) {
    size_t end = begin;
    std::vector<std::pair<int64_t, int64_t>> spans;
    while (end < pending.size() && !(pending[begin].key < pending[end].key) && !(pending[end].key < pending[begin].key)) {
      spans.emplace_back(pending[end].slice.start_ns, pending[end].slice.end_ns);
      ++end;
    }
    const std::vector<uint32_t> lanes = NestingLanes(spans);
    for (size_t k = begin; k < end; ++k) {
      const TrackKey& key = pending[k].key;
      auto [it, fresh] = ids.emplace(std::make_tuple(key.rank, key.view, key.kind, lanes[k - begin]),
                                     uint32_t(o->tracks.size()));
      if (fresh) o->tracks.push_back({TrackName(pending[k].key, lanes[k - begin])});
      pending[k].slice.track = it->second;
      o->slices.push_back(std::move(pending[k].slice));
    }
    begin = end;
  }
}

}  // namespace

std::vector<uint32_t> NestingLanes(const std::vector<std::pair<int64_t, int64_t>>& iv) {
  std::vector<uint32_t> order(iv.size()), lane_of(iv.size(), 0);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return iv[a].first != iv[b].first ? iv[a].first < iv[b].first : iv[a].second > iv[b].second;
  });
  std::vector<std::vector<int64_t>> lanes;  // open ends per lane (a stack)
  for (uint32_t k : order) {
    const auto [start, end] = iv[k];
    size_t lane = 0;
    for (;; ++lane) {
      if (lane == lanes.size()) lanes.emplace_back();
      auto& stack = lanes[lane];
      while (!stack.empty() && stack.back() <= start) stack.pop_back();
      if (stack.empty() || end <= stack.back()) {
        stack.push_back(end);
        break;
      }
    }
    lane_of[k] = uint32_t(lane);
  }
  return lane_of;
}

TraceOverlay BuildTraceOverlay(const std::vector<StepDiagnosis>& diagnoses, const InstanceTable& t) {
  TraceOverlay o;
  std::map<StepKey, uint32_t> step_of;
  for (uint32_t s = 0; s < t.steps.size(); ++s) step_of.emplace(KeyOf(t.steps[s]), s);
  std::map<std::pair<int64_t, int64_t>, StepVerdict> verdicts;  // (rank, start) -> verdicts
  std::vector<Pending> pending;
  for (const StepDiagnosis& d : diagnoses) {
    const StepEvidence& e = d.evidence;
    auto it = step_of.find(StepKey{e.rank.value_or(-1), e.step_index, e.view == View::kHorizontal});
    if (it == step_of.end()) continue;
    const StepInfo& s = t.steps[it->second];
    StepVerdict& v = verdicts[{s.rank.value_or(-1), s.start_ns}];
    v.start_ns = s.start_ns;
    v.rank = s.rank;
    (s.view == View::kHorizontal ? v.horizontal : v.vertical) = VerdictName(d.label);
    const bool insufficient = d.label == Verdict::kInsufficient;
    if (!d.abnormal && !insufficient) continue;
    const TrackKey unit{s.rank.value_or(-1), s.view == View::kHorizontal, 0};
    Pending p{unit, {}};
    p.slice.start_ns = s.start_ns;
    p.slice.end_ns = std::max(s.start_ns, s.end_ns);
    p.slice.name = d.abnormal ? "abnormal" : "insufficient evidence";
    if (insufficient) p.slice.cname = "grey";
    p.slice.args = UnitArgs(d, s);
    pending.push_back(std::move(p));
    ++(d.abnormal ? o.units : o.insufficient);
    if (d.abnormal) AddMarkers(t, s, d, unit, &pending, &o);
  }
  PlaceOnTracks(std::move(pending), &o);
  for (auto& [k, v] : verdicts) o.steps.push_back(std::move(v));
  return o;
}

}  // namespace truffld::diagnose
