// Graph-replay grouping: turns the device nodes of one cudaGraphLaunch, each tagged by merge
// with the operator range open when it was captured (`captured_in`), into operator instances.
// A CUDA-graph replay records no operator ranges, so this is the only way Stage I sees the
// operators (all-reduce, attention, norms) of decode steps. Consecutive nodes captured under
// the same range name form one instance. Pure logic on plain values (no JSON, no I/O), shared
// with tree_reader.cc through this internal header. Times: ns on merge's axis. Thread-safe:
// stateless functions.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "read/instances.h"

namespace truffld::diagnose::detail {

// Whether an API name launches a CUDA graph (cudaGraphLaunch*, cuGraphLaunch*).
inline bool IsGraphLaunchName(std::string_view api) {
  return api.rfind("cudaGraphLaunch", 0) == 0 || api.rfind("cuGraphLaunch", 0) == 0;
}

// One device node under a graph launch (the string views point into the parsed line).
struct GraphNode {
  int64_t start = 0, end = 0, bytes = 0;  // ns; bytes for memcpy/memset nodes
  bool is_kernel = false;
  uint32_t kernel_family = kNoString;     // interned device family
  uint64_t shape = 0;                     // hash of the node's name, grid, block and bytes
  double blocks = 0;                      // grid blocks (kernels)
  std::string_view cap_name, cap_layer, cap_family;  // captured_in
};

// A group's instance span and features (kPhaseCode, comm payload and API fields left 0).
struct GraphInstance {
  int64_t start = 0, end = 0;
  FeatureVector f{};
  uint64_t shape = 0;   // combined node shapes, in start order
  double blocks = 0;
  std::vector<NameCount> kernels;
};

// Sorts `nodes` by start and returns [first, first + count) runs of one capture.
std::vector<std::pair<size_t, size_t>> GroupByCapture(std::vector<GraphNode>* nodes);

// Span and features of nodes [g, g + n); `launch_latency_ns` = launch call -> first graph node
// of the replay (shared: a node's offset inside the graph reflects its position, not a fault).
GraphInstance SummariseGraphGroup(const GraphNode* g, size_t n, int64_t launch_latency_ns);

// Union length of intervals (sorts `iv` in place); intervals with end < start are ignored.
int64_t UnionLength(std::vector<std::pair<int64_t, int64_t>>& iv);

// Adds `n` to the tally of `id` in `v` (appends it when absent).
void Bump(std::vector<NameCount>& v, uint32_t id, uint32_t n);

}  // namespace truffld::diagnose::detail
