// FaultBook: plans injected faults, answers "is this work affected?", and keeps the ground truth.
//
// The design's ledger is a list of (layer, target, start, end, intensity, id). Here each entry
// belongs to one rank and is opened at a step boundary with a probability chosen so that about
// `abnormal_fraction` of the (rank, step) pairs carry a labelled fault. Classes and their effect:
//   software      the host body of every `target` backend operator starting in the window is
//                 delayed by (intensity - 1) x its nominal time;
//   cuda_kernel   kernels of class `target` (gemm, attention, norm, elementwise) starting in the
//                 window run intensity x longer;
//   memcpy        memory copies issued from operators in the window run intensity x longer;
//   contention    every kernel, copy and memset starting on the GPU inside a short window (part of
//                 one step) runs intensity x longer;
//   communication `target` NCCL operators (ncclAllReduce, ncclAllGather, nccl:send, nccl:recv)
//                 starting in the window transfer intensity x slower. Scope `group`: every rank
//                 of a TP group gets an entry; `rank`: one rank; `link`: the two ranks of a link
//                 (TP ring neighbours' collectives, or a pipeline send/recv pair across hosts),
//                 each entry naming the other as `peer`. A collective ends together on all its
//                 ranks, so unlabelled peers wait too (real behaviour, not a fault of theirs);
//   engine        the step's input preparation stalls for (intensity - 1) x the step's nominal
//                 time; the window is the stall itself;
//   host_gap      a host stall of (intensity - 1) x 25% of the step's nominal host time between
//                 two backend operators, outside every operator range (a GC pause); the window is
//                 the stall; labels the pseudo-family "(host outside operators)";
//   sched_delay   the scheduler is slow: every rank of a replica starts the next step
//                 (intensity - 1) x max(90 us, 25% of the step's nominal device time) later; one
//                 entry per rank, window = the rank's wait before the step's push; labels the
//                 later step "(between steps)";
//   direct_copy   the input copy every step issues directly under its step range (no operator
//                 around it) runs intensity x longer; labels "(calls under the step)";
//   device_starve the compute stream waits (intensity - 1) x 25% of the step's nominal device
//                 time on an event between two eager backend operators (a cudaStreamWaitEvent on
//                 work another thread or process finishes late) while the host keeps launching:
//                 the GPU idles; the window is the wait; labels "(device idle)".
// Labels by cost: the simulator re-runs every step a labelling fault touched with all faults
// disabled, from the same state and the same random draws (the counterfactual), and reports
// the step's cost (its pop minus the counterfactual's) with SetStepCost; a touched step whose
// cost is below label_min_cost_share x its counterfactual duration is absorbed (labelled normal).
// Step-spanning windows run from the first step's range push to the last step's range pop.
// The simulator reports every affected piece of work with Hit(); when the entry's intensity is
// at least label_min_intensity the enclosing backend (vertical view) or NCCL (horizontal view)
// operator family becomes faulty in that step, which is the labelling rule of the design. All
// times are ns on the rank's file clock.
// Thread-safety: one FaultBook per run, used by one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "truffld/synth/byte_sink.h"
#include "truffld/synth/config.h"
#include "truffld/synth/model.h"
#include "truffld/synth/rng.h"

namespace truffld::synth {

struct LedgerEntry {
  std::string id;            // "f<N>"
  FaultClass cls = FaultClass::kSoftware;
  std::string target;        // family, kernel class, "memcpy", "gpu", collective, "step"
  KernelClass kernel_class = KernelClass::kGemm;  // cuda_kernel target
  int16_t family = -1;       // software / communication target family id
  int rank = 0;
  std::string host;
  std::string group;         // communication, group scope: the TP group all its entries share
  CommScope scope = CommScope::kGroup;  // communication only
  int peer = -1;             // communication, link scope: the other rank of the link
  int64_t start = 0, end = 0;
  double intensity = 1.0;
  bool sufficient = false;   // intensity >= label_min_intensity
  int64_t first_step = 0, last_step = 0;  // rank-local step indices the window spans
  bool open = false;
  int64_t steps_left = 0;    // step-spanning entries: steps still to run
  double gap_frac = 0;       // host_gap, device_starve: where in the step (share of its operator boundaries)
};

struct StepTruth {
  uint64_t faulty[2] = {0, 0};  // family-id bitmask per view (0 vertical, 1 horizontal)
  std::vector<int32_t> faults[2];  // ledger indices of the faults that labelled each view
  bool prefill = false;
  const char* phase = "decode";  // what labels.jsonl's "phase" says: prefill, decode or mixed
  int64_t cost_ns = -1;          // the faults' cost to the step (-1: no counterfactual run)
  int64_t cf_ns = 0;             // the step's counterfactual duration (push to pop)
  bool absorbed = false;         // touched by a labelling fault whose cost is below the share
  // Horizontal view: the time faults added to its labelled transfers (a slower collective or
  // send/recv, every participant waiting for it). A comm fault costs the step at most that: below
  // the share, the communication is no fault an operator acts on (the vertical view may still be).
  int64_t transfer_cost_ns = 0;
  bool transfer_absorbed = false;
  bool Absorbed(int v) const { return absorbed || (v == 1 && transfer_absorbed); }
  bool Abnormal(int v) const { return faulty[v] != 0 && !Absorbed(v); }
};

// One TP group's step as the fault planner sees it (in pipeline runs, one stage's group).
struct GroupStep {
  std::vector<int> ranks;
  std::vector<std::string> hosts;
  int group = 0;                  // host index; names the TP group "tp<group>"
  std::vector<int64_t> push_ts;   // the step range's push time on ranks[i]
  // Pipeline: the previous stage's rank that sends to ranks[i] (same TP index), its host and
  // its push time of this step; empty on the first stage (whose BeginStep ran already).
  std::vector<int> prev_ranks;
  std::vector<std::string> prev_hosts;
  std::vector<int64_t> prev_push_ts;
  bool sends = false;             // the stage sends activations to a next stage
  bool all_gather = true;         // the stage gathers logits (last stage)
  bool prefill = false, decode_graph = false;
  const char* phase = "decode";   // "prefill", "decode" or "mixed" (chunked prefill)
  int64_t nominal_ns = 0;         // the stage's nominal device time in this step
};

class FaultBook {
 public:
  FaultBook(const SynthConfig& cfg, const Catalogue& cat);

  // Opens new entries for the ranks of one TP group at the start of a step (and, for pipeline
  // links, on the previous stage's peer, whose step began earlier).
  void BeginStep(const GroupStep& gs);
  // Closes the step on every rank (pop_ts per rank) and ends entries whose window is over.
  void EndStep(const std::vector<int>& ranks, const std::vector<int64_t>& pop_ts);
  // The run ends: windows still open end at the last step's pop.
  void Finish(const std::vector<int>& ranks, const std::vector<int64_t>& pop_ts);

  // Effects. Each returns the fault's index (or -1) through `fault`.
  int64_t SoftwareDelay(int rank, int16_t family, int64_t nominal_ns, int* fault) const;
  // Engine stall at host time t, nominal step time; opens the window [t, t + delay).
  int64_t EngineDelay(int rank, int64_t t, int64_t nominal_ns, int* fault);
  double DeviceFactor(int rank, WorkKind kind, KernelClass cls, int16_t family, int64_t gpu_start, int* fault) const;
  // Records that work of operator `family` (view: horizontal or not) on `rank` was affected.
  void Hit(int rank, int fault, int16_t family, bool horizontal, int64_t step = -1);

  // sched_delay, before a replica's step (ranks of every stage, not yet in the step): may open
  // an entry on every rank; returns the extra wait of each rank (0: none).
  int64_t BeforeStep(const std::vector<int>& ranks, const std::vector<std::string>& hosts, int replica,
                     int64_t nominal_ns);
  // sched_delay: the rank waited [start, end) before pushing the step; labels the step.
  void SchedWait(int rank, int64_t start, int64_t end);
  // host_gap (`nominal_ns`: the step's host time) or device_starve (its device time): the stall
  // or stream wait for this step (0: none) and where it falls (fraction of the boundaries).
  int64_t PlannedGap(FaultClass cls, int rank, int64_t nominal_ns, double* where, int* fault) const;
  void SetWindow(int fault, int64_t start, int64_t end);
  // direct_copy / contention on the copy issued directly under the step range.
  double DirectCopyFactor(int rank, int64_t gpu_start, int* fault) const;
  // Pseudo-families the diagnoser reports for time no operator covers.
  int16_t host_outside_family() const { return fam_host_; }
  int16_t between_steps_family() const { return fam_between_; }
  int16_t calls_under_step_family() const { return fam_calls_; }
  int16_t device_idle_family() const { return fam_idle_; }

  // Counterfactual mode: every effect is off and nothing is recorded (the re-simulation).
  void set_counterfactual(bool on) { counterfactual_ = on; }
  bool counterfactual() const { return counterfactual_; }
  // Labelling hits so far (the simulator re-simulates a step only when this moved).
  int64_t hits() const { return hits_; }
  // The cost of the rank's current step (its pop minus the counterfactual pop) and its
  // counterfactual duration; decides whether the step's labels are absorbed.
  void SetStepCost(int rank, int64_t cost_ns, int64_t cf_ns);
  // Time a fault added to a labelled transfer of `rank` (ns), in step `step` (-1: its current one).
  void AddTransferCost(int rank, int64_t added_ns, int64_t step = -1);
  // The rank\'s current step ordinal (its latest StepTruth), -1 before its first step.
  int64_t CurrentStep(int rank) const { return static_cast<int64_t>(truth_[rank].size()) - 1; }

  const std::vector<LedgerEntry>& ledger() const { return ledger_; }
  const std::vector<std::vector<StepTruth>>& truth() const { return truth_; }
  double start_probability() const { return p_start_; }

  // ledger.jsonl and labels.jsonl (one line per rank, step and view; normal steps included).
  Status WriteLedger(ByteSink* sink) const;
  Status WriteLabels(ByteSink* sink) const;

 private:
  int NewEntry(FaultClass cls, int rank, const std::string& host, int64_t start, double intensity);
  std::optional<FaultClass> PickClass(bool comm_ok);  // none when no enabled class fits
  // Communication scopes that can open on gs.ranks[i] now (bit per CommScope).
  unsigned CommScopesFor(const GroupStep& gs, size_t i) const;
  void OpenComm(const GroupStep& gs, size_t i, unsigned scopes, double intensity, int64_t len);
  int AddComm(int rank, const std::string& host, int64_t start, double intensity, const std::string& target,
              CommScope scope, int peer, int64_t len);

  const SynthConfig& cfg_;
  const Catalogue& cat_;
  Rng rng_;
  double p_start_ = 0;
  std::vector<LedgerEntry> ledger_;
  std::vector<int> active_;                    // per rank: ledger index or -1
  std::vector<std::vector<StepTruth>> truth_;  // per rank, per step
  int16_t fam_host_ = -1, fam_between_ = -1, fam_calls_ = -1, fam_idle_ = -1;
  bool counterfactual_ = false;
  int64_t hits_ = 0;
};

}  // namespace truffld::synth
