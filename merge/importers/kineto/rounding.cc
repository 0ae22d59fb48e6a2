// Whole-microsecond exports (see rounding.h).
//
// Older PyTorch exports (torch 1.13's export_chrome_trace among them) write `ts` and `dur` as
// whole microseconds, each truncated on its own, so a child that ends with its parent can come
// out ending 1 us after it. The nesting rule (merge/README.md, "Nesting") needs the child inside
// the parent; without help such a child, and everything under it, would leave its parent and
// its step. A stack scan per thread in nesting order finds each range's enclosing range; a
// child overshooting it by at most kRoundingSlackNs is clamped to the parent's end. Genuine
// partial overlaps (more than the slack, or times finer than a microsecond) are left alone.
#include "importers/kineto/rounding.h"

#include <algorithm>

namespace truffld::merge::kineto {
namespace {

bool WholeMicros(const Event& e) { return e.start % 1000 == 0 && e.end % 1000 == 0; }

}  // namespace

uint64_t ClampRoundedEnds(std::vector<Event>* events) {
  std::vector<Event>& ev = *events;
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < ev.size(); ++i)
    if (ev[i].kind == EventKind::kRange) order.push_back(i);
  // Nesting order: thread, start, the longer first, then the file's order.
  std::sort(order.begin(), order.end(), [&ev](uint32_t a, uint32_t b) {
    const Event &x = ev[a], &y = ev[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.start != y.start) return x.start < y.start;
    if (x.end != y.end) return x.end > y.end;
    return a < b;
  });
  uint64_t clamped = 0;
  std::vector<uint32_t> stack;  // the open ranges of the current thread, outermost first
  for (uint32_t i : order) {
    Event& e = ev[i];
    if (!stack.empty() && ev[stack.back()].thread != e.thread) stack.clear();
    while (!stack.empty() && ev[stack.back()].end <= e.start) stack.pop_back();
    if (!stack.empty()) {
      const Event& parent = ev[stack.back()];
      if (e.end > parent.end && e.end - parent.end <= kRoundingSlackNs && WholeMicros(e) && WholeMicros(parent)) {
        e.end = parent.end;
        ++clamped;
      }
    }
    stack.push_back(i);
  }
  return clamped;
}

}  // namespace truffld::merge::kineto
