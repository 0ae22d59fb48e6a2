// Operator nesting for TreeReader (see tree_reader_parts.h): which operator range encloses
// which, per thread.

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "read/tree_reader_parts.h"

namespace truffld::diagnose::detail {

std::vector<int32_t> NestInstances(const std::vector<PendingInstance>& ins) {
  std::vector<int32_t> parent(ins.size(), -1);
  std::vector<uint32_t> order(ins.size());
  std::iota(order.begin(), order.end(), 0u);
  // By thread, then start, then the longer range first so an enclosing range precedes the
  // ranges it contains even when both start together.
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const PendingInstance &x = ins[a], &y = ins[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.start != y.start) return x.start < y.start;
    return x.end > y.end;
  });
  std::vector<uint32_t> stack;
  int64_t thread = INT64_MIN;
  for (uint32_t i : order) {
    const PendingInstance& p = ins[i];
    if (p.detail.flags & kDetailReplay) continue;
    if (p.thread != thread) {
      stack.clear();
      thread = p.thread;
    }
    while (!stack.empty() && ins[stack.back()].end < p.end) stack.pop_back();
    if (!stack.empty() && ins[stack.back()].start <= p.start) parent[i] = static_cast<int32_t>(stack.back());
    stack.push_back(i);
  }
  return parent;
}

}  // namespace truffld::diagnose::detail

namespace truffld::diagnose::detail {

std::vector<int32_t> PrecedingTopLevel(const std::vector<PendingInstance>& ins, const std::vector<int32_t>& parent) {
  const size_t n = ins.size();
  std::vector<int32_t> top(n), prev_of_top(n, -1), out(n, -1);
  for (size_t i = 0; i < n; ++i) {
    int32_t a = static_cast<int32_t>(i);
    while (parent[static_cast<size_t>(a)] >= 0) a = parent[static_cast<size_t>(a)];
    top[i] = a;
  }
  // `ins` is sorted by start: walk top-level instances per thread (replays on their own lane).
  std::unordered_map<int64_t, int32_t> last;  // lane -> last top-level instance seen
  for (size_t i = 0; i < n; ++i) {
    if (top[i] != static_cast<int32_t>(i)) continue;
    const bool replay = ins[i].detail.flags & kDetailReplay;
    const int64_t lane = replay ? INT64_MIN + 1 : ins[i].thread;
    auto [it, fresh] = last.emplace(lane, static_cast<int32_t>(i));
    if (!fresh) {
      prev_of_top[i] = it->second;
      it->second = static_cast<int32_t>(i);
    }
  }
  for (size_t i = 0; i < n; ++i) out[i] = prev_of_top[static_cast<size_t>(top[i])];
  return out;
}

}  // namespace truffld::diagnose::detail
