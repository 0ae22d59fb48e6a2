// Correlation index pass.
#include "core/correlation.h"

#include <algorithm>
#include <string>

#include "core/sorted_runs.h"

namespace truffld::merge {

std::pair<const CorrEntry*, const CorrEntry*> CorrelationIndex::Calls(int64_t c) const {
  const CorrEntry* b = entries.data();
  const CorrEntry* e = b + entries.size();
  const CorrEntry* lo = std::lower_bound(b, e, c, [](const CorrEntry& x, int64_t v) { return x.corr < v; });
  const CorrEntry* hi = lo;
  while (hi != e && hi->corr == c) ++hi;
  return {lo, hi};
}

CorrelationIndex IndexCorrelations(const TraceFile& file, const std::vector<uint32_t>& calls, IngestStats* issues) {
  const std::vector<Event>& ev = file.events;
  CorrelationIndex out;
  out.entries.reserve(calls.size());
  for (uint32_t a : calls) out.entries.push_back({file.Correlation(ev[a]), a});
  // Each thread's calls come in correlation order already: a few runs to merge.
  SortRuns(&out.entries, [&](const CorrEntry& x, const CorrEntry& y) {
    if (x.corr != y.corr) return x.corr < y.corr;
    const TimeNs xs = ev[x.event].start, ys = ev[y.event].start;
    return xs != ys ? xs < ys : x.event < y.event;
  });
  const std::vector<CorrEntry>& c = out.entries;
  size_t outer = 0;  // the current group's outermost call
  for (size_t i = 1; i < c.size(); ++i) {
    if (c[i].corr != c[i - 1].corr) { outer = i; continue; }
    if (NestedIn(ev[c[i].event], ev[c[outer].event])) {
      ++out.nested_api_calls;
      continue;
    }
    const bool same_process = file.ProcessOf(ev[c[i].event]) == file.ProcessOf(ev[c[outer].event]);
    outer = i;
    if (c[i].corr == kNone || !same_process) continue;
    ++out.duplicate_correlations;
    issues->Report(file.meta.path + ":" + std::to_string(file.LineOf(c[i].event)), Problem::kDuplicateCorrelation,
                   "correlation id " + std::to_string(c[i].corr) +
                       " used by more than one API call; device activity goes to the latest call before it");
  }
  return out;
}

}  // namespace truffld::merge
