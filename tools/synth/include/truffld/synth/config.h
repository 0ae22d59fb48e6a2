// What truffld-synth is asked to generate: topology, workload, fault mix and output options.
//
// SynthConfig is plain data filled by the CLI (or a test) and checked once by Validate() before
// any work starts, so the simulator can trust it. Presets name the configurations the README
// demo, the tests and the evaluation suite rely on; a preset only sets defaults that explicit
// flags may then override. Times are integer nanoseconds; intensities are slowdown factors
// (2.0 = the affected work takes twice its normal time).
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "truffld/status.h"

namespace truffld::synth {

// The injected fault classes of the design (software, CUDA, hardware contention, network, engine).
enum class FaultClass : uint8_t {
  kSoftware,       // an operator family's host-side body is delayed (eager steps only)
  kCudaKernel,     // kernels of one class (gemm, attention, norm, elementwise) run slower
  kMemcpy,         // memory copies inflate (memory pressure)
  kContention,     // every kernel/copy on one GPU slows during a short window
  kCommunication,  // collective / point-to-point transfer time grows (group, rank or link scope)
  kEngine,         // engine scheduling delay: a step's input preparation stalls
  kHostGap,        // a host stall between two operators, outside every operator range
  kSchedDelay,     // the scheduler is slow: every rank of a replica starts the next step later
  kDirectCopy,     // the input copy issued directly under the step range runs slower
  kDeviceStarve,   // the compute stream waits on an event between two operators: the GPU idles
};
constexpr int kNumFaultClasses = 10;
const char* FaultClassName(FaultClass c) noexcept;      // "software", "cuda_kernel", ...
const char* FaultClassLayer(FaultClass c) noexcept;     // the ledger "layer": software/cuda/hardware/network/engine
bool ParseFaultClass(std::string_view s, FaultClass* out) noexcept;

// Named intensity levels (slowdown factors). "negligible" is below the default labelling
// threshold on purpose: such faults perturb the trace but do not make a step abnormal.
struct IntensityLevel {
  const char* name;
  double factor;
};
const std::vector<IntensityLevel>& IntensityLevels();
// "mild" -> {1.3, 1.6}, "strong" -> {2.5, 4.0}, "all" -> every level, or a comma list of numbers.
Result<std::vector<double>> ParseIntensities(std::string_view spec);
const char* IntensityName(double factor) noexcept;     // level name, or "custom"

// Where a communication fault applies: every rank of a TP group (its collectives), one rank (its
// collectives or its pipeline send/recv), or one link = a pair of ranks (TP ring neighbours'
// collectives, or a pipeline send/recv pair across hosts).
enum class CommScope : uint8_t { kGroup, kRank, kLink };
constexpr int kNumCommScopes = 3;
const char* CommScopeName(CommScope s) noexcept;  // "group", "rank", "link"
// "all" or a comma list of scope names.
Result<std::vector<CommScope>> ParseCommScopes(std::string_view spec);

// How noisy healthy work is (nothing here is labelled): log-normal sigma of device durations, the
// share of kernels that hiccup and by how much at most, and a factor on every host-side jitter.
struct NoiseModel {
  double device_jitter = 0.04;
  double hiccup_rate = 0.002;
  double hiccup_max = 1.4;
  double host_scale = 1.0;
};

struct SynthConfig {
  uint64_t seed = 1;
  // Topology: `ranks` processes over `hosts` hosts; each host runs one tensor-parallel group of
  // ranks/hosts ranks with its own clock. `pp` consecutive hosts form one data-parallel replica
  // (its own request stream) whose layers are split into `pp` pipeline stages, one per host;
  // pp = 1 makes every host a replica of its own.
  int ranks = 2;
  int hosts = 1;
  int pp = 1;
  int layers = 36;                 // decoder layers of the Qwen3-8B-like stack
  // Size: steps per replica, or (when steps == 0) an approximate total record budget.
  int64_t steps = 0;
  int64_t target_events = 100000;
  // Workload: "online" (Poisson arrivals) or "offline" (a large batch queued at time zero).
  std::string workload = "online";
  double arrivals_per_step = 0.6;  // online mean new requests per step
  int max_num_seqs = 48;           // running requests per replica (decode batch bound)
  int max_prefill_tokens = 4096;   // token budget of one prefill step
  bool cuda_graphs = true;         // decode steps replayed from CUDA graphs
  bool chunked_prefill = false;    // mixed steps: decodes plus prompt chunks in one budget
  double prompt_scale = 1.0;       // multiplies every prompt length (before the budget clamp)
  bool phase_tags = true;          // step names carry [phase:X]
  bool workload_tags = true;       // step names carry [tokens:N][ctx:N]
  NoiseModel noise;
  // Faults.
  std::vector<FaultClass> fault_classes;  // empty = none enabled
  std::vector<double> intensities = {1.1, 1.3, 1.6, 2.5, 4.0};
  std::vector<CommScope> comm_scopes = {CommScope::kGroup, CommScope::kRank, CommScope::kLink};
  double abnormal_fraction = 0.5;  // target share of (rank, step) pairs with a labelled fault
  double label_min_intensity = 1.25;
  // A fault labels a step only when it costs the step at least this share of the step's
  // counterfactual duration (the same step re-simulated without faults); cheaper ones are
  // absorbed (labelled normal, with cost_ns and absorbed: true).
  double label_min_cost_share = 0.01;
  // Host-ahead regime: every nominal device duration is multiplied by device_scale (a larger
  // model per GPU), so steps are device-bound and the GPU queue absorbs host stalls.
  bool host_ahead = false;
  double device_scale = 1.0;
  // A slower node (--slow-host H:FACTOR): every kernel on host `slow_host` (index from 0, -1 =
  // none) takes `slow_host_factor` times its nominal time in every step. Unlabelled: inside its
  // replica every peer shares the slowness; only other replicas show it (truffld-fleet).
  int slow_host = -1;
  double slow_host_factor = 1.0;
  // The GPU model every META names (--device-name): a fleet of two GPU types is two runs.
  std::string device_name = "NVIDIA H100 80GB HBM3";
  // A slower operator (--slow-family FAMILY:FACTOR): the kernels of every op whose label family
  // (innermost backend family, e.g. aten::mm) is `slow_family` take `slow_family_factor` times
  // their nominal time on every host and step (a regression between two runs). Unlabelled.
  std::string slow_family;
  double slow_family_factor = 1.0;
  // Capture tiers, as the injector's TRUFFLD_DEVICE_WINDOWS: "all" (everything recorded), "off"
  // or "steps:N[:M]" (device activity only in windows of M consecutive steps in every N, counted
  // per rank from its first step; DEVICE_WINDOW edges around them). window_every/window_steps
  // hold the parsed N and M (0 for all and off). two_tier: outside windows the steps also lose
  // their operator ranges and non-blocking API calls (the always-on tier keeps step ranges,
  // communication ranges and blocking calls); needs windows other than "all".
  std::string device_windows = "all";
  int window_every = 0, window_steps = 0;
  bool two_tier = false;
  // Whether the rank's k-th step (from 0) lies in a device window.
  bool InWindow(int64_t k) const {
    return device_windows == "all" || (window_every > 0 && k % window_every < window_steps);
  }
  // Output.
  std::string out_dir;
  bool zstd = false;
  int zstd_level = 3;
  int64_t base_time_ns = 1763700000000000000;  // realtime at trace start (before host offsets)

  int tp() const { return ranks / hosts; }
  int replicas() const { return hosts / pp; }
  Status Validate() const;
};

// Parses --device-windows ("all", "off", "steps:N[:M]") into cfg's device_windows, window_every
// and window_steps.
Status ParseDeviceWindows(std::string_view spec, SynthConfig* cfg);

// Parses --slow-family "FAMILY:FACTOR" (factor in [1, 10]) into cfg's slow_family fields.
Status ParseSlowFamily(std::string_view spec, SynthConfig* cfg);

// Parses --slow-host "H:FACTOR" (host index from 0, factor in [1, 10]) into cfg's slow_host and
// slow_host_factor.
Status ParseSlowHost(std::string_view spec, SynthConfig* cfg);

// All fault classes, in enum order.
std::vector<FaultClass> AllFaultClasses();

// Applies a named preset ("demo", "small", "bench", "suite") to `cfg`. Unknown name -> error
// listing the known ones.
Status ApplyPreset(std::string_view name, SynthConfig* cfg);
std::string PresetHelp();  // one line per preset, for --help

}  // namespace truffld::synth
