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
#include "truffld/verdict.h"
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
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

// How a step ran its device work: launched op by op, or replayed from a CUDA graph.
enum class Regime : uint8_t { kEager, kGraph };
inline const char* RegimeName(Regime r) noexcept { return r == Regime::kGraph ? "graph" : "eager"; }

// One (rank, step_index, view): the unit Stage I, Stage II and the labels talk about.
struct StepInfo {
  std::optional<int64_t> rank;
  std::string host;              // host name from the trees ("" when absent)
  int64_t step_index = 0;
  View view = View::kVertical;
  std::string step_name;
  std::string phase = "unknown";
  std::vector<std::string> requests;
  int64_t start_ns = 0, end_ns = 0;  // merged axis
  int trees = 0;                     // request trees that contributed
  int64_t comm_bytes = 0;            // summed over the step's comm instances
  int64_t world_size = 0;            // largest seen
  int graph_launches = 0;            // cudaGraphLaunch/cuGraphLaunch calls in this view's trees
  std::vector<std::string> nvtx_domains;  // distinct NVTX domains of the view's ranges, sorted
  Regime regime = Regime::kEager;    // kGraph when the (rank, step)'s vertical tree launches a
                                     // CUDA graph (decode replay); set by Finish()
  uint32_t first_instance = 0;       // instances of this step: [first, first + count)
  uint32_t instance_count = 0;
  // Workload the step computed, for comparing it with steps that did similar work. Tags come
  // from the step name (`[tokens:N]`, `[ctx:N]`, written by truffld's hooks); -1 when absent.
  int64_t tokens = -1;               // tokens scheduled in the step
  int64_t context = -1;              // summed context length of its requests
  int64_t batch = -1;                // requests, as an engine's own step annotation counts them
  double work_blocks = 0;            // grid blocks of every kernel in the view (timing-free size)
  double h2d_bytes = 0;              // host-to-device bytes copied in the view (input size)
  bool device_detail = true;         // false: captured outside a sampled device window
  // false: outside a detail window the rank recorded no operator range either (two-tier capture:
  // only the step, its communication and blocking calls). The step is judged on step-level
  // evidence only: its duration, the time before it, its communication (outside_time.h).
  bool operator_detail = true;
  // Latest device end of the same rank's previous step (both views) when it ran past that step's
  // host end (the device was still busy when the host moved on), else 0. The replay keeps the
  // device busy until then (replay.h).
  int64_t prev_device_end = 0;
};

// Phase name -> kPhaseCode value.
double PhaseCode(const std::string& phase) noexcept;

// What an instance computed and what it cost, split so peers can be compared fairly (filled by
// TreeReader; empty in hand-built tables, which peer scoring then treats as "no detail").
// Times are ns on the merged axis; floats keep 5 M instances within memory (7 significant
// digits is far below timing noise).
struct InstanceDetail {
  uint64_t signature = 0;     // hash of family, parent family and its own kernels' names, grids
                              // and blocks, copy bytes and comm bytes: what it did, never timing
  uint64_t position = 0;      // hash of layer, family, parent family and the operator before it:
                              // where in a layer it runs, whatever the size (for size fits)
  int64_t device_start = 0;   // first device activity of its own calls (0: none)
  int64_t device_end = 0;     // last device end of its own calls
  int32_t parent = -1;        // enclosing operator instance (table index), -1 at the top
  float host_ns = 0;          // own host time: self time minus time blocked on the device queue
  float device_ns = 0;        // own device time: kernels, copies, memsets of its own calls
  float wait_ns = 0;          // time its own calls were blocked waiting for earlier device work
  float blocks = 0;           // grid blocks of its own kernels
  uint8_t flags = 0;          // kDetail* bits below
  // A CUDA-graph node group (kDetailReplay): when the graph launch call that ran it began (its
  // nodes queue from then on, whatever operator the host was in when they ran); 0 unknown.
  int64_t graph_launch = 0;
};
inline constexpr uint8_t kDetailReplay = 1;     // rebuilt from a CUDA-graph replay (no host range)
inline constexpr uint8_t kDetailHasDevice = 2;  // its own calls launched device work
// Its own calls loaded GPU code (IsCodeLoadCall): the first use of a kernel (lazy module
// loading, a JIT-compiled or runtime-generated kernel), whose host cost is warm-up, not a fault.
inline constexpr uint8_t kDetailLoadsCode = 4;
// A step's time that no operator range covers, judged like an operator (outside_time.h): host
// time between operators, the time since the previous step, calls issued directly under the step.
inline constexpr uint8_t kDetailOutside = 8;
// A cost every rank of a tensor-parallel group pays together (the engine's time between steps:
// one scheduler drives every worker), so tensor-parallel peers cannot say it was too long.
inline constexpr uint8_t kDetailGroupCost = 16;
// The device idle time of a step (outside_time.h): not host work; the what-if replay cuts it
// from the device timeline (replay.h), never from the host's.
inline constexpr uint8_t kDetailIdle = 32;

// Whether a comm family is point-to-point (send/recv, any case) rather than a collective, and
// whether it sends (to another pipeline stage: send and not recv). Pure.
bool IsPointToPoint(std::string_view family);
bool IsSendFamily(std::string_view family);

// Families of the time no operator range covers (kDetailOutside; read/outside_time.h).
inline constexpr const char* kHostOutsideFamily = "(host outside operators)";
inline constexpr const char* kBetweenStepsFamily = "(between steps)";
inline constexpr const char* kStepCallsFamily = "(calls under the step)";
inline constexpr const char* kDeviceIdleFamily = "(device idle)";
// Whether interned family `family` of `strings` is the device's idle time. Pure.
inline bool IsDeviceIdleFamily(const StringTable& strings, uint32_t family) {
  return strings.Get(family) == kDeviceIdleFamily;
}
// A step without operator detail (StepInfo::operator_detail false): its whole duration.
inline constexpr const char* kWholeStepFamily = "(whole step)";
// What the evidence of such a step says, and how to get detail for it next time.
inline constexpr const char* kNoOperatorDetail =
    "judged on step-level evidence only (step time, time between steps, communication): no operator "
    "detail recorded for this step: outside a detail window; a window opens after slow steps, or on "
    "demand with touch $TRUFFLD_OUTPUT_DIR/truffld.detail";

// Whether a CUDA driver/runtime API name loads GPU code into the context: cuModuleLoad*,
// cuLibraryLoad*, cudaLibraryLoad* (truffld's injector records these by default) and
// cuLinkComplete (recorded only when every API call is). Pure.
bool IsCodeLoadCall(std::string_view api) noexcept;

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
  // Either empty or one entry per instance (TreeReader fills it; see InstanceDetail).
  std::vector<InstanceDetail> detail;

  size_t size() const { return family.size(); }
  // Room for `n` instances in every per-instance column (Add, detail, kernels, api_calls).
  void Reserve(size_t n);
  // Appends one instance to the last step; returns its index.
  uint32_t Add(uint32_t family_id, uint32_t layer_id, uint32_t parent_id, int64_t start,
               int64_t end, const FeatureVector& f);
};

// Unit `u`'s (between steps) pseudo-instance (outside_time.h): its table index, or -1 when it
// has none (or the table has no detail to mark it). Pure.
int64_t BetweenStepsInstance(const InstanceTable& t, uint32_t u);

// The vertical unit of each (rank, step index) of `t` (rank -1 when the process had none): how
// a horizontal unit, or any unit, finds its step's vertical view. Pure.
std::map<std::pair<int64_t, int64_t>, uint32_t> VerticalUnits(const InstanceTable& t);

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
