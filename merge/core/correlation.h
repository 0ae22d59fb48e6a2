// Pass 5, the correlation index: API calls by correlation id, and the calls sharing one.
//
// Rules (merge/README.md, "Device activity"): CUPTI gives a driver call made inside a runtime
// call (cuBLAS, cudaMalloc) the runtime call's correlation id: a call nested in the group's
// current outermost call on the same thread is normal (nested_api_calls); a call outside it,
// in the same process, is a duplicate correlation (counted and reported with file:line).
// Input: the TraceFile and the calls in (thread, time) order (ApiCalls::order).
// Output: CorrelationIndex. Thread-safety: pure function (reports go to `issues`).
#pragma once

#include <cstdint>
#include <vector>

#include "truffld/merge/event.h"

namespace truffld::merge {

// An API call's correlation id and event, 12 bytes (packed: an int64 and a uint32 would take
// 16), ordered by (correlation, call start, event).
struct __attribute__((packed)) CorrEntry {
  int64_t corr;
  uint32_t event;
};
static_assert(sizeof(CorrEntry) == 12);

struct CorrelationIndex {
  std::vector<CorrEntry> entries;  // sorted
  uint64_t nested_api_calls = 0;
  uint64_t duplicate_correlations = 0;
  // The entries of correlation id c: [first, last).
  std::pair<const CorrEntry*, const CorrEntry*> Calls(int64_t c) const;
};

CorrelationIndex IndexCorrelations(const TraceFile& file, const std::vector<uint32_t>& calls, IngestStats* issues);

// `inner` runs inside `outer` on the same thread (a driver call made by a runtime call).
inline bool NestedIn(const Event& inner, const Event& outer) {
  return inner.thread == outer.thread && outer.start <= inner.start && inner.end <= outer.end;
}

}  // namespace truffld::merge
