// Cross-rank alignment (see alignment.h): logical steps and collective matching.
#include "peer/alignment.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <unordered_map>

#include "read/hash_mix.h"

namespace truffld::diagnose {
namespace {

using detail::Mix;
uint64_t HashString(const std::string& s) { return detail::HashText(s); }

// Order-free hash of a unit's request set ("*" and an empty list hash alike).
uint64_t RequestKey(const StepInfo& s) {
  std::vector<uint64_t> h;
  for (const auto& r : s.requests) {
    if (r != "*") h.push_back(HashString(r));
  }
  std::sort(h.begin(), h.end());
  uint64_t k = s.view == View::kHorizontal ? 0x5151 : 0xA0A0;
  for (uint64_t x : h) k = Mix(k, x);
  return k;
}


}  // namespace

UnitGroups GroupUnits(const InstanceTable& t) {
  // Identity of a logical step: its request set and how many earlier units of this rank and view
  // had the same set (decode steps of a stable batch share their request set; the stages of a
  // pipeline run the same steps in the same order, offset in time).
  const size_t n = t.steps.size();
  std::unordered_map<uint64_t, uint32_t> seen;  // (rank, view, request key) -> count so far
  std::vector<uint32_t> order(n);
  for (uint32_t u = 0; u < n; ++u) order[u] = u;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const StepInfo &x = t.steps[a], &y = t.steps[b];
    if (x.rank != y.rank) return x.rank < y.rank;
    if (x.view != y.view) return x.view < y.view;
    return x.step_index < y.step_index;
  });
  UnitGroups g;
  g.group.assign(n, 0);
  std::unordered_map<uint64_t, uint32_t> group_of;  // (view, request key, occurrence) -> group
  for (uint32_t u : order) {
    const StepInfo& s = t.steps[u];
    const uint64_t req = RequestKey(s);
    const uint32_t j = seen[Mix(Mix(static_cast<uint64_t>(s.rank.value_or(-1)), req), 0x7A)]++;
    auto [it, fresh] = group_of.emplace(Mix(req, j), static_cast<uint32_t>(g.members.size()));
    if (fresh) g.members.emplace_back();
    g.group[u] = it->second;
    g.members[it->second].push_back(u);
  }
  return g;
}

std::map<std::string, int64_t> EstimateHostOffsets(const InstanceTable& t, const UnitGroups& groups) {
  // Ends of the two sides of a transfer coincide; their difference across two hosts is the
  // residual offset between the hosts' clocks on the merged axis (host clocks are aligned from
  // each host's own clock records, which cannot see another host's realtime error).
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> diffs;
  for (const auto& members : groups.members) {
    if (members.size() < 2 || t.steps[members[0]].view != View::kHorizontal) continue;
    std::map<std::pair<uint64_t, uint32_t>, std::vector<uint32_t>> by_key;  // (bytes, occurrence)
    for (uint32_t u : members) {
      const StepInfo& st = t.steps[u];
      std::map<uint64_t, uint32_t> seen;
      for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) {
        if (!(t.detail[i].flags & kDetailHasDevice) || !IsPointToPoint(t.strings.Get(t.family[i]))) continue;
        const uint64_t bytes = static_cast<uint64_t>(t.features[i][kCommBytes]);
        by_key[{bytes, seen[bytes]++}].push_back(i);
      }
    }
    for (auto& [key, list] : by_key) {
      for (size_t a = 0; a < list.size(); ++a) {
        for (size_t b = a + 1; b < list.size(); ++b) {
          const std::string& ha = t.steps[t.step[list[a]]].host;
          const std::string& hb = t.steps[t.step[list[b]]].host;
          if (ha == hb || t.family[list[a]] == t.family[list[b]]) continue;  // a send with a recv
          const int64_t d = t.detail[list[a]].device_end - t.detail[list[b]].device_end;
          if (ha < hb) diffs[{ha, hb}].push_back(d); else diffs[{hb, ha}].push_back(-d);
        }
      }
    }
  }
  // Offsets relative to the first host, spreading along host pairs with enough evidence.
  std::map<std::string, int64_t> offset;
  bool grew = true;
  while (grew) {
    grew = false;
    for (auto& [pair, d] : diffs) {
      if (d.size() < 3) continue;
      std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
      const int64_t med = d[d.size() / 2];  // end(first) - end(second)
      if (offset.empty()) offset[pair.first] = 0;
      const bool has_a = offset.count(pair.first), has_b = offset.count(pair.second);
      if (has_a && !has_b) { offset[pair.second] = offset[pair.first] - med; grew = true; }
      if (!has_a && has_b) { offset[pair.first] = offset[pair.second] + med; grew = true; }
    }
  }
  return offset;
}

std::vector<CommTiming> MatchCollectives(const InstanceTable& t, const UnitGroups& groups) {
  std::vector<CommTiming> out(t.size());
  if (t.detail.size() != t.size()) return out;
  const std::map<std::string, int64_t> offsets = EstimateHostOffsets(t, groups);
  // Device times on a common axis: this host's residual clock offset removed.
  auto shift = [&](uint32_t i) -> int64_t {
    auto it = offsets.find(t.steps[t.step[i]].host);
    return it == offsets.end() ? 0 : it->second;
  };
  auto start_of = [&](uint32_t i) { return t.detail[i].device_start - shift(i); };
  auto end_of = [&](uint32_t i) { return t.detail[i].device_end - shift(i); };
  std::vector<uint8_t> p2p_of_family(t.strings.size(), 2);  // 2 = not yet known
  uint32_t next_match = 0;
  for (const auto& members : groups.members) {
    if (members.size() < 1 || t.steps[members[0]].view != View::kHorizontal) continue;
    // key -> comm instances (one list per key across the group's units)
    std::map<std::tuple<uint32_t, uint64_t, uint32_t>, std::vector<uint32_t>> by_key;
    for (uint32_t u : members) {
      const StepInfo& st = t.steps[u];
      std::map<std::pair<uint32_t, uint64_t>, uint32_t> seen;
      for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) {
        const InstanceDetail& d = t.detail[i];
        if (!(d.flags & kDetailHasDevice) || t.strings.Get(t.layer[i]) != "comm") continue;
        uint8_t& p2p = p2p_of_family[t.family[i]];
        if (p2p == 2) p2p = IsPointToPoint(t.strings.Get(t.family[i])) ? 1 : 0;
        const uint32_t fam = p2p ? kNoString : t.family[i];
        const uint64_t bytes = static_cast<uint64_t>(t.features[i][kCommBytes]);
        const uint32_t occurrence = seen[{fam, bytes}]++;
        by_key[{fam, bytes, occurrence}].push_back(i);
        out[i].participants = 1;
        out[i].arrival = d.device_start;
        out[i].last_arrival = d.device_start;
        out[i].transfer_ns = d.device_ns;
      }
    }
    for (auto& [key, list] : by_key) {
      if (list.size() < 2) continue;
      std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) { return end_of(a) < end_of(b); });
      // Clusters of device ends within a tolerance, one instance per rank.
      size_t b = 0;
      while (b < list.size()) {
        size_t e = b + 1;
        std::vector<int64_t> ranks = {t.steps[t.step[list[b]]].rank.value_or(-1)};
        while (e < list.size()) {
          const InstanceDetail& first = t.detail[list[b]];
          const int64_t tol = std::max<int64_t>(20000, (first.device_end - first.device_start) / 20);
          const int64_t r = t.steps[t.step[list[e]]].rank.value_or(-1);
          if (end_of(list[e]) - end_of(list[b]) > tol ||
              std::find(ranks.begin(), ranks.end(), r) != ranks.end()) {
            break;
          }
          ranks.push_back(r);
          ++e;
        }
        if (e - b >= 2) {
          ++next_match;
          int64_t last = INT64_MIN;
          int64_t last_rank = -1;
          for (size_t k = b; k < e; ++k) {
            if (start_of(list[k]) > last) {
              last = start_of(list[k]);
              last_rank = t.steps[t.step[list[k]]].rank.value_or(-1);
            }
          }
          for (size_t k = b; k < e; ++k) {
            CommTiming& c = out[list[k]];
            c.participants = static_cast<uint16_t>(e - b);
            c.last_arrival = last + shift(list[k]);  // back on this instance's own axis
            c.wait_ns = static_cast<float>(std::max<int64_t>(0, last - start_of(list[k])));
            c.transfer_ns = static_cast<float>(std::max<int64_t>(0, end_of(list[k]) - last));
            c.last_rank = last_rank;
            c.match = next_match;
          }
        }
        b = e;
      }
    }
  }
  return out;
}

}  // namespace truffld::diagnose
