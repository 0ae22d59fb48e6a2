// Graph-replay grouping (see graph_replay.h): captured graph nodes -> operator instances.
#include "read/graph_replay.h"

#include "read/hash_mix.h"

#include <algorithm>

namespace truffld::diagnose::detail {

int64_t UnionLength(std::vector<std::pair<int64_t, int64_t>>& iv) {
  std::sort(iv.begin(), iv.end());
  int64_t total = 0, cs = 0, ce = 0;
  bool open = false;
  for (auto [s, e] : iv) {
    if (e < s) continue;
    if (!open || s > ce) {
      if (open) total += ce - cs;
      cs = s; ce = e; open = true;
    } else {
      ce = std::max(ce, e);
    }
  }
  if (open) total += ce - cs;
  return total;
}

void Bump(std::vector<NameCount>& v, uint32_t id, uint32_t n) {
  for (auto& nc : v) if (nc.name == id) { nc.count += n; return; }
  v.push_back({id, n});
}

std::vector<std::pair<size_t, size_t>> GroupByCapture(std::vector<GraphNode>* nodes) {
  std::stable_sort(nodes->begin(), nodes->end(),
                   [](const GraphNode& a, const GraphNode& b) { return a.start < b.start; });
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t i = 0; i < nodes->size();) {
    size_t j = i + 1;
    while (j < nodes->size() && (*nodes)[j].cap_name == (*nodes)[i].cap_name) ++j;
    runs.emplace_back(i, j - i);
    i = j;
  }
  return runs;
}

GraphInstance SummariseGraphGroup(const GraphNode* g, size_t n, int64_t launch_latency_ns) {
  GraphInstance out;
  out.f.fill(0.0);
  if (n == 0) return out;
  out.start = g[0].start;
  out.end = g[0].end;
  std::vector<std::pair<int64_t, int64_t>> dev;
  double sum = 0, bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    out.start = std::min(out.start, g[i].start);
    out.end = std::max(out.end, g[i].end);
    const double d = static_cast<double>(std::max<int64_t>(0, g[i].end - g[i].start));
    sum += d;
    dev.emplace_back(g[i].start, g[i].end);
    out.shape = Mix(out.shape, g[i].shape);
    out.blocks += g[i].blocks;
    if (g[i].is_kernel) {
      out.f[kKernelCount] += 1;
      out.f[kKernelTimeNs] += d;
      Bump(out.kernels, g[i].kernel_family, 1);
    } else {
      bytes += static_cast<double>(g[i].bytes);
    }
  }
  const double dur = static_cast<double>(std::max<int64_t>(0, out.end - out.start));
  out.f[kDurationNs] = dur;
  out.f[kSelfTimeNs] = dur;  // no nested operator ranges exist in a replay
  out.f[kBytesMoved] = bytes;
  const double uni = static_cast<double>(UnionLength(dev));
  out.f[kStreamOverlap] = sum > 0 ? std::clamp(1.0 - uni / sum, 0.0, 1.0) : 0.0;
  out.f[kLaunchLatencyNs] = static_cast<double>(std::max<int64_t>(0, launch_latency_ns));
  return out;
}

}  // namespace truffld::diagnose::detail
