// The time no operator range covers (see outside_time.h).
#include "read/outside_time.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>

namespace truffld::diagnose::detail {
namespace {

// Marks the direct calls in a step's dedup set (no operator family has this id).
constexpr uint32_t kDirectCallKey = kNoString - 1;

PendingInstance Pseudo(const char* family, int64_t start, int64_t end, StringTable* strings) {
  PendingInstance p;
  p.family = strings->Intern(family);
  p.layer = strings->Intern("other");
  p.parent = kNoString;
  p.start = start;
  p.end = end;
  p.thread = -1;
  p.f.fill(0.0);
  p.detail.signature = HashText(family);
  p.detail.position = HashText(family);
  p.detail.flags = kDetailOutside;
  return p;
}

void SetHostTime(PendingInstance* p, double ns) {
  p->f[kDurationNs] = ns;
  p->f[kSelfTimeNs] = ns;
  p->detail.host_ns = static_cast<float>(ns);
}

// The calls under the step as one instance: their union of host time, their waits and device work.
PendingInstance CallsInstance(const std::vector<DirectCall>& calls, StringTable* strings) {
  SubtreeStats all;
  std::vector<std::pair<int64_t, int64_t>> host;
  int64_t first = calls.front().start, last = calls.front().end;
  for (const DirectCall& c : calls) {
    all.Merge(c.agg, false);
    host.emplace_back(c.start, c.end);
    first = std::min(first, c.start);
    last = std::max(last, c.end);
  }
  PendingInstance p = Pseudo(kStepCallsFamily, first, last, strings);
  const double span = static_cast<double>(UnionLength(host));
  const double wait = std::min(span, all.own.wait);
  SetHostTime(&p, span);
  p.detail.host_ns = static_cast<float>(span - wait);
  p.detail.wait_ns = static_cast<float>(wait);
  ApplySubtree(all, &p);
  p.detail.signature = MixHash(p.detail.signature, all.own.sig);
  return p;
}

// Host time of [start, end] that no interval covers: total, and the largest gap.
struct Gaps {
  int64_t total = 0, best_start = 0, best_end = 0;
};
Gaps Uncovered(int64_t start, int64_t end, std::vector<std::pair<int64_t, int64_t>> cover) {
  std::sort(cover.begin(), cover.end());
  Gaps g;
  int64_t at = start;
  auto gap = [&](int64_t to) {
    if (to <= at) return;
    g.total += to - at;
    if (to - at > g.best_end - g.best_start) g.best_start = at, g.best_end = to;
  };
  for (auto [s, e] : cover) {
    s = std::max(s, start);
    e = std::min(e, end);
    if (e <= s) continue;
    gap(s);
    at = std::max(at, e);
  }
  gap(end);
  return g;
}

}  // namespace

void AddBusy(StepBucket* b, int64_t start, int64_t end) {
  if (end <= start) return;
  b->busy.emplace_back(start, end);
  if (b->busy.size() < std::max<size_t>(64, 2 * b->busy_folded)) return;
  b->busy = BusyUnion(std::move(b->busy));
  b->busy_folded = b->busy.size();
}

std::vector<std::pair<int64_t, int64_t>> BusyUnion(std::vector<std::pair<int64_t, int64_t>> iv) {
  std::sort(iv.begin(), iv.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (auto [s, e] : iv) {
    if (e <= s) continue;
    if (!out.empty() && s <= out.back().second)
      out.back().second = std::max(out.back().second, e);
    else
      out.emplace_back(s, e);
  }
  return out;
}

std::optional<PendingInstance> DeviceIdleInstance(const StepInfo& st, std::vector<std::pair<int64_t, int64_t>> busy,
                                                  StringTable* strings) {
  // Outside a device window nothing says what the device did; without operator detail the
  // step is judged as one piece (kWholeStepFamily).
  if (!st.operator_detail || !st.device_detail || st.end_ns <= st.start_ns) return std::nullopt;
  const bool own = std::any_of(busy.begin(), busy.end(), [&](const std::pair<int64_t, int64_t>& iv) {
    return iv.second > st.start_ns && iv.first < st.end_ns;
  });
  // No device work of its own in the step: a host-only step (or a CPU program) has nothing idle.
  if (!own) return std::nullopt;
  // The previous step's work that ran past its end keeps the device busy into this step.
  if (st.prev_device_end > st.start_ns) busy.emplace_back(st.start_ns, st.prev_device_end);
  const Gaps g = Uncovered(st.start_ns, st.end_ns, std::move(busy));
  if (g.total <= 0) return std::nullopt;
  PendingInstance p = Pseudo(kDeviceIdleFamily, g.best_start, g.best_end, strings);
  SetHostTime(&p, static_cast<double>(g.total));
  p.detail.flags |= kDetailIdle;
  return p;
}

void AddDirectCall(StepBucket* b, int64_t start, int64_t end, int64_t thread, const SubtreeStats& agg) {
  if (!b->seen.insert(DedupKey{kDirectCallKey, start, end, thread}).second) return;
  b->direct.push_back(DirectCall{start, end, thread, agg});
}

std::vector<PendingInstance> OutsideInstances(const StepBucket& b, const StepBucket* prev, bool carries_work,
                                              StringTable* strings) {
  std::vector<PendingInstance> out;
  const StepInfo& st = b.info;
  if (!st.operator_detail) {
    // No operator was recorded: the gaps between operators and the calls under the step would
    // be the whole step, blamed on what was not recorded. The step is judged as one piece, paid
    // by its whole tensor-parallel group together (lockstep ranks end their steps together).
    PendingInstance p = Pseudo(kWholeStepFamily, st.start_ns, st.end_ns, strings);
    SetHostTime(&p, static_cast<double>(st.end_ns - st.start_ns));
    p.detail.flags |= kDetailGroupCost;
    // What it did is its workload: steps of other sizes are compared through a fit over tokens.
    p.detail.signature = MixHash(MixHash(p.detail.signature, static_cast<uint64_t>(st.tokens)),
                                 static_cast<uint64_t>(st.context >= 0 ? st.context / 4096 : -1));
    out.push_back(std::move(p));
  }
  if (!b.direct.empty() && st.operator_detail) out.push_back(CallsInstance(b.direct, strings));
  std::vector<std::pair<int64_t, int64_t>> cover;
  cover.reserve(b.instances.size() + b.direct.size());
  for (const PendingInstance& p : b.instances)
    if (!(p.detail.flags & kDetailReplay)) cover.emplace_back(p.start, p.end);
  for (const DirectCall& c : b.direct) cover.emplace_back(c.start, c.end);
  const Gaps g = Uncovered(st.start_ns, st.end_ns, std::move(cover));
  if (g.total > 0 && st.operator_detail) {
    PendingInstance p = Pseudo(kHostOutsideFamily, g.best_start, g.best_end, strings);
    SetHostTime(&p, static_cast<double>(g.total));
    out.push_back(std::move(p));
  }
  if (prev && carries_work && prev->info.step_index + 1 == st.step_index && prev->info.end_ns < st.start_ns) {
    // Only the part after the previous step's device work ended is the engine's own: before it
    // the device was still busy, and a faster engine would have waited for it anyway.
    const int64_t gap = st.start_ns - prev->info.end_ns;
    const int64_t busy = std::clamp<int64_t>(st.prev_device_end - prev->info.end_ns, 0, gap);
    PendingInstance p = Pseudo(kBetweenStepsFamily, prev->info.end_ns, st.start_ns, strings);
    SetHostTime(&p, static_cast<double>(gap));
    p.detail.host_ns = static_cast<float>(gap - busy);
    p.detail.flags |= kDetailGroupCost;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<bool> CarriesWork(const std::vector<const StepInfo*>& steps) {
  std::unordered_map<std::string, size_t> last;  // request -> the last step naming it
  for (size_t k = 0; k < steps.size(); ++k)
    for (const std::string& r : steps[k]->requests)
      if (r != "*") last[r] = k;
  auto named = [](const StepInfo& s) {
    return std::any_of(s.requests.begin(), s.requests.end(), [](const std::string& r) { return r != "*"; });
  };
  std::vector<bool> out(steps.size(), false);
  for (size_t k = 1; k < steps.size(); ++k) {
    const StepInfo &a = *steps[k - 1], &b = *steps[k];
    if (!named(a) && !named(b)) {
      out[k] = true;
      continue;
    }
    for (const std::string& r : a.requests)
      if (r != "*" && last[r] >= k) out[k] = true;
  }
  return out;
}

}  // namespace truffld::diagnose::detail
