// Cross-rank alignment (see alignment.h): logical steps and collective matching.
#include "truffld/diagnose/alignment.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <unordered_map>

namespace truffld::diagnose {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}
uint64_t HashString(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// Order-free hash of a unit's request set ("*" and an empty list hash alike).
uint64_t RequestKey(const StepInfo& s) {
  std::vector<uint64_t> h;
  for (const auto& r : s.requests) {
    if (r != "*") h.push_back(HashString(r));
  }
  std::sort(h.begin(), h.end());
  uint64_t k = s.view == "horizontal" ? 0x5151 : 0xA0A0;
  for (uint64_t x : h) k = Mix(k, x);
  return k;
}

struct UnionFind {
  std::vector<uint32_t> parent;
  std::vector<std::vector<int64_t>> ranks;  // per root: ranks of its members
  explicit UnionFind(const InstanceTable& t) : parent(t.steps.size()), ranks(t.steps.size()) {
    std::iota(parent.begin(), parent.end(), 0u);
    for (size_t u = 0; u < t.steps.size(); ++u) ranks[u] = {t.steps[u].rank.value_or(-1)};
  }
  uint32_t Find(uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  // Joins the groups of a and b unless they already hold a unit of the same rank.
  void Join(uint32_t a, uint32_t b) {
    a = Find(a), b = Find(b);
    if (a == b) return;
    for (int64_t r : ranks[b]) {
      if (std::find(ranks[a].begin(), ranks[a].end(), r) != ranks[a].end()) return;
    }
    parent[b] = a;
    ranks[a].insert(ranks[a].end(), ranks[b].begin(), ranks[b].end());
    ranks[b].clear();
  }
};

}  // namespace

bool IsPointToPoint(const std::string& family) {
  std::string f = family;
  for (char& c : f) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return f.find("send") != std::string::npos || f.find("recv") != std::string::npos;
}

UnitGroups GroupUnits(const InstanceTable& t) {
  const size_t n = t.steps.size();
  std::unordered_map<uint64_t, std::vector<uint32_t>> buckets;
  for (uint32_t u = 0; u < n; ++u) buckets[RequestKey(t.steps[u])].push_back(u);
  UnionFind uf(t);
  for (auto& [key, units] : buckets) {
    std::sort(units.begin(), units.end(), [&](uint32_t a, uint32_t b) {
      return t.steps[a].start_ns < t.steps[b].start_ns;
    });
    for (size_t i = 0; i < units.size(); ++i) {
      const StepInfo& a = t.steps[units[i]];
      for (size_t j = i + 1; j < units.size() && t.steps[units[j]].start_ns < a.end_ns; ++j) {
        const StepInfo& b = t.steps[units[j]];
        if (a.rank == b.rank) continue;
        const int64_t overlap = std::min(a.end_ns, b.end_ns) - std::max(a.start_ns, b.start_ns);
        const int64_t shorter = std::min(a.end_ns - a.start_ns, b.end_ns - b.start_ns);
        if (shorter > 0 && 2 * overlap >= shorter) uf.Join(units[i], units[j]);
      }
    }
  }
  UnitGroups g;
  g.group.assign(n, 0);
  std::unordered_map<uint32_t, uint32_t> id_of_root;
  for (uint32_t u = 0; u < n; ++u) {
    auto [it, fresh] = id_of_root.emplace(uf.Find(u), static_cast<uint32_t>(g.members.size()));
    if (fresh) g.members.emplace_back();
    g.group[u] = it->second;
    g.members[it->second].push_back(u);
  }
  return g;
}

std::vector<CommTiming> MatchCollectives(const InstanceTable& t, const UnitGroups& groups) {
  std::vector<CommTiming> out(t.size());
  if (t.detail.size() != t.size()) return out;
  std::vector<uint8_t> p2p_of_family(t.strings.size(), 2);  // 2 = not yet known
  for (const auto& members : groups.members) {
    if (members.size() < 1 || t.steps[members[0]].view != "horizontal") continue;
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
      std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
        return t.detail[a].device_end < t.detail[b].device_end;
      });
      // Clusters of device ends within a tolerance, one instance per rank.
      size_t b = 0;
      while (b < list.size()) {
        size_t e = b + 1;
        std::vector<int64_t> ranks = {t.steps[t.step[list[b]]].rank.value_or(-1)};
        while (e < list.size()) {
          const InstanceDetail& first = t.detail[list[b]];
          const InstanceDetail& next = t.detail[list[e]];
          const int64_t tol = std::max<int64_t>(20000, (first.device_end - first.device_start) / 20);
          const int64_t r = t.steps[t.step[list[e]]].rank.value_or(-1);
          if (next.device_end - first.device_end > tol ||
              std::find(ranks.begin(), ranks.end(), r) != ranks.end()) {
            break;
          }
          ranks.push_back(r);
          ++e;
        }
        if (e - b >= 2) {
          int64_t last = INT64_MIN;
          int64_t last_rank = -1;
          for (size_t k = b; k < e; ++k) {
            if (t.detail[list[k]].device_start > last) {
              last = t.detail[list[k]].device_start;
              last_rank = t.steps[t.step[list[k]]].rank.value_or(-1);
            }
          }
          for (size_t k = b; k < e; ++k) {
            const InstanceDetail& d = t.detail[list[k]];
            CommTiming& c = out[list[k]];
            c.participants = static_cast<uint16_t>(e - b);
            c.last_arrival = last;
            c.wait_ns = static_cast<float>(last - d.device_start);
            c.transfer_ns = static_cast<float>(std::max<int64_t>(0, d.device_end - last));
            c.last_rank = last_rank;
          }
        }
        b = e;
      }
    }
  }
  return out;
}

}  // namespace truffld::diagnose
