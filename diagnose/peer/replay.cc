// What-if replay of a step (see replay.h).
#include "peer/replay.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <queue>
#include <tuple>
#include <utility>

namespace truffld::diagnose {
namespace {

// Device work that started more than kIdleNs after the work before it ended found the device
// idle; it waited for its launch when that launch came at most kLaunchBoundNs before the device
// ran dry (launch latencies are a few microseconds; queued work was launched far earlier).
constexpr int64_t kIdleNs = 1000;
constexpr int64_t kLaunchBoundNs = 20000;
// A blocking call's own device work (a synchronous copy) may be stamped as ending up to this long
// after the call returned: host and device timestamps come from different clocks.
constexpr int64_t kBlockSkewNs = 2000;

// The host timeline's shift (how much earlier events happen in the replay) as a step function
// of observed time, built in time order.
class HostShift {
 public:
  void Set(int64_t from, double shift) { points_.emplace_back(from, shift); }
  double At(int64_t t) const {
    auto it = std::upper_bound(points_.begin(), points_.end(), t,
                               [](int64_t v, const std::pair<int64_t, double>& p) { return v < p.first; });
    return it == points_.begin() ? 0.0 : std::prev(it)->second;
  }
  double Last() const { return points_.empty() ? 0.0 : points_.back().second; }

 private:
  std::vector<std::pair<int64_t, double>> points_;
};

// Re-times device work in its observed start order, one item at a time, as far as the host
// timeline is known.
class DeviceQueue {
 public:
  // `peer_shift`: how much earlier the peers enter the first collective (a cut they shared).
  DeviceQueue(const StepGraph& g, const std::vector<double>& device_cut, double peer_shift)
      : g_(g), cut_(device_cut), peer_shift_(peer_shift) {
    for (uint32_t i = 0; i < g.items.size(); ++i)
      if (g.items[i].has_device && (!g.items[i].idle || device_cut[i] > 0)) order_.push_back(i);
    std::stable_sort(order_.begin(), order_.end(),
                     [&](uint32_t a, uint32_t b) { return g.items[a].device_start < g.items[b].device_start; });
    replayed_end_.assign(g.items.size(), 0.0);
    replayed_start_.assign(g.items.size(), 0.0);
    int64_t lat = std::numeric_limits<int64_t>::max();
    for (uint32_t i : order_)
      if (!g.items[i].idle) lat = std::min(lat, g.items[i].device_start - g.items[i].launch);
    min_latency_ = lat == std::numeric_limits<int64_t>::max() ? 0 : std::max<int64_t>(0, lat);
  }
  // Replays every item that started at or before `until` (observed).
  void RunUntil(int64_t until, const HostShift& host) {
    while (next_ < order_.size() && g_.items[order_[next_]].device_start <= until) Step(host);
  }
  // Observed and replayed completion of the replayed work that had ended by `t` (observed);
  // {0, 0} when none. `t` must not decrease between calls: work leaves `running_` as it ends.
  std::pair<double, double> CompletedBy(int64_t t) {
    while (!running_.empty() && running_.top().first <= t) {
      const uint32_t i = running_.top().second;
      running_.pop();
      done_obs_ = done_any_ ? std::max(done_obs_, double(g_.items[i].device_end)) : double(g_.items[i].device_end);
      done_rep_ = done_any_ ? std::max(done_rep_, replayed_end_[i]) : replayed_end_[i];
      done_any_ = true;
    }
    return {done_obs_, done_rep_};
  }
  double ReplayedEnd() const { return front_rep_; }
  double ReplayedStart(uint32_t i) const { return replayed_start_[i]; }
  bool Empty() const { return order_.empty(); }

 private:
  void Step(const HostShift& host) {
    const uint32_t i = order_[next_++];
    const ReplayItem& it = g_.items[i];
    const double launch = double(it.launch) - host.At(it.launch);
    const double latency = double(it.device_start - it.launch);
    // Where the queue's front leaves it: the same gap after the (replayed) front; work that
    // waited for its launch may instead fill the gap it left.
    const double gap = started_ ? double(it.device_start - front_obs_) : 0.0;
    const double queue = started_ ? front_rep_ + gap : -1e300;
    double start;
    if (it.idle) {  // what remains of the idle stretch, where the queue's front leaves it
      start = started_ ? queue : double(it.device_start);
      const double end = start + std::max(0.0, double(it.device_end - it.device_start) - cut_[i]);
      replayed_start_[i] = start;
      replayed_end_[i] = end;
      front_obs_ = started_ ? std::max(front_obs_, it.device_end) : it.device_end;
      front_rep_ = started_ ? std::max(front_rep_, end) : end;
      started_ = true;
      return;  // not work a host block can wait for
    }
    // The device waited for this launch: it idled before the work started, and the work was
    // launched (nearly) when the device ran dry, so the launch, not earlier work, let it start.
    const bool launch_bound = !started_ || (gap > double(kIdleNs) && it.launch + kLaunchBoundNs >= front_obs_);
    if (launch_bound) {
      start = std::max(launch + latency, started_ ? front_rep_ : -1e300);
    } else {  // it sat in a queue: it moves with what held it, never before its launch
      start = std::max(launch + double(min_latency_), queue);
    }
    double end = start + std::max(0.0, double(it.device_end - it.device_start) - cut_[i]);
    // A collective a peer entered last ends no earlier than that entry plus the transfer. The
    // peers' entry moves as far as the last collective moved them (they left it together), or
    // as far as their own replay without the same anomaly moved it. This rank keeps its own
    // observed wait (start + duration): a peer's move saves at most what this rank's own work
    // moved, which stays conservative where the replay cannot tell what held the peer.
    if (it.peer_entry != kNoPeerBound) {
      const double entry = double(it.peer_entry) - std::max(peer_shift_, it.peer_entry_shift);
      end = std::max(end, entry + std::max(0.0, double(it.device_end - it.peer_entry) - cut_[i]));
    }
    if (it.collective) peer_shift_ = std::max(0.0, double(it.device_end) - end);
    replayed_end_[i] = end;
    replayed_start_[i] = start;
    running_.emplace(it.device_end, i);
    front_obs_ = started_ ? std::max(front_obs_, it.device_end) : it.device_end;
    front_rep_ = started_ ? std::max(front_rep_, end) : end;
    started_ = true;
  }

  const StepGraph& g_;
  const std::vector<double>& cut_;
  std::vector<uint32_t> order_;
  std::vector<double> replayed_end_, replayed_start_;
  size_t next_ = 0;
  // Replayed work by observed end, earliest first, until CompletedBy passes its end.
  std::priority_queue<std::pair<int64_t, uint32_t>, std::vector<std::pair<int64_t, uint32_t>>, std::greater<>> running_;
  bool done_any_ = false;
  double done_obs_ = 0, done_rep_ = 0;  // latest observed / replayed end of the work ended so far
  int64_t min_latency_ = 0;
  bool started_ = false;
  double peer_shift_;      // how much earlier the last collective ended: its peers' shift too
  int64_t front_obs_ = 0;  // latest observed end so far
  double front_rep_ = 0;   // latest replayed end so far
};

// A host event that changes the shift: a cut (at its operator's host start) or a block (at the
// end of an operator whose calls waited on the device).
struct HostPoint {
  int64_t time = 0;
  bool block = false;
  uint32_t item = 0;
  double cut = 0;
  // Order at the same time: the block of an operator that ends there (it came first), then cuts
  // (of operators, or of a gap after that operator, starting there), then the block of an
  // operator that starts and ends there (after its own cut).
  int Phase(const StepGraph& g) const {
    if (!block) return 1;
    return g.items[item].host_start < time ? 0 : 2;
  }
};

// When the step holds the time since the previous step (an item whose host range starts before
// the step's), the previous step's device work that ran past its host end is an item too: it
// was launched before any cut, so it stays, and this step's device work cannot start before it
// ends (a shorter pause between steps gains nothing while the device was still busy).
void AddPreviousTail(const InstanceTable& t, const std::vector<uint32_t>& units, StepGraph* g) {
  int64_t tail = 0, from = std::numeric_limits<int64_t>::max();
  for (uint32_t u : units) tail = std::max(tail, t.steps[u].prev_device_end);
  for (const ReplayItem& it : g->items) from = std::min(from, it.host_start);
  if (tail <= 0 || from >= g->start || tail <= from) return;
  ReplayItem it;
  it.host_start = it.host_end = from - 1;
  it.has_device = true;
  it.launch = from - 1;
  it.device_start = from;
  it.device_end = tail;
  g->items.push_back(it);
}

// The replay item of instance `i` of a step of rank `rank`: an operator (its host range, its own
// device work and launch, its collective's peer bound), a CUDA-graph node (no host range), or
// the device's idle stretch (no host range, no launch).
ReplayItem ItemOf(const InstanceTable& t, uint32_t i, const std::vector<CommTiming>& comm, int64_t rank) {
  const InstanceDetail& d = t.detail[i];
  ReplayItem it;
  it.group_cost = d.flags & kDetailGroupCost;
  if (d.flags & kDetailIdle) {
    it.idle = it.has_device = true;
    it.host_start = it.host_end = it.launch = it.device_start = t.start_ns[i];
    it.device_end = t.end_ns[i];
    return it;
  }
  const bool replayed = d.flags & kDetailReplay;  // no host range of its own
  it.graph_launch = replayed ? d.graph_launch : 0;
  it.host_start = replayed ? d.device_start : t.start_ns[i];
  it.host_end = replayed ? d.device_start : std::max(t.start_ns[i], t.end_ns[i]);
  it.wait_ns = replayed ? 0 : static_cast<int64_t>(d.wait_ns);
  it.has_device = (d.flags & kDetailHasDevice) && d.device_end >= d.device_start && d.device_start > 0;
  if (!it.has_device) return it;
  it.device_start = d.device_start;
  it.device_end = d.device_end;
  const double lat = t.features[i][kLaunchLatencyNs];
  const int64_t launch = d.device_start - static_cast<int64_t>(std::isfinite(lat) ? lat : 0);
  it.launch = std::clamp(launch, std::min(it.host_start, d.device_start), d.device_start);
  const CommTiming* c = i < comm.size() ? &comm[i] : nullptr;
  it.collective = c && c->participants > 1;
  if (c && c->participants > 1 && c->last_rank != rank && c->wait_ns > 0 && c->last_arrival <= d.device_end)
    it.peer_entry = c->last_arrival;
  return it;
}

// Per instance of `units` (in order, numbered from 0): the number of the first one with the same
// (start, end, family), itself when none comes before it.
std::vector<uint32_t> FirstOfEqual(const InstanceTable& t, const std::vector<uint32_t>& units) {
  std::vector<std::pair<std::tuple<int64_t, int64_t, uint32_t>, uint32_t>> keys;
  for (uint32_t u : units) {
    const StepInfo& s = t.steps[u];
    for (uint32_t i = s.first_instance; i < s.first_instance + s.instance_count; ++i)
      keys.push_back({std::make_tuple(t.start_ns[i], t.end_ns[i], t.family[i]), static_cast<uint32_t>(keys.size())});
  }
  std::vector<uint32_t> first(keys.size());
  std::sort(keys.begin(), keys.end());  // equal keys by number: the first of each run comes first
  for (size_t k = 0; k < keys.size(); ++k)
    first[keys[k].second] = k > 0 && keys[k].first == keys[k - 1].first ? first[keys[k - 1].second] : keys[k].second;
  return first;
}

}  // namespace

int64_t ObservedCompletion(const StepGraph& g) {
  int64_t end = g.host_end;
  for (const ReplayItem& it : g.items)
    if (it.has_device && !it.idle) end = std::max(end, it.device_end);
  return end;
}

namespace {

// The replay itself: the completion, and per item its replayed device start (into `starts` when
// not null).
double Replay(const StepGraph& g, const std::vector<ReplayCut>& cuts, std::vector<double>* starts) {
  std::vector<double> host_cut(g.items.size(), 0.0), device_cut(g.items.size(), 0.0);
  for (const ReplayCut& c : cuts) {
    if (c.item >= g.items.size()) continue;
    // The idle stretch is the device's time, whichever metric measured it.
    (g.items[c.item].idle ? device_cut : host_cut)[c.item] += std::max(0.0, c.host_ns);
    device_cut[c.item] += std::max(0.0, c.device_ns);
  }
  std::vector<HostPoint> points;
  for (uint32_t i = 0; i < g.items.size(); ++i) {
    if (host_cut[i] > 0) points.push_back({g.items[i].host_start, false, i, host_cut[i]});
    if (g.items[i].wait_ns > 0) points.push_back({g.items[i].host_end, true, i, 0});
  }
  std::stable_sort(points.begin(), points.end(), [&](const HostPoint& a, const HostPoint& b) {
    return a.time != b.time ? a.time < b.time : a.Phase(g) < b.Phase(g);
  });
  double shared = 0;  // host time cut from costs every peer paid too
  for (uint32_t i = 0; i < g.items.size(); ++i)
    if (g.items[i].group_cost) shared += host_cut[i];
  HostShift host;
  DeviceQueue device(g, device_cut, shared);
  double s = 0;
  int64_t until = std::numeric_limits<int64_t>::min();  // CompletedBy's time never decreases
  for (const HostPoint& p : points) {
    if (!p.block) {
      s += p.cut;
      host.Set(p.time, s);
      continue;
    }
    // The block ended when the awaited work did: the host leaves at the later of its own
    // arrival (earlier by s) and that work's replayed end (earlier by d). The awaited work
    // includes the blocking operator's own device work when it ended with the call.
    const ReplayItem& blocked = g.items[p.item];
    int64_t t = p.time;
    if (blocked.has_device && blocked.device_end > t && blocked.device_end <= t + kBlockSkewNs) t = blocked.device_end;
    until = std::max(until, t);
    device.RunUntil(until, host);
    // With E = max(arrival, completion + r) (r: the call's return after the work ended), the
    // new shift is min(s + wait, d); with no completed work to wait for, nothing is known: s.
    const auto [obs, rep] = device.CompletedBy(until);
    const double d = obs > 0 ? obs - rep : s;
    s = std::max(0.0, std::min(s + double(g.items[p.item].wait_ns), d));
    host.Set(p.time, s);
  }
  device.RunUntil(std::numeric_limits<int64_t>::max(), host);
  double end = double(g.host_end) - host.Last();
  if (!device.Empty()) end = std::max(end, device.ReplayedEnd());
  if (starts) {
    starts->assign(g.items.size(), 0.0);
    for (uint32_t i = 0; i < g.items.size(); ++i)
      if (g.items[i].has_device) (*starts)[i] = device.ReplayedStart(i);
  }
  return end;
}

}  // namespace

int64_t ReplayedCompletion(const StepGraph& g, const std::vector<ReplayCut>& cuts) {
  return static_cast<int64_t>(std::llround(Replay(g, cuts, nullptr)));
}

std::vector<double> ReplayedDeviceShifts(const StepGraph& g, const std::vector<ReplayCut>& cuts) {
  std::vector<double> starts;
  Replay(g, cuts, &starts);
  for (uint32_t i = 0; i < g.items.size(); ++i)
    starts[i] = g.items[i].has_device && !g.items[i].idle
                    ? std::max(0.0, double(g.items[i].device_start) - starts[i])
                    : 0.0;
  return starts;
}

double ReplayImpactNs(const StepGraph& g, const std::vector<ReplayCut>& cuts) {
  return std::max<double>(0.0, double(ObservedCompletion(g) - ReplayedCompletion(g, cuts)));
}

std::vector<uint32_t> StepUnits(const InstanceTable& t, uint32_t unit) {
  std::vector<uint32_t> units;
  if (unit >= t.steps.size()) return units;
  const StepInfo& st = t.steps[unit];
  for (uint32_t u = unit > 0 ? unit - 1 : 0; u < t.steps.size() && u <= unit + 1; ++u)
    if (t.steps[u].rank == st.rank && t.steps[u].step_index == st.step_index) units.push_back(u);
  return units;
}

StepGraph BuildStepGraph(const InstanceTable& t, uint32_t unit, const std::vector<CommTiming>& comm,
                         std::vector<uint32_t>* item_of) {
  StepGraph g;
  if (item_of && item_of->size() != t.size()) item_of->assign(t.size(), UINT32_MAX);
  if (unit >= t.steps.size() || t.detail.size() != t.size()) return g;
  const StepInfo& st = t.steps[unit];
  g.start = st.start_ns;
  g.host_end = st.end_ns;
  const std::vector<uint32_t> units = StepUnits(t, unit);
  const std::vector<uint32_t> first_of = FirstOfEqual(t, units);
  std::vector<uint32_t> item_at(first_of.size());  // per instance of `units`, in order: its item
  std::vector<int64_t> host_starts;   // of the operators with a host range
  std::vector<uint32_t> graph_nodes;  // items rebuilt from CUDA-graph replays
  uint32_t seq = 0;
  for (uint32_t u : units) {
    const StepInfo& s = t.steps[u];
    g.start = std::min(g.start, s.start_ns);
    g.host_end = std::max(g.host_end, s.end_ns);
    for (uint32_t i = s.first_instance; i < s.first_instance + s.instance_count; ++i, ++seq) {
      if (first_of[seq] != seq) {  // the same operator seen in the other view
        item_at[seq] = item_at[first_of[seq]];
        if (item_of) (*item_of)[i] = item_at[seq];
        continue;
      }
      const ReplayItem it = ItemOf(t, i, comm, st.rank.value_or(-1));
      if (!it.idle) {  // the idle stretch is neither a graph node nor a host range
        if (t.detail[i].flags & kDetailReplay)
          graph_nodes.push_back(static_cast<uint32_t>(g.items.size()));
        else
          host_starts.push_back(it.host_start);
      }
      item_at[seq] = static_cast<uint32_t>(g.items.size());
      if (item_of) (*item_of)[i] = item_at[seq];
      g.items.push_back(it);
    }
  }
  AddPreviousTail(t, units, &g);
  // A CUDA graph's nodes were launched together by one graph launch: its call's start
  // (InstanceDetail::graph_launch) is every node's launch, so the nodes queue behind each other
  // and move with the host only through it. A node group without it (an older reader's table)
  // takes the last operator that began before the step's first node ran (else the step start).
  if (graph_nodes.empty()) return g;
  int64_t first = std::numeric_limits<int64_t>::max();
  for (uint32_t k : graph_nodes) first = std::min(first, g.items[k].device_start);
  int64_t fallback = g.start;
  for (int64_t h : host_starts)
    if (h <= first) fallback = std::max(fallback, h);
  for (uint32_t k : graph_nodes) {
    ReplayItem& it = g.items[k];
    it.launch = std::min(it.device_start, it.graph_launch > 0 ? std::max(g.start, it.graph_launch) : fallback);
  }
  return g;
}

}  // namespace truffld::diagnose
