// MergeResult's accessors, the counters' sums, and the clock fit.
#include <algorithm>
#include <cmath>
#include <functional>

#include "truffld/merge/pipeline.h"

namespace truffld::merge {

namespace {
void AddTo(Count* a, Count b) { *a += b; }
template <class Key>
void AddTo(FirstSeenCounts<Key>* a, const FirstSeenCounts<Key>& b) { a->Add(b); }
}  // namespace

void MergeCounters::Add(const MergeCounters& o) {
#define TRUFFLD_COUNTER_ADD(name, type, severity, description) AddTo(&name, o.name);
  TRUFFLD_MERGE_COUNTERS(TRUFFLD_COUNTER_ADD)
#undef TRUFFLD_COUNTER_ADD
}

uint32_t LookUpSide(const NodeSideTable& t, uint32_t i, uint32_t none) {
  auto it = std::lower_bound(t.begin(), t.end(), i, [](const std::pair<uint32_t, uint32_t>& e, uint32_t v) { return e.first < v; });
  return it != t.end() && it->first == i ? it->second : none;
}

StrId MergeResult::Payload(const Node& n) const {
  if (n.has_payload) return LookUpSide(node_payloads, uint32_t(&n - nodes.data()), kNoStr);
  const Event* e = EventOf(n);
  return e ? files[n.file].Extra(*e).payload : kNoStr;
}

bool MergeResult::InRequestSet(uint32_t set, std::string_view q) const {
  if (set == kAllRequests || set >= request_sets.size()) return true;
  for (const auto& id : request_sets[set])
    if (id == q || id == "*") return true;
  return false;
}

uint64_t MalformedLines(const IngestStats& s) {
  uint64_t n = 0;
  for (const auto& [key, v] : s.counts.items)
    if (key.id < IngestStats::kKeptBase && InfoOf(Problem(key.id)).counts_as == CountsAs::kMalformedLine) n += v;
  return n;
}

uint64_t NegativeDurations(const IngestStats& s) {
  uint64_t n = 0;
  for (const auto& [key, v] : s.counts.items)
    if (key.id < IngestStats::kKeptBase && InfoOf(Problem(key.id)).counts_as == CountsAs::kNegativeDuration) n += v;
  return n;
}

ClockMap FitClockMap(const std::vector<std::pair<TimeNs, TimeNs>>& pairs, std::string* method) {
  ClockMap map;
  if (pairs.empty()) {
    *method = "none";
    return map;
  }
  // (monotonic, realtime - monotonic) for the pairs whose difference fits in int64 (hostile
  // input may not), in monotonic order.
  std::vector<std::pair<TimeNs, TimeNs>> p;
  for (auto [rt, mono] : pairs) {
    TimeNs diff;
    if (!__builtin_sub_overflow(rt, mono, &diff)) p.emplace_back(mono, diff);
  }
  if (p.empty()) {
    *method = "none";
    return map;
  }
  std::sort(p.begin(), p.end());
  std::vector<TimeNs> dm;
  for (const auto& q : p) dm.push_back(q.second);
  std::nth_element(dm.begin(), dm.begin() + dm.size() / 2, dm.end());
  map.offset = dm[dm.size() / 2];
  map.ref = 0;
  *method = "clock_sync_median";
  const double span = double(p.back().first) - double(p.front().first);
  if (p.size() < 3 || span < 1e10) return map;
  // Theil-Sen over at most ~256 evenly spaced pairs (a day of 60 s CLOCK records is 1440).
  std::vector<size_t> idx;
  const size_t step = std::max<size_t>(1, p.size() / 256);
  for (size_t i = 0; i < p.size(); i += step) idx.push_back(i);
  std::vector<double> slopes;
  for (size_t a = 0; a < idx.size(); ++a)
    for (size_t b = a + 1; b < idx.size(); ++b) {
      const auto& x = p[idx[a]];
      const auto& y = p[idx[b]];
      const double dx = double(y.first) - double(x.first);
      if (dx < 1e9) continue;  // pairs under a second apart say nothing about drift
      slopes.push_back((double(y.second) - double(x.second)) / dx);
    }
  if (slopes.empty()) return map;
  std::nth_element(slopes.begin(), slopes.begin() + slopes.size() / 2, slopes.end());
  const double slope = slopes[slopes.size() / 2];
  if (!(std::fabs(slope) < 1e-3)) return map;  // over 1000 ppm: not a clock, keep the median
  map.drift = slope;
  map.ref = p[p.size() / 2].first;
  std::vector<TimeNs> resid;
  for (size_t i = 0; i < p.size(); ++i) {
    // |slope| < 1e-3, so the drift term is far inside int64 even for extreme times.
    const TimeNs drift_ns = static_cast<TimeNs>(slope * (double(p[i].first) - double(map.ref)));
    resid.push_back(static_cast<TimeNs>(static_cast<uint64_t>(p[i].second) - static_cast<uint64_t>(drift_ns)));
  }
  std::nth_element(resid.begin(), resid.begin() + resid.size() / 2, resid.end());
  map.offset = resid[resid.size() / 2];
  *method = "clock_sync_linear";
  return map;
}

}  // namespace truffld::merge
