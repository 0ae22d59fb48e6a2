// Internal pieces of the peer expectations (peers.cc, fit.cc): the grouping keys of each
// test row and the row builders. Not installed. Thread-safety: plain functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "read/hash_mix.h"
#include "truffld/parallel_for.h"
#include "peer/peers.h"

namespace truffld::diagnose::detail {

// Grouping keys of one TestRow (hashes; 0 = no group).
struct RowKeys {
  uint64_t layer = 0;  // same unit, same signature, same metric
  uint64_t tp = 0;     // same logical step, signature, occurrence and metric, other ranks, and the
                       // same device detail (sampled device windows may start on other steps per
                       // rank; activity tracing slows the host side of every call it records)
  uint64_t time = 0;   // same rank, view, signature and metric, other steps
  uint64_t fit = 0;    // same rank, view, operator (layer, family, parent) and metric: any size
  double x = 0;        // log1p size for the fit: launched blocks or bytes (device), step size (host)
};

// Calls fn(begin, end) over consecutive chunks of [0, n) on up to `threads` threads
// (ParallelFor), so that a caller keeps scratch buffers per chunk; one call on [0, n) when
// threads <= 1. For loops whose iterations write disjoint rows: any chunking gives one result.
template <class Fn>
void ForChunks(size_t n, int threads, Fn&& fn) {
  if (threads <= 1 || n < 2) return fn(size_t{0}, n);
  const size_t chunks = std::min<size_t>(n, static_cast<size_t>(threads) * 16);
  ParallelFor(chunks, threads, [&](size_t c) { fn(n * c / chunks, n * (c + 1) / chunks); });
}

// Sorts (key, index) pairs whose indices ascend in `v` into std::sort's order (key, then index):
// a stable least-significant-digit radix sort on the key, 11 bits a pass, passes whose digit is
// the same in every key skipped. Linear in v's size: for the table-wide groupings.
void RadixSortByKey(std::vector<std::pair<uint64_t, uint32_t>>* v);

// Median of v (reorders v); NaN when empty.
double MedianOf(std::vector<double>& v);

// One row per (operator instance, applicable metric).
void MakeInstanceRows(const InstanceTable& t, const UnitGroups& g, const std::vector<CommTiming>& comm,
                      std::vector<TestRow>* rows, std::vector<RowKeys>* keys);
// One row per (unit, family with >= 2 instances, metric): the sum over the family's instances.
void MakeFamilyRows(const InstanceTable& t, const UnitGroups& g, const std::vector<CommTiming>& comm,
                    std::vector<TestRow>* rows, std::vector<RowKeys>* keys);

void FillLayer(std::vector<TestRow>& rows, const std::vector<RowKeys>& keys, const PeerOptions& o);
void FillTp(std::vector<TestRow>& rows, const std::vector<RowKeys>& keys, int threads);
// Similar steps of the same shape: the median over the nearest units (NearestUnits) that hold
// the row's time key.
void FillTimeExact(std::vector<TestRow>& rows, const std::vector<RowKeys>& keys,
                   const std::vector<std::vector<uint32_t>>& near, const PeerOptions& o, const InstanceTable& t);
// Per unit, up to 12 x time_neighbours other units of its rank, view and regime within
// max_workload_distance, nearest first (candidates within 4,096 steps of it).
std::vector<std::vector<uint32_t>> NearestUnits(const InstanceTable& t, const std::vector<UnitWorkload>& w,
                                                const PeerOptions& o);
// Per unit, the median of `cycle_ns` over its nearest `time_neighbours` units in `near`; NaN
// with fewer than min_time_neighbours of them.
std::vector<double> SimilarCycles(const std::vector<double>& cycle_ns, const std::vector<std::vector<uint32_t>>& near,
                                  const PeerOptions& o);
// Similar-steps expectation by a local log-log fit, for rows FillTimeExact left empty.
void FillTimeFit(const InstanceTable& t, std::vector<TestRow>& rows, const std::vector<RowKeys>& keys,
                 const std::vector<UnitWorkload>& w, const PeerOptions& o);

}  // namespace truffld::diagnose::detail
