// API attribution pass: one walk over the calls in (thread, time) order beside the ranges in
// nesting order, keeping the thread's open ranges on a stack.
#include "core/api_calls.h"

#include <algorithm>

#include "core/host_ranges.h"
#include "truffld/merge/pipeline.h"  // PrefetchLine

namespace truffld::merge {
namespace {

// The walk: the ranges of the current call's thread that started before it, innermost last.
class RangeCursor {
 public:
  RangeCursor(const std::vector<HostRange>& ranges, const std::vector<uint32_t>& order) : r_(ranges), order_(order) {}

  // The innermost range of the call's thread containing [start, end], or kNoRange. Calls come
  // in (thread, start) order.
  uint32_t Innermost(uint32_t thread, TimeNs start, TimeNs end) {
    if (thread != thread_) { stack_.clear(); thread_ = thread; }
    while (next_ < order_.size() && r_[order_[next_]].thread < thread) ++next_;
    for (; next_ < order_.size(); ++next_) {
      const HostRange& h = r_[order_[next_]];
      if (h.thread != thread || h.start > start) break;
      while (!stack_.empty() && r_[stack_.back()].end < h.start) stack_.pop_back();
      stack_.push_back(order_[next_]);
    }
    while (!stack_.empty() && r_[stack_.back()].end < start) stack_.pop_back();
    // The owner must contain the whole call (a call starting as a range ends belongs to the
    // enclosing range); partially overlapping ranges can also leave a non-containing entry on
    // top of the stack. Walk down to the innermost range containing [start, end].
    for (size_t k = stack_.size(); k-- > 0;) {
      const HostRange& h = r_[stack_[k]];
      if (h.start <= start && end <= h.end) return stack_[k];
    }
    return kNoRange;
  }

 private:
  const std::vector<HostRange>& r_;
  const std::vector<uint32_t>& order_;
  size_t next_ = 0;
  std::vector<uint32_t> stack_;
  uint32_t thread_ = UINT32_MAX;
};

}  // namespace

ApiCalls AttachApiCalls(const TraceFile& file, const std::vector<HostRange>& ranges,
                        const std::vector<ImplicitStep>& implicit, const Nesting& nesting, bool with_capture) {
  const std::vector<Event>& ev = file.events;
  ApiCalls out;
  out.calls.Build(ev, [](const Event& e) { return IsApiKind(e.kind); });
  out.order.reserve(out.calls.size());
  for (uint32_t i = 0; i < ev.size(); ++i)
    if (out.calls.Has(i)) out.order.push_back(i);
  OrderByThreadThenTime(ev, &out.order);
  out.owner.assign(out.calls.size(), kNoRange);
  if (with_capture) out.capture.assign(out.calls.size(), kNoRange);
  RangeCursor cursor(ranges, nesting.order);
  constexpr size_t kAhead = 16;  // calls lie scattered among other events: load ahead
  for (size_t k = 0; k < out.order.size(); ++k) {
    if (k + kAhead < out.order.size()) PrefetchLine(&ev[out.order[k + kAhead]]);
    const uint32_t a = out.order[k];
    const Event& e = ev[a];
    const TimeNs end = std::max(e.start, e.end);
    const int64_t process = file.ProcessOf(e);
    uint32_t owner = cursor.Innermost(e.thread, e.start, end);
    if (with_capture) out.capture[out.calls.Rank(a)] = owner;
    if (owner == kNoRange)
      for (size_t s = 0; s < implicit.size(); ++s)
        if (implicit[s].process == process) owner = nesting.real_ranges + uint32_t(s);
    if ((owner == kNoRange || nesting.step[owner] == kNoRange) && !nesting.steps.empty()) {
      const uint32_t s = StepContaining(nesting.steps, process, e.start, end);
      if (s != kNoRange) { owner = s; ++out.adopted; }
    }
    if (owner == kNoRange || nesting.step[owner] == kNoRange) {
      ++out.outside_step;
      owner = kNoRange;
    }
    out.owner[out.calls.Rank(a)] = owner;
  }
  return out;
}

}  // namespace truffld::merge
