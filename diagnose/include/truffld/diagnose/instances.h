// Operator instances: the rows Stage I scores.
//
// An InstanceTable is the flat, column-friendly form of every operator instance (a node of
// layer frontend_op, backend_op, comm or other) found in a set of call-chain trees, grouped
// by step and view. Names are interned once in a StringTable so millions of instances cost
// a few integers each. Features are raw (ns, counts, bytes); the log1p transform and robust
// standardisation happen in features.h so the raw values can also be exported for baselines.
// Thread-safety: plain data; build on one thread, then read from any number of threads.
#pragma once

#include "truffld/string_pool.h"
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace truffld::diagnose {

// Raw feature vector phi(x). Times are integer ns on the merged axis (stored as double).
enum Feature : int {
  kDurationNs = 0,     // end - start of the operator range
  kSelfTimeNs,         // duration minus the time covered by child operator ranges
  kRuntimeTimeNs,      // summed duration of CUDA runtime calls (layer runtime_call) in the subtree
  kRuntimeCount,       // number of CUDA runtime calls in the subtree
  kDriverTimeNs,       // summed duration of CUDA driver calls (layer driver_call) in the subtree
  kDriverCount,        // number of CUDA driver calls in the subtree
  kKernelCount,        // kernels launched from the subtree
  kKernelTimeNs,       // summed kernel durations (GPU clock mapped to the merged axis)
  kBytesMoved,         // memcpy + memset bytes
  kStreamOverlap,      // 1 - union(device intervals) / sum(device intervals), in [0, 1)
  kLaunchLatencyNs,    // mean (device start - launching call start), >= 0
  kCommBytes,          // message bytes of a comm range (payload.bytes or node bytes)
  kWorldSize,          // communicator size of a comm range
  kPhaseCode,          // step phase: 0 unknown, 1 decode, 2 prefill, 3 mixed (separates regimes)
  kNumFeatures
};
// Column names of the feature export (--export-features): "duration_ns", "self_time_ns",
// "runtime_time_ns", "runtime_count", "driver_time_ns", "driver_count", ...
const char* FeatureName(int f) noexcept;

using FeatureVector = std::array<double, kNumFeatures>;

// Interns strings; ids are dense from 0. The lookup is the shared interner's
// (truffld/string_pool.h, whose ids start at 1); Get hands out std::string references, so a copy
// of each distinct string is kept beside it. Not thread-safe for Intern().
class StringTable {
 public:
  uint32_t Intern(std::string_view s);
  const std::string& Get(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  StringPool pool_;
  std::vector<std::string> strings_;  // by id: pool id - 1
};

inline constexpr uint32_t kNoString = 0xffffffffu;

// One (rank, step_index, view): the unit Stage I, Stage II and the labels talk about.
struct StepInfo {
  std::optional<int64_t> rank;
  int64_t step_index = 0;
  std::string view;              // "vertical" | "horizontal"
  std::string step_name;
  std::string phase = "unknown";
  std::vector<std::string> requests;
  int64_t start_ns = 0, end_ns = 0;  // merged axis
  int trees = 0;                     // request trees that contributed
  int64_t comm_bytes = 0;            // summed over the step's comm instances
  int64_t world_size = 0;            // largest seen
  int graph_launches = 0;            // cudaGraphLaunch/cuGraphLaunch calls in this view's trees
  std::vector<std::string> nvtx_domains;  // distinct NVTX domains of the view's ranges, sorted
  std::string regime = "eager";      // "graph" when the (rank, step)'s vertical tree launches a
                                     // CUDA graph (decode replay), else "eager"; set by Finish()
  uint32_t first_instance = 0;       // instances of this step: [first, first + count)
  uint32_t instance_count = 0;
};

// Phase name -> kPhaseCode value.
double PhaseCode(const std::string& phase) noexcept;

// Small per-instance tallies of the kernels and API calls under an operator.
struct NameCount {
  uint32_t name = kNoString;
  uint32_t count = 0;
};

struct InstanceTable {
  StringTable strings;
  std::vector<StepInfo> steps;
  // Per instance (parallel arrays, grouped contiguously by step):
  std::vector<uint32_t> step;       // index into steps
  std::vector<uint32_t> family;     // interned family name
  std::vector<uint32_t> layer;      // interned layer name
  std::vector<uint32_t> parent;     // interned parent family, kNoString at the root
  std::vector<int64_t> start_ns;
  std::vector<int64_t> end_ns;
  std::vector<FeatureVector> features;
  // Either empty (benchmarks, exports) or one entry per instance; Add() leaves them alone.
  std::vector<std::vector<NameCount>> kernels;
  std::vector<std::vector<NameCount>> api_calls;

  size_t size() const { return family.size(); }
  // Appends one instance to the last step; returns its index.
  uint32_t Add(uint32_t family_id, uint32_t layer_id, uint32_t parent_id, int64_t start,
               int64_t end, const FeatureVector& f);
};

// Identity of a step across runs and label files.
struct StepKey {
  int64_t rank = -1;  // -1 when the process had no rank
  int64_t step_index = 0;
  bool horizontal = false;
  bool operator==(const StepKey& o) const {
    return rank == o.rank && step_index == o.step_index && horizontal == o.horizontal;
  }
  bool operator<(const StepKey& o) const {
    if (rank != o.rank) return rank < o.rank;
    if (step_index != o.step_index) return step_index < o.step_index;
    return horizontal < o.horizontal;
  }
};
StepKey KeyOf(const StepInfo& s);

}  // namespace truffld::diagnose
