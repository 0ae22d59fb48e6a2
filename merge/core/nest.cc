// Nesting pass: per-thread stack scan, nested steps demoted, implicit steps, adoption.
#include "core/nest.h"

#include <algorithm>
#include <tuple>

#include "core/sorted_runs.h"

namespace truffld::merge {

bool StepSpan::operator<(const StepSpan& o) const {
  return std::tie(process, start, end, range) < std::tie(o.process, o.start, o.end, o.range);
}

uint32_t StepContaining(const std::vector<StepSpan>& steps, int64_t process, TimeNs s, TimeNs e) {
  auto it = std::upper_bound(steps.begin(), steps.end(), StepSpan{process, s, INT64_MAX, kNoRange});
  for (int tries = 0; it != steps.begin() && tries < 16; ++tries) {
    --it;
    if (it->process != process) break;
    if (it->start <= s && e <= it->end) return it->range;
  }
  return kNoRange;
}

namespace {

// The implicit step of `process`, or kNoRange (implicit steps are few: a linear search).
uint32_t ImplicitOf(const Nesting& n, const std::vector<ImplicitStep>& implicit, int64_t process) {
  for (size_t k = 0; k < implicit.size(); ++k)
    if (implicit[k].process == process) return n.real_ranges + uint32_t(k);
  return kNoRange;
}

// Parents by a stack scan over each thread's ranges in nesting order; steps and implicit steps.
void ScanThreads(const TraceFile& file, const std::vector<HostRange>& ranges,
                 const std::vector<ImplicitStep>& implicit, Nesting* n) {
  std::vector<uint32_t> stack;
  uint32_t thread = UINT32_MAX;  // of the stack
  for (uint32_t r : n->order) {
    const HostRange& h = ranges[r];
    if (h.thread != thread) { stack.clear(); thread = h.thread; }
    while (!stack.empty() && !(ranges[stack.back()].start <= h.start && h.end <= ranges[stack.back()].end))
      stack.pop_back();
    const uint32_t p = stack.empty() ? kNoRange : stack.back();
    n->parent[r] = p;
    if (n->layer[r] == Layer::kStep && p != kNoRange && n->step[p] != kNoRange) n->layer[r] = Layer::kOther;
    if (n->layer[r] == Layer::kStep) {
      n->step[r] = r;
    } else if (p != kNoRange) {
      n->step[r] = n->step[p];
    } else if (!implicit.empty()) {
      const uint32_t s = ImplicitOf(*n, implicit, file.threads[h.thread].process_id);
      n->parent[r] = n->step[r] = s;
    }
    stack.push_back(r);
  }
}

// A range in no step joins its parent's step, or the step of its process containing it.
void Adopt(const TraceFile& file, const std::vector<HostRange>& ranges, Nesting* n) {
  for (uint32_t r : n->order) {
    if (n->step[r] != kNoRange) continue;
    const uint32_t p = n->parent[r];
    if (p != kNoRange && n->step[p] != kNoRange) { n->step[r] = n->step[p]; continue; }
    const HostRange& h = ranges[r];
    const uint32_t s = StepContaining(n->steps, file.threads[h.thread].process_id, h.start, h.end);
    if (s == kNoRange) continue;
    n->parent[r] = n->step[r] = s;
    ++n->adopted_ranges;
  }
}

}  // namespace

Nesting NestRanges(const TraceFile& file, const std::vector<HostRange>& ranges, const RangeLayers& layers) {
  Nesting n;
  n.real_ranges = uint32_t(ranges.size());
  const size_t total = ranges.size() + layers.implicit.size();
  n.parent.assign(total, kNoRange);
  n.step.assign(total, kNoRange);
  n.layer = layers.layer;
  n.layer.resize(total, Layer::kStep);
  for (size_t k = 0; k < layers.implicit.size(); ++k) n.step[ranges.size() + k] = uint32_t(ranges.size() + k);
  n.order.resize(ranges.size());
  for (uint32_t i = 0; i < ranges.size(); ++i) n.order[i] = i;
  // Pass 1 yields a few blocks each in this order (complete, push/pop, start/end ranges):
  // merged, not comparison-sorted.
  SortRuns(&n.order, [&](uint32_t a, uint32_t b) { return NestingLess(ranges[a], ranges[b]); });
  ScanThreads(file, ranges, layers.implicit, &n);
  for (uint32_t r = 0; r < total; ++r) {
    if (n.step[r] != r) continue;
    if (n.IsImplicit(r)) {
      const ImplicitStep& s = layers.implicit[r - n.real_ranges];
      n.steps.push_back({s.process, s.start, s.end, r});
    } else {
      n.steps.push_back({file.threads[ranges[r].thread].process_id, ranges[r].start, ranges[r].end, r});
    }
  }
  std::sort(n.steps.begin(), n.steps.end());
  if (!n.steps.empty()) Adopt(file, ranges, &n);
  return n;
}

}  // namespace truffld::merge
