// Straggler attribution over matched collectives (see stragglers.h).
#include "peer/stragglers.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace truffld::diagnose {
namespace {

// The ranks that held their group in at least half of the `logical_steps` (and at least 3), from
// the steps each held it (`late`, by rank).
std::vector<PersistentStraggler> Persistent(const std::map<int64_t, std::vector<const StragglerRow*>>& late,
                                            size_t logical_steps) {
  std::vector<PersistentStraggler> out;
  for (const auto& [rank, rows] : late) {
    const int n = static_cast<int>(rows.size());
    if (n < 3 || 2 * static_cast<size_t>(n) < logical_steps) continue;
    PersistentStraggler p;
    p.rank = rank;
    p.steps = n;
    p.logical_steps = static_cast<int>(logical_steps);
    std::vector<double> ns, share;
    for (const StragglerRow* r : rows) {
      ns.push_back(r->caused_ns);
      share.push_back(r->caused_ns / r->step_ns);
      p.caused_ns += r->caused_ns;
    }
    std::nth_element(ns.begin(), ns.begin() + n / 2, ns.end());
    std::nth_element(share.begin(), share.begin() + n / 2, share.end());
    p.typical_caused_ns = ns[static_cast<size_t>(n / 2)];
    p.typical_share = share[static_cast<size_t>(n / 2)];
    out.push_back(p);
  }
  return out;
}

// Logical step `g`'s candidate from `caused` (rank -> (delay, collectives it entered last)): the
// rank that caused the most delay, with its own step. False when no rank caused any.
bool CandidateRow(const InstanceTable& t, uint32_t g, const std::vector<uint32_t>& members,
                  const std::map<int64_t, std::pair<double, int>>& caused, int collectives, StragglerRow* row) {
  if (caused.empty()) return false;
  const auto best = std::max_element(caused.begin(), caused.end(),
                                     [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
  row->group = g;
  row->rank = best->first;
  row->caused_ns = best->second.first;
  row->last_in = best->second.second;
  row->collectives = collectives;
  for (uint32_t u : members) {
    if (t.steps[u].rank.value_or(-1) != row->rank) continue;
    row->step_index = t.steps[u].step_index;
    row->step_ns = static_cast<double>(t.steps[u].end_ns - t.steps[u].start_ns);
  }
  return true;
}

// Whether every unit of the logical step was captured outside the sampled device windows.
bool WithoutDeviceDetail(const InstanceTable& t, const std::vector<uint32_t>& members) {
  for (uint32_t u : members)
    if (t.steps[u].device_detail) return false;
  return true;
}

// The straggler candidate of a logical step without device detail, from the host's entries into
// its collectives (the comm ranges' starts; a pipeline send/recv, whose sides run at different
// times by design, is left out). Collectives match by (operator, message bytes, occurrence in
// the unit), as MatchCollectives matches them before it splits them by device end.
bool HostEntryCandidate(const InstanceTable& t, uint32_t g, const std::vector<uint32_t>& members, StragglerRow* row) {
  std::map<std::tuple<uint32_t, uint64_t, uint32_t>, std::vector<std::pair<int64_t, int64_t>>> sets;  // -> (entry, rank)
  for (uint32_t u : members) {
    const StepInfo& st = t.steps[u];
    std::map<std::pair<uint32_t, uint64_t>, uint32_t> seen;
    for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) {
      if (t.strings.Get(t.layer[i]) != "comm" || IsPointToPoint(t.strings.Get(t.family[i]))) continue;
      const uint64_t bytes = static_cast<uint64_t>(t.features[i][kCommBytes]);
      const uint32_t occurrence = seen[{t.family[i], bytes}]++;
      sets[{t.family[i], bytes, occurrence}].emplace_back(t.start_ns[i], st.rank.value_or(-1));
    }
  }
  // Hosts do not wait for each other at a collective (the call only enqueues it): a host that
  // fell behind stays behind in every later collective of the step. The delay it caused is how
  // far behind it fell at its worst, not the sum over the collectives.
  std::map<int64_t, std::pair<double, int>> caused;  // rank -> (delay, times last)
  int collectives = 0;
  for (auto& [key, entries] : sets) {
    if (entries.size() < 2) continue;
    ++collectives;
    std::sort(entries.begin(), entries.end());
    auto& c = caused[entries.back().second];
    c.first = std::max(c.first, static_cast<double>(entries.back().first - entries[entries.size() - 2].first));
    c.second += 1;
  }
  row->host_entries = true;
  return CandidateRow(t, g, members, caused, collectives, row);
}

// The median delay of the candidates of one kind (device or host entries).
double TypicalCaused(const std::vector<StragglerRow>& candidates, bool host_entries) {
  std::vector<double> caused;
  for (const auto& c : candidates)
    if (c.host_entries == host_entries) caused.push_back(c.caused_ns);
  if (caused.empty()) return 0.0;
  std::nth_element(caused.begin(), caused.begin() + static_cast<std::ptrdiff_t>(caused.size() / 2), caused.end());
  return caused[caused.size() / 2];
}

}  // namespace

StragglerResult FindStragglers(const InstanceTable& t, const UnitGroups& groups,
                               const std::vector<CommTiming>& comm, double min_share, double unusual) {
  StragglerResult out;
  std::vector<StragglerRow> candidates;
  out.waits.resize(t.steps.size());
  if (comm.size() != t.size()) return out;
  for (uint32_t g = 0; g < groups.members.size(); ++g) {
    const auto& members = groups.members[g];
    if (members.size() < 2 || t.steps[members[0]].view != View::kHorizontal) continue;
    if (WithoutDeviceDetail(t, members)) {
      StragglerRow row;
      if (HostEntryCandidate(t, g, members, &row)) candidates.push_back(row);
      continue;
    }
    // One participant set per (last_arrival, last_rank): its entries, to find the runner-up.
    std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> sets;
    for (uint32_t u : members) {
      const StepInfo& st = t.steps[u];
      std::map<int64_t, double> on;  // rank waited on -> time
      UnitWait& w = out.waits[u];
      for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) {
        const CommTiming& c = comm[i];
        if (c.participants < 2) continue;
        ++w.collectives;
        w.waited_ns += c.wait_ns;
        if (c.wait_ns > 0) on[c.last_rank] += c.wait_ns;
        sets[{c.last_arrival, c.last_rank}].push_back(c.arrival);
      }
      for (auto [rank, ns] : on) {
        if (ns > w.waiting_on_ns) { w.waiting_on = rank; w.waiting_on_ns = ns; }
      }
    }
    std::map<int64_t, std::pair<double, int>> caused;  // rank -> (delay, times last)
    for (auto& [key, arrivals] : sets) {
      if (arrivals.size() < 2) continue;
      std::sort(arrivals.begin(), arrivals.end());
      auto& c = caused[key.second];
      c.first += static_cast<double>(arrivals.back() - arrivals[arrivals.size() - 2]);
      c.second += 1;
    }
    StragglerRow row;
    if (CandidateRow(t, g, members, caused, static_cast<int>(sets.size()), &row)) candidates.push_back(row);
  }
  // Someone always enters last; a straggler is unusually late for this run and consistently so.
  // Host entries and device entries are different clocks of lateness: each kind has its median.
  const double typical[2] = {TypicalCaused(candidates, false), TypicalCaused(candidates, true)};
  std::map<int64_t, std::vector<const StragglerRow*>> late;  // rank -> steps it held the group
  for (const auto& c : candidates) {
    const bool holds = c.step_ns > 0 && c.caused_ns >= min_share * c.step_ns && 2 * c.last_in >= c.collectives;
    if (holds) late[c.rank].push_back(&c);
    if (holds && c.caused_ns >= unusual * typical[c.host_entries]) out.stragglers.push_back(c);
  }
  out.persistent = Persistent(late, candidates.size());
  return out;
}

}  // namespace truffld::diagnose
