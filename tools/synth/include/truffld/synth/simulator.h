// Simulator: runs the serving workload and writes every rank's raw dump plus the ground truth.
//
// Each host runs one tensor-parallel group with its own clock. A data-parallel replica (its own
// scheduler) is one host, or with --pp N a pipeline of N hosts, each running a slice of the
// layers. Replicas are simulated one after another; inside a TP group the ranks advance in
// lockstep, operator by operator, because collectives tie their GPU timelines together (an
// all-reduce kernel ends when the slowest rank has arrived plus the transfer time). A pipeline
// step runs stage after stage: a stage launches its receives, they are paired with the previous
// stage's sends (a send/recv kernel pair ends together once both sides have started, on the
// reference time axis, each side then written on its own host clock), and the previous stage then
// closes its step. The next step starts once the last stage has finished the current one (no
// micro-batching). Per rank the
// simulator keeps a host clock (the Python thread), one GPU cursor per stream, CUPTI-style
// correlation ids and PyTorch-style op ids, and writes through a RankWriter. Eager steps emit the
// frontend/backend NVTX ranges, runtime calls and device activity of every operator; decode steps
// (with CUDA graphs on) replay a graph captured the first time its batch-size bucket is needed:
// capture emits the ranges, launches and GRAPH_NODE records, instantiation emits cloned nodes, and
// each replay is one cudaGraphLaunch whose kernels share its correlation id. All times are int64
// ns on the host's realtime clock, which has its own offset from the other hosts.
// Thread-safety: one Simulator per run, used by one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "truffld/status.h"
#include "truffld/synth/byte_sink.h"
#include "truffld/synth/config.h"
#include "truffld/synth/faults.h"
#include "truffld/synth/slow_host_ledger.h"
#include "truffld/synth/request_ledger.h"
#include "truffld/synth/model.h"

namespace truffld::synth {

struct PlannedStep;

// Creates the sink for an output file name (relative to the output directory).
using SinkFactory = std::function<Result<std::unique_ptr<ByteSink>>(const std::string& name)>;

struct RankReport {
  int rank = 0;
  std::string host;
  std::string file;
  int64_t pid = 0;
  int64_t steps = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;          // uncompressed
  int64_t kernels = 0;
  int64_t requests = 0;        // distinct request ids across its steps
};

struct HostClock {
  std::string name;
  int64_t offset_ns = 0;       // realtime offset from the reference (true) time
  double drift_ppm = 0;        // monotonic_raw vs realtime drift reported in CLOCK records
};

struct RunReport {
  std::vector<RankReport> ranks;
  std::vector<HostClock> hosts;
  uint64_t records = 0;
  uint64_t bytes = 0;
};

class Simulator {
 public:
  Simulator(const SynthConfig& cfg, SinkFactory sinks);
  ~Simulator();
  // Generates all dumps, then ledger.jsonl and labels.jsonl.
  Status Run();
  const RunReport& report() const { return report_; }
  const FaultBook& faults() const { return *faults_; }

 private:
  struct Rank;
  struct Group;
  struct Snapshot;
  // One data-parallel replica: opens its stages' hosts, runs its steps, closes its dumps.
  Status RunReplica(int replica);
  Status OpenReplica(int replica, std::vector<Group>* stages);
  Status OpenHost(Group& g, int host);
  // The step loop (replica_steps.cc); returns the number of distinct requests it served.
  int64_t RunSteps(int replica, std::vector<Group>& stages);
  // sched_delay: plans the scheduler's extra wait before step `ps` on every rank of the replica.
  void DelaySchedule(std::vector<Group>& stages, const PlannedStep& ps, int replica, std::vector<Op>* ops);
  // Re-runs the step just simulated from `before` with every fault off and records what the
  // faults cost each rank; then restores the real state (`done_before`: the hand-off before it).
  void CostStep(std::vector<Group>& stages, const PlannedStep& ps, const std::string& step_name,
                std::vector<Op>& ops, const Snapshot& before, int64_t done_before, int64_t* done,
                const std::vector<size_t>& captured);
  // Finishes every rank's dump and adds it to the run report (`requests`: the replica's count).
  Status CloseReplica(std::vector<Group>& stages, int64_t requests);
  // Pushes the step range on every rank of `g` (plus the auxiliary copy) and opens faults;
  // `prev` is the previous pipeline stage (nullptr on the first).
  void BeginGroupStep(Group& g, const std::string& step_name, int64_t real_seqs, bool prefill, bool graph,
                      int64_t nominal, const Group* prev, int64_t copy_bytes);
  // One engine step of a replica (every stage): real, or the counterfactual when the FaultBook
  // is in counterfactual mode. `done`: pipeline hand-off time; `captured`: stages that captured
  // a CUDA graph in this step.
  void RunStep(std::vector<Group>& stages, const PlannedStep& ps, const std::string& step_name,
               std::vector<Op>& ops, int64_t* done, std::vector<size_t>* captured);
  // host_gap: collects the eager operator boundaries of the step from `first` into `bounds` and
  // places each rank's planned host stall at one of them.
  void PlanHostGaps(Group& g, const std::vector<Op>& ops, size_t first, bool graph, std::vector<size_t>* bounds);
  // --device-scale on kernels and NCCL transfers, and --slow-host on the kernels of that host.
  void ScaleDevice(std::vector<Op>* ops, int host) const;
  void EndGroupStep(Group& g);  // final synchronize, range pop, fault windows
  // --slow-host: after the run, the window of each rank of `g` (if on the slow host) for
  // ledger.jsonl; first_push: its ranks' first step push (slow_host.cc).
  void NoteSlowHost(const Group& g, const std::vector<int64_t>& first_push);
  // Pipeline point-to-point: host side of a send/recv, and the pairing of `snd`'s pending sends
  // with `rcv`'s pending receives (pipeline.cc).
  void LaunchP2P(Group& g, const Op& op);
  void MatchP2P(Group& snd, Group& rcv);
  void ExecuteEager(Group& g, const std::vector<Op>& ops, size_t begin, size_t end, int64_t nominal);
  void EagerOp(Group& g, const Op& op, int64_t nominal);
  // Eager when `cursors` is null; otherwise a graph replay node (GPU cursors and launch ids per rank).
  void CollectiveOp(Group& g, const Op& op, std::vector<int64_t>* cursors, const std::vector<int64_t>* corrs,
                    int bucket, size_t node);
  std::string CommPayload(const Rank& rk, const Op& op) const;
  void Capture(Group& g, int bucket, const std::vector<Op>& ops);
  void Replay(Group& g, int bucket, const std::vector<Op>& ops);
  void PushRanges(Rank& rk, const Op& op, int64_t* t);
  void PopRanges(Rank& rk, const Op& op, int64_t* t);

  const SynthConfig& cfg_;
  SinkFactory sinks_;
  Catalogue cat_;
  ModelDims dims_;
  std::unique_ptr<FaultBook> faults_;
  std::vector<SlowHostSpan> slow_spans_;  // --slow-host: its ranks' windows, for ledger.jsonl
  RequestLedger requests_;
  RunReport report_;
};

}  // namespace truffld::synth
