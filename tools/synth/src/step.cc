// One engine step of a replica (see simulator.h): every pipeline stage builds its step program,
// captures a CUDA graph the first time a decode bucket needs one, and is framed by the step
// range. BeginGroupStep is the scheduler's turn, the range push, the auxiliary block-table copy
// and the input copy issued directly under the range; EndGroupStep is the final synchronize and
// the range pop. Between them the step runs its eager operators and its graph replay, with the
// host_gap and device_starve faults planned at operator boundaries. The order inside a pipeline
// step (stage s receives, then stage s-1 closes its step) is what pairs sends with receives.
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "sim_rank.h"
#include "truffld/synth/simulator.h"
#include "truffld/synth/workload.h"

namespace truffld::synth {
namespace {

// A step program's nominal device time and its graphable body [body_begin, body_end).
void ScanProgram(const std::vector<Op>& ops, int64_t* nominal, size_t* body_begin, size_t* body_end) {
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int k = 0; k < ops[i].nwork; ++k) *nominal += ops[i].work[k].nominal_ns;
    if (ops[i].graphable) {
      *body_begin = std::min(*body_begin, i);
      *body_end = i + 1;
    }
  }
}

}  // namespace

void Simulator::BeginGroupStep(Group& g, const std::string& step_name, int64_t real_seqs, bool prefill, bool graph,
                               int64_t nominal, const Group* prev, int64_t copy_bytes) {
  static const std::string aux_copy_name = "cudaMemcpyAsync_v3020";
  std::vector<int64_t>& wait_from = g.wait_from;
  wait_from.assign(g.ranks.size(), 0);
  // The scheduler's turn between steps: one scheduler plans the batch for every worker, in a time
  // that grows with the batch and varies little between similar steps (real engines: a few
  // percent step to step at the same batch size), then each worker receives it.
  const int64_t sched = g.ranks[0].Jit(60000 + 500 * real_seqs, 0.1);
  for (size_t i = 0; i < g.ranks.size(); ++i) {
    Rank& rk = g.ranks[i];
    wait_from[i] = rk.host_t;
    rk.host_t += sched + rk.Jit(3000, 0.3) + rk.sched_extra;
    rk.MaybeClock();
    g.gs.push_ts[i] = rk.host_t;
    rk.BeginDetail(cfg_, rk.host_t);
    rk.w->NvtxPush(Channel::kMain, step_name, rk.host_t);
    rk.host_t += rk.Jit(15000, 0.3);
    // The auxiliary thread stages the next block table on the copy stream.
    const int64_t a0 = g.gs.push_ts[i] + rk.Jit(9000, 0.3);
    const int64_t corr = ++rk.corr;
    const int64_t bytes = 4096 + 64 * real_seqs;
    const int64_t ds = std::max(rk.gpu_t[1], a0 + rk.Jit(3000, 0.2));
    const int64_t de = ds + rk.Jit(1800 + bytes / 20, 0.1);
    rk.w->Api(Channel::kAux, false, 41, aux_copy_name, a0, a0 + rk.Jit(4200, 0.2), corr, kAuxStream, bytes, "HtoD");
    rk.w->Memcpy("HtoD", "Pinned", "Device", bytes, ds, de, corr, rk.local, kAuxStream);
    rk.gpu_t[1] = de;
  }
  if (prev != nullptr) {
    g.gs.prev_ranks = prev->rank_ids;
    g.gs.prev_hosts = prev->hosts;
    g.gs.prev_push_ts = prev->gs.push_ts;
  }
  g.gs.prefill = prefill;
  g.gs.decode_graph = graph;
  g.gs.nominal_ns = nominal;
  faults_->BeginStep(g.gs);
  // The model runner's input copy from its pinned staging buffers (token ids, positions, slot
  // mapping, sampling metadata), issued directly under the step range with no operator around it.
  const int64_t copy_nominal = static_cast<int64_t>(static_cast<double>(copy_bytes) / 14e9 * 1e9) + 1500;
  for (size_t i = 0; i < g.ranks.size(); ++i) {
    Rank& rk = g.ranks[i];
    if (rk.sched_extra > 0) faults_->SchedWait(rk.rank, wait_from[i], g.gs.push_ts[i]);
    rk.sched_extra = 0;
    const int64_t corr = ++rk.corr;
    const int64_t api_start = rk.host_t;
    const int64_t ds = std::max(rk.gpu_t[0], api_start + rk.Jit(3200, 0.2));
    int64_t dur = rk.DevDur(copy_nominal);
    int f = -1;
    const double fac = faults_->DirectCopyFactor(rk.rank, ds, &f);
    if (f >= 0) {
      dur = static_cast<int64_t>(static_cast<double>(dur) * fac);
      faults_->Hit(rk.rank, f, faults_->calls_under_step_family(), false);
    }
    const int64_t de = ds + dur;
    const int64_t api_end = api_start + rk.Jit(5200, 0.2);
    rk.w->Api(Channel::kMain, false, 41, aux_copy_name, api_start, api_end, corr, kComputeStream, copy_bytes, "HtoD");
    rk.w->Memcpy("HtoD", "Pinned", "Device", copy_bytes, ds, de, corr, rk.local, kComputeStream);
    rk.gpu_t[0] = de;
    rk.host_t = api_end + rk.Jit(700, 0.3);
  }
}

void Simulator::EndGroupStep(Group& g) {
  for (size_t i = 0; i < g.ranks.size(); ++i) {
    Rank& rk = g.ranks[i];
    const int64_t corr = ++rk.corr;
    const int64_t s = rk.host_t;
    const int64_t e = std::max(s + rk.Jit(2500, 0.2), rk.gpu_t[0] + rk.Jit(1800, 0.2));
    rk.w->Api(Channel::kMain, false, 131, "cudaStreamSynchronize_v3020", s, e, corr, kComputeStream);
    rk.w->Sync("stream_synchronize", s + 400, e - 300, corr, kComputeStream);
    rk.host_t = e + rk.Jit(2000, 0.3);
    g.pop_ts[i] = rk.host_t;
    rk.w->NvtxPop(Channel::kMain, rk.host_t);
    rk.EndDetail(cfg_, rk.host_t);
    rk.host_t += rk.Jit(3000, 0.3);
    ++rk.steps;
  }
  faults_->EndStep(g.rank_ids, g.pop_ts);
}

void Simulator::RunStep(std::vector<Group>& stages, const PlannedStep& ps, const std::string& step_name,
                        std::vector<Op>& ops, int64_t* done, std::vector<size_t>* captured) {
  const int pp = static_cast<int>(stages.size());
  const bool graph = !ps.shape.prefill && cfg_.cuda_graphs;
  const int64_t copy_bytes = 524288 + 24 * ps.shape.tokens + 8 * ps.shape.context_sum;
  std::vector<size_t> bounds;
  for (int s = 0; s < pp; ++s) {
    Group& g = stages[s];
    BuildStepProgram(cat_, dims_, ps.shape, &ops, g.stage);
    ScaleDevice(&ops, g.host);
    int64_t nominal = 0;
    size_t body_begin = ops.size(), body_end = 0;
    ScanProgram(ops, &nominal, &body_begin, &body_end);
    if (graph && !g.ranks[0].graphs.count(ps.graph_bucket)) {
      Capture(g, ps.graph_bucket, ops);
      if (captured) captured->push_back(static_cast<size_t>(s));
    }
    if (*done != INT64_MIN) {  // the engine schedules a step once the previous one's tokens are back
      for (Rank& rk : g.ranks) rk.host_t = std::max(rk.host_t, *done + rk.offset);
    }
    g.gs.phase = ps.phase;
    BeginGroupStep(g, step_name, ps.real_seqs, ps.shape.prefill, graph, nominal, s > 0 ? &stages[s - 1] : nullptr,
                   copy_bytes);
    // vLLM's worker receives the previous stage's activations before preparing its inputs.
    size_t first = 0;
    while (first < ops.size() && ops[first].p2p < 0) LaunchP2P(g, ops[first++]);
    PlanHostGaps(g, ops, first, graph, &bounds);
    for (Rank& rk : g.ranks) rk.PlanStarve(bounds, nominal, *faults_);
    if (s > 0) {
      MatchP2P(stages[s - 1], g);
      EndGroupStep(stages[s - 1]);
    }
    ExecuteEager(g, ops, first, body_begin, nominal);
    for (Rank& rk : g.ranks) rk.gpu_t[0] = std::max(rk.gpu_t[0], rk.gpu_t[1]);  // stream waits on the copy
    if (graph) {
      Replay(g, ps.graph_bucket, ops);
    } else {
      ExecuteEager(g, ops, body_begin, body_end, nominal);
    }
    ExecuteEager(g, ops, body_end, ops.size(), nominal);  // on stages before the last: the sends
    for (Rank& rk : g.ranks) rk.gap_op = -1;
  }
  EndGroupStep(stages.back());
  if (pp > 1) {
    for (const Rank& rk : stages.back().ranks) *done = std::max(*done, rk.host_t - rk.offset);
  }
}

void Simulator::PlanHostGaps(Group& g, const std::vector<Op>& ops, size_t first, bool graph,
                             std::vector<size_t>* bounds) {
  // host_gap: a stall between two eager backend operators, at the entry's place in the step.
  bounds->clear();
  int64_t host_nominal = 0;
  for (size_t i = first; i < ops.size(); ++i) {
    const bool eager = !(graph && ops[i].graphable);
    if (eager) host_nominal += ops[i].host_ns + 20000;
    if (i == first || !eager || (graph && ops[i - 1].graphable)) continue;
    if (ops[i].comm >= 0 || ops[i - 1].comm >= 0) continue;
    bounds->push_back(i);
  }
  for (Rank& rk : g.ranks) {
    double where = 0;
    int f = -1;
    const int64_t d = faults_->PlannedGap(FaultClass::kHostGap, rk.rank, host_nominal, &where, &f);
    if (d <= 0 || bounds->empty()) continue;
    const size_t k = std::min(bounds->size() - 1, static_cast<size_t>(where * static_cast<double>(bounds->size())));
    rk.gap_op = static_cast<int64_t>((*bounds)[k]);
    rk.gap_ns = d;
    rk.gap_fault = f;
  }
}

}  // namespace truffld::synth
