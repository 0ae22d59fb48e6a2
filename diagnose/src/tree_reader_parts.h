// Private building blocks of TreeReader (tree_reader.cc): the subtree aggregate an operator
// inherits from its calls and device activity, the per-step deduplication key, and the
// per-(rank, step, view) bucket that collects instances before Finish() lays them out.
// Internal header (not installed). Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "graph_replay.h"
#include "truffld/diagnose/instances.h"

namespace truffld::diagnose::detail {

inline constexpr size_t kMaxDomains = 16;  // distinct NVTX domains kept per step and view

// Aggregates of a subtree that an enclosing operator inherits. Runtime (runtime_call) and
// driver (driver_call) calls are kept apart: a driver call nested in a runtime call counts in
// both, each in its own column.
struct SubtreeStats {
  double runtime_time = 0, runtime_count = 0, driver_time = 0, driver_count = 0;
  double kernel_count = 0, kernel_time = 0, bytes = 0;
  double latency_sum = 0, latency_n = 0;
  std::vector<std::pair<int64_t, int64_t>> device;
  std::vector<NameCount> kernels, apis;
  void Merge(const SubtreeStats& o) {
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
  FeatureVector f;
  std::vector<NameCount> kernels, apis;
};

struct StepBucket {
  StepInfo info;
  std::set<std::string, std::less<>> domains;  // NVTX domains seen (at most kMaxDomains)
  std::unordered_set<DedupKey, DedupHash> seen;
  std::vector<PendingInstance> instances;
};

}  // namespace truffld::diagnose::detail
