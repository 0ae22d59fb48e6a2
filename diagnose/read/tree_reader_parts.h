// Private building blocks of TreeReader (tree_reader.cc): the subtree aggregate an operator
// inherits from its calls and device activity, the per-step deduplication key, and the
// per-(rank, step, view) bucket that collects instances before Finish() lays them out.
// Internal header (not installed). Thread-safety: plain data.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string_view>
#include <functional>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "read/graph_replay.h"
#include "read/hash_mix.h"
#include "read/instances.h"

namespace truffld::diagnose::detail {

inline constexpr size_t kMaxDomains = 16;  // distinct NVTX domains kept per step and view

// Work signatures combine hashes with hash_mix.h's Mix.
inline uint64_t MixHash(uint64_t h, uint64_t v) { return Mix(h, v); }

// What an operator's OWN calls did (not its child operators'): device time and span, kernel
// blocks, time blocked on the device queue, and a timing-free hash of the work.
struct OwnWork {
  double device_time = 0, blocks = 0, wait = 0;
  int64_t dev_start = INT64_MAX, dev_end = INT64_MIN;
  uint64_t sig = 0;
  bool has_device = false;
  bool loads_code = false;  // a call loaded GPU code (IsCodeLoadCall)
  void Merge(const OwnWork& o) {
    device_time += o.device_time; blocks += o.blocks; wait += o.wait;
    dev_start = std::min(dev_start, o.dev_start);
    dev_end = std::max(dev_end, o.dev_end);
    if (o.sig != 0) sig = MixHash(sig, o.sig);
    has_device = has_device || o.has_device;
    loads_code = loads_code || o.loads_code;
  }
};

// Aggregates of a subtree that an enclosing operator inherits. Runtime (runtime_call) and
// driver (driver_call) calls are kept apart: a driver call nested in a runtime call counts in
// both, each in its own column.
struct SubtreeStats {
  double runtime_time = 0, runtime_count = 0, driver_time = 0, driver_count = 0;
  double kernel_count = 0, kernel_time = 0, bytes = 0;
  double latency_sum = 0, latency_n = 0;
  std::vector<std::pair<int64_t, int64_t>> device;
  std::vector<NameCount> kernels, apis;
  OwnWork own;  // of the calls below, up to the next operator range
  // `child_is_op`: the child is an operator range, whose own work stays its own.
  void Merge(const SubtreeStats& o, bool child_is_op) {
    if (!child_is_op) own.Merge(o.own);
    runtime_time += o.runtime_time; runtime_count += o.runtime_count;
    driver_time += o.driver_time; driver_count += o.driver_count; kernel_count += o.kernel_count;
    kernel_time += o.kernel_time; bytes += o.bytes; latency_sum += o.latency_sum;
    latency_n += o.latency_n;
    device.insert(device.end(), o.device.begin(), o.device.end());
    for (auto& k : o.kernels) Bump(kernels, k.name, k.count);
    for (auto& a : o.apis) Bump(apis, a.name, a.count);
  }
};

struct DedupKey {
  uint32_t family; int64_t start, end, thread;
  bool operator==(const DedupKey& o) const {
    return family == o.family && start == o.start && end == o.end && thread == o.thread;
  }
};
struct DedupHash {
  size_t operator()(const DedupKey& k) const {
    uint64_t h = k.family * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<uint64_t>(k.start) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(k.end) + 0x8CB92BA72F3D8DD7ull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(k.thread) + (h << 6) + (h >> 2);
    return h;
  }
};

struct PendingInstance {
  uint32_t family, layer, parent;
  int64_t start, end;
  int64_t thread = -1;
  FeatureVector f;
  InstanceDetail detail;
  std::vector<NameCount> kernels, apis;
};

// An outermost CUDA call with no operator range above it (an input copy issued directly under
// the step), with what it and its device work did.
struct DirectCall {
  int64_t start = 0, end = 0, thread = -1;
  SubtreeStats agg;
};

// The part of an instance its calls' subtree decides: API and device feature columns (runtime,
// driver, kernels, bytes, launch latency), its own device time, span and blocks, whether its
// calls loaded GPU code, and its kernel and API tallies.
inline void ApplySubtree(const SubtreeStats& agg, PendingInstance* p) {
  p->f[kRuntimeTimeNs] = agg.runtime_time;
  p->f[kRuntimeCount] = agg.runtime_count;
  p->f[kDriverTimeNs] = agg.driver_time;
  p->f[kDriverCount] = agg.driver_count;
  p->f[kKernelCount] = agg.kernel_count;
  p->f[kKernelTimeNs] = agg.kernel_time;
  p->f[kBytesMoved] = agg.bytes;
  p->f[kLaunchLatencyNs] = agg.latency_n > 0 ? agg.latency_sum / agg.latency_n : 0.0;
  p->detail.device_ns = static_cast<float>(agg.own.device_time);
  p->detail.blocks = static_cast<float>(agg.own.blocks);
  if (agg.own.has_device) {
    p->detail.device_start = agg.own.dev_start;
    p->detail.device_end = agg.own.dev_end;
    p->detail.flags |= kDetailHasDevice;
  }
  if (agg.own.loads_code) p->detail.flags |= kDetailLoadsCode;
  p->kernels = agg.kernels;
  p->apis = agg.apis;
}

struct StepBucket {
  StepInfo info;
  std::vector<DirectCall> direct;  // vertical view only; deduplicated by (start, end, thread)
  std::set<std::string, std::less<>> domains;  // NVTX domains seen (at most kMaxDomains)
  std::unordered_set<DedupKey, DedupHash> seen;
  std::vector<PendingInstance> instances;
  std::vector<PendingInstance> outside;  // the time no operator covers (outside_time.h)
  std::vector<int64_t> graph_ids;        // CUDA graphs its graph launches replayed (distinct)
  // Its device work (kernels, copies, memsets) as intervals; request trees repeat them, so the
  // list is folded into its union whenever it doubles (AddBusy).
  std::vector<std::pair<int64_t, int64_t>> busy;
  size_t busy_folded = 0;  // size after the last fold
};

}  // namespace truffld::diagnose::detail

namespace truffld::diagnose::detail {

// Innermost enclosing instance (local index into `ins`, -1 at the top) of every traced host
// range, by interval containment on its thread; graph-replay instances get -1 (they are device
// spans, not host ranges). `ins` is sorted by start. O(n log n).
std::vector<int32_t> NestInstances(const std::vector<PendingInstance>& ins);

// Position context of every instance: the local index of the top-level instance that precedes
// its own top-level ancestor on the same thread (graph-replay instances: the replay instance
// before it), or -1. Mixed into the work signature, it separates operators that launch the same
// grid at different places of a layer (a QKV and an output projection can share a grid but not
// their reduction size), so layer, tensor-parallel and step peers compare like with like.
std::vector<int32_t> PrecedingTopLevel(const std::vector<PendingInstance>& ins, const std::vector<int32_t>& parent);

}  // namespace truffld::diagnose::detail
