// Hang localisation (hang.h).
#include "hang/hang.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "truffld/time.h"

namespace truffld::diagnose {
namespace {

bool OwnId(const std::string& c) { return !c.empty() && c.rfind("op:", 0) != 0; }

std::string Short(const EndFrame& f, size_t step_index) {
  if (f.layer == "step") return "step " + std::to_string(step_index);
  const size_t cut = f.name.find_first_of(f.layer == "backend_op" ? "," : " ,");
  return f.name.substr(0, cut);
}

// "rank 3", "ranks 0, 2 and 3", or labels joined when some dump names no rank.
std::string Join(const std::vector<size_t>& idx, const std::vector<RankEnd>& ends) {
  const bool numbers = idx.size() > 1 && std::all_of(idx.begin(), idx.end(), [&](size_t i) { return ends[i].rank >= 0; });
  std::string s = numbers ? "ranks " : "";
  for (size_t i = 0; i < idx.size(); ++i) {
    s += i == 0 ? "" : i + 1 == idx.size() ? " and " : ", ";
    s += numbers ? std::to_string(ends[idx[i]].rank) : RankLabel(ends[idx[i]]);
  }
  return s;
}

// Groups by communicator ids that several ranks name.
std::vector<HangGroup> SharedIdGroups(const std::vector<RankEnd>& ends) {
  std::map<std::string, std::set<size_t>> by_id;
  for (size_t i = 0; i < ends.size(); ++i)
    for (const auto& c : ends[i].collectives)
      if (OwnId(c.communicator)) by_id[c.communicator].insert(i);
  std::vector<HangGroup> out;
  for (const auto& [id, ranks] : by_id) {
    if (ranks.size() < 2) continue;
    HangGroup g;
    g.members.assign(ranks.begin(), ranks.end());
    g.basis = "communicator " + id;
    for (size_t m : g.members)
      for (const auto& c : ends[m].collectives)
        if (c.communicator == id) {
          g.entered.push_back(c.entered);
          g.world_size = c.world_size;
        }
    out.push_back(std::move(g));
  }
  return out;
}

// Groups by world size (and host) when every rank's communicator ids are its own.
std::vector<HangGroup> WorldSizeGroups(const std::vector<RankEnd>& ends) {
  std::map<int64_t, std::map<std::string, std::vector<size_t>>> by_w;  // W -> host -> ranks
  for (size_t i = 0; i < ends.size(); ++i) {
    std::set<int64_t> sizes;
    for (const auto& c : ends[i].collectives) sizes.insert(c.world_size);
    for (int64_t w : sizes) by_w[w][ends[i].host].push_back(i);
  }
  std::vector<HangGroup> out;
  for (const auto& [w, hosts] : by_w) {
    bool per_host = w > 1;
    size_t total = 0;
    for (const auto& [h, r] : hosts) per_host = per_host && int64_t(r.size()) == w, total += r.size();
    std::vector<std::pair<std::string, std::vector<size_t>>> parts;
    if (per_host || int64_t(total) != w) {
      for (const auto& [h, r] : hosts) parts.push_back({"host " + h + ", world size " + std::to_string(w), r});
    } else {
      std::vector<size_t> all;
      for (const auto& [h, r] : hosts) all.insert(all.end(), r.begin(), r.end());
      std::sort(all.begin(), all.end());
      parts.push_back({"the " + std::to_string(w) + " ranks with collectives of world size " + std::to_string(w), all});
    }
    for (auto& [basis, members] : parts) {
      if (members.size() < 2) continue;
      HangGroup g;
      g.members = members;
      g.basis = basis;
      g.world_size = w;
      for (size_t m : members) {
        uint64_t n = 0;
        for (const auto& c : ends[m].collectives) n += c.world_size == w ? c.entered : 0;
        g.entered.push_back(n);
      }
      out.push_back(std::move(g));
    }
  }
  return out;
}

// Which members are behind: fewer collectives entered, else fewer steps.
void FindBehind(const std::vector<RankEnd>& ends, HangGroup* g) {
  for (size_t m : g->members) g->steps.push_back(ends[m].steps_entered);
  auto behind = [&](const std::vector<uint64_t>& v, const char* by) {
    if (v.empty()) return false;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    if (*lo == *hi) return false;
    for (size_t k = 0; k < v.size(); ++k)
      if (v[k] == *lo) g->behind.push_back(g->members[k]);
    g->by = by;
    return true;
  };
  if (!behind(g->entered, "collectives")) behind(g->steps, "steps");
}

std::string Seconds(int64_t ns) { return FormatDurationNs(std::max<int64_t>(0, ns)); }

std::string RankLine(const RankEnd& e, int64_t job_end) {
  std::string s = RankLabel(e) + (e.host.empty() ? "" : " (" + e.host + ")") + ": ";
  s += !e.clean_exit ? std::string("no clean exit (") + (e.stats_record ? "STATS written" : "no STATS record") +
                            (e.truncated_last_line ? ", last line cut)" : ")")
                      : "exited normally";
  s += "; last record " + Seconds(job_end - e.last_event_ns) + " before the job's last sign of life";
  s += "; " + std::to_string(e.steps_entered) + " steps entered";
  const std::string stack = OpenStack(e);
  if (!stack.empty()) s += "; open: " + stack;
  for (const auto& c : e.collectives)
    s += "; " + std::to_string(c.entered) + " collectives on " + c.communicator + " (last " + c.op +
         (c.last_open ? ", still open)" : ")");
  if (e.pending_launches)
    s += "; " + std::to_string(e.pending_launches) + " launches never completed (first " + e.first_pending[0].name + ")";
  return s;
}

std::string Sentence(const std::vector<RankEnd>& ends, const HangReport& r, const HangGroup* g) {
  if (r.status == HangStatus::kComplete) return "every process exited normally: no hang";
  if (r.status == HangStatus::kKilled)
    return "the job was stopped between steps (" + std::to_string(r.rank_lines.size()) +
           " dumps end without a clean exit, nothing was open): no rank was waiting for another";
  if (!g) {
    return "the job stopped with work open, but no rank is behind its peers in collectives or steps "
           "(insufficient evidence for a culprit); see each rank's open stack";
  }
  const RankEnd& c = ends[g->behind[0]];
  std::string s = Join(g->behind, ends) + " never entered ";
  uint64_t lo = UINT64_MAX, hi = 0;
  const auto& v = g->by == "collectives" ? g->entered : g->steps;
  for (uint64_t n : v) lo = std::min(lo, n), hi = std::max(hi, n);
  s += (g->by == "collectives" ? "collective #" : "step #") + std::to_string(lo + 1) + " (" + g->basis + ")";
  std::vector<size_t> waiting;
  for (size_t k = 0; k < g->members.size(); ++k)
    if (v[k] > lo) waiting.push_back(g->members[k]);
  int64_t blocked = INT64_MAX, inside = INT64_MAX;
  bool all_inside = g->by == "collectives" && hi == lo + 1;
  for (size_t w : waiting) {
    blocked = std::min(blocked, r.job_end_ns - ends[w].last_event_ns);
    bool in = false;
    for (const auto& c : ends[w].collectives)
      if (c.last_open) in = true, inside = std::min(inside, r.job_end_ns - c.last_start_ns);
    all_inside = all_inside && in;
  }
  if (all_inside)
    s += "; " + Join(waiting, ends) + " entered it and were still waiting inside it, for " + Seconds(inside) +
         ", when the job ended";
  else
    s += "; " + Join(waiting, ends) + " entered it (up to #" + std::to_string(hi) + ") and had recorded nothing for " +
         Seconds(blocked) + " when the job ended";
  const std::string stack = OpenStack(c);
  if (!stack.empty()) {
    int64_t inner = c.open.back().start_ns;
    for (const auto& f : c.open) inner = std::max(inner, f.start_ns);
    s += "; " + RankLabel(c) + "'s last range: " + stack + ", open for " + Seconds(r.job_end_ns - inner);
  } else {
    s += "; " + RankLabel(c) + " had nothing open (stuck outside any range) since its last record " +
         Seconds(r.job_end_ns - c.last_event_ns) + " earlier";
  }
  return s;
}

}  // namespace

const char* HangStatusName(HangStatus s) noexcept {
  switch (s) {
    case HangStatus::kComplete: return "complete";
    case HangStatus::kKilled: return "killed";
    case HangStatus::kHang: return "hang";
  }
  return "complete";
}

std::string RankLabel(const RankEnd& e) {
  if (e.rank >= 0) return "rank " + std::to_string(e.rank);
  return "process " + std::to_string(e.process_id) + (e.host.empty() ? "" : " on " + e.host);
}

std::string OpenStack(const RankEnd& e) {
  std::map<int64_t, std::vector<const EndFrame*>> by_thread;
  for (const auto& f : e.open) by_thread[f.thread_id].push_back(&f);
  const std::vector<const EndFrame*>* deepest = nullptr;
  for (const auto& [t, frames] : by_thread)
    if (!deepest || frames.size() > deepest->size()) deepest = &frames;
  if (!deepest) return {};
  std::string s;
  const size_t step_index = e.steps_entered ? e.steps_entered - 1 : 0;
  for (const EndFrame* f : *deepest) s += (s.empty() ? "" : " > ") + Short(*f, step_index);
  return s;
}

HangReport LocateHang(const std::vector<RankEnd>& ends) {
  HangReport r;
  bool killed = false, open = false;
  for (const RankEnd& e : ends) {
    r.job_end_ns = std::max(r.job_end_ns, e.last_alive_ns);
    killed = killed || e.Killed();
    open = open || (e.Killed() && (!e.open.empty() || e.pending_launches));
  }
  r.status = !killed ? HangStatus::kComplete : open ? HangStatus::kHang : HangStatus::kKilled;
  for (const RankEnd& e : ends)
    if (e.Killed()) r.rank_lines.push_back(RankLine(e, r.job_end_ns));
  if (r.status != HangStatus::kHang) {
    r.sentence = Sentence(ends, r, nullptr);
    return r;
  }
  std::vector<HangGroup> groups = SharedIdGroups(ends);
  if (groups.empty()) groups = WorldSizeGroups(ends);
  if (groups.empty()) {  // no collectives: all ranks, by steps
    HangGroup g;
    g.members.resize(ends.size());
    std::iota(g.members.begin(), g.members.end(), size_t{0});
    g.basis = "all ranks, compared by steps";
    groups.push_back(std::move(g));
  }
  const HangGroup* first = nullptr;
  for (HangGroup& g : groups) {
    if (std::none_of(g.members.begin(), g.members.end(), [&](size_t m) { return ends[m].Killed(); })) continue;
    FindBehind(ends, &g);
    r.groups.push_back(g);
  }
  std::set<size_t> culprits, waiting;
  for (const HangGroup& g : r.groups) {
    if (g.behind.empty()) continue;
    if (!first) first = &g;
    culprits.insert(g.behind.begin(), g.behind.end());
    for (size_t m : g.members)
      if (std::find(g.behind.begin(), g.behind.end(), m) == g.behind.end()) waiting.insert(m);
  }
  for (size_t c : culprits) waiting.erase(c);
  r.culprits.assign(culprits.begin(), culprits.end());
  r.waiting.assign(waiting.begin(), waiting.end());
  r.sentence = Sentence(ends, r, first);
  return r;
}

}  // namespace truffld::diagnose
