// The serving simulation: replicas, lockstep TP groups, eager steps and step framing
// (see simulator.h). CUDA-graph capture and replay live in graphs.cc.
#include "truffld/synth/simulator.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <unordered_set>

#include "truffld/synth/record_writer.h"
#include "truffld/synth/slow_host_ledger.h"
#include "sim_rank.h"
#include "truffld/synth/workload.h"

namespace truffld::synth {

Simulator::Simulator(const SynthConfig& cfg, SinkFactory sinks) : cfg_(cfg), sinks_(std::move(sinks)) {
  dims_.layers = cfg.layers;
  dims_.tp = cfg.tp();
  faults_ = std::make_unique<FaultBook>(cfg, cat_);
}

Simulator::~Simulator() = default;

Status Simulator::Run() {
  const int replicas = cfg_.replicas();
  for (int r = 0; r < replicas; ++r) TRUFFLD_RETURN_IF_ERROR(RunReplica(r));
  auto ledger = sinks_("ledger.jsonl");
  if (!ledger.ok()) return ledger.status();
  TRUFFLD_RETURN_IF_ERROR(faults_->WriteLedger(ledger->get()));
  if (!slow_spans_.empty()) {
    TRUFFLD_RETURN_IF_ERROR((*ledger)->Write(
        SlowHostLedgerLines(slow_spans_, faults_->ledger().size(), cfg_.slow_host_factor)));
  }
  TRUFFLD_RETURN_IF_ERROR((*ledger)->Close());
  auto labels = sinks_("labels.jsonl");
  if (!labels.ok()) return labels.status();
  TRUFFLD_RETURN_IF_ERROR(faults_->WriteLabels(labels->get()));
  TRUFFLD_RETURN_IF_ERROR((*labels)->Close());
  auto requests = sinks_("requests.jsonl");
  if (!requests.ok()) return requests.status();
  TRUFFLD_RETURN_IF_ERROR(requests_.Write(requests->get()));
  return (*requests)->Close();
}

void Simulator::PushRanges(Rank& rk, const Op& op, int64_t* t) {
  if (op.frontend >= 0) {
    rk.w->NvtxPush(Channel::kMain, cat_.Escaped(op.frontend), *t);
    *t += rk.Jit(4200, 0.25);
  }
  for (int i = 0; i < op.nbackend; ++i) {
    const int16_t b = op.backend[i];
    std::string& n = rk.name_buf;
    n.assign(cat_.Escaped(b));
    n.append(cat_.HasSeq(b) ? ", seq = 0, op_id = " : ", op_id = ");
    char tmp[24];
    auto res = std::to_chars(tmp, tmp + sizeof tmp, ++rk.op_id);
    n.append(tmp, res.ptr);
    rk.w->NvtxPush(Channel::kMain, n, *t);
    *t += rk.Jit(1800, 0.3);
  }
}

void Simulator::PopRanges(Rank& rk, const Op& op, int64_t* t) {
  for (int i = 0; i < op.nbackend; ++i) {
    rk.w->NvtxPop(Channel::kMain, *t);
    *t += rk.Jit(650, 0.3);
  }
  if (op.frontend >= 0) {
    rk.w->NvtxPop(Channel::kMain, *t);
    *t += rk.Jit(900, 0.3);
  }
}

void Simulator::EagerOp(Group& g, const Op& op, int64_t nominal) {
  if (op.p2p != 0) {
    LaunchP2P(g, op);
    return;
  }
  if (op.comm >= 0) {
    CollectiveOp(g, op, nullptr, nullptr, 0, 0);
    return;
  }
  const int16_t fam = op.family();
  // The host body's nominal: framework overhead plus the op's H100 roofline time (a software
  // fault is a host-side slowdown; --device-scale lengthens the kernels, not the host body).
  int64_t work_nominal = 0;
  for (int k = 0; k < op.nwork; ++k) work_nominal += op.work[k].nominal_ns;
  if (cfg_.device_scale != 1.0) work_nominal = static_cast<int64_t>(static_cast<double>(work_nominal) / cfg_.device_scale);
  for (Rank& rk : g.ranks) {
    int64_t t = rk.host_t;
    PushRanges(rk, op, &t);
    t += rk.Jit(op.host_ns, 0.15);
    int f = -1;
    int64_t d = faults_->SoftwareDelay(rk.rank, fam, op.host_ns + work_nominal, &f);
    if (d > 0) {
      t += d;
      faults_->Hit(rk.rank, f, fam, false);
    }
    if (op.prep) {
      f = -1;
      d = faults_->EngineDelay(rk.rank, t, nominal, &f);
      if (d > 0) {
        t += d;
        faults_->Hit(rk.rank, f, fam, false);
      }
    }
    for (int k = 0; k < op.nwork; ++k) {
      const Work& w = op.work[k];
      const int64_t corr = ++rk.corr;
      const int64_t api_start = t;
      const int64_t dev_start = std::max(rk.gpu_t[w.stream], api_start + rk.Jit(3200, 0.2));
      int64_t dur = rk.DevDur(w.nominal_ns);
      f = -1;
      const double fac = faults_->DeviceFactor(rk.rank, w.kind, w.cls, fam, dev_start, &f);
      if (f >= 0) {
        dur = static_cast<int64_t>(static_cast<double>(dur) * fac);
        faults_->Hit(rk.rank, f, fam, false);
      }
      const int64_t dev_end = dev_start + dur;
      int64_t api_end = api_start + rk.Jit(w.kind == WorkKind::kKernel ? 3600 : 5200, 0.2);
      if (w.pageable) api_end = std::max(api_end, dev_end + rk.Jit(1500, 0.2));
      rk.EmitApiAndDevice(cat_, w, api_start, api_end, corr, dev_start, dev_end, -1, -1);
      rk.gpu_t[w.stream] = dev_end;
      t = api_end + rk.Jit(700, 0.3);
    }
    PopRanges(rk, op, &t);
    rk.host_t = t;
  }
}

void Simulator::ExecuteEager(Group& g, const std::vector<Op>& ops, size_t begin, size_t end, int64_t nominal) {
  for (size_t i = begin; i < end; ++i) {
    for (Rank& rk : g.ranks) {  // host_gap: the host stalls between two operators, in no range
      if (rk.gap_op != static_cast<int64_t>(i)) continue;
      const int64_t t0 = rk.host_t;
      rk.host_t += rk.gap_ns;
      faults_->SetWindow(rk.gap_fault, t0, rk.host_t);
      faults_->Hit(rk.rank, rk.gap_fault, faults_->host_outside_family(), false);
      rk.gap_op = -1;
    }
    for (Rank& rk : g.ranks) rk.StarveBefore(i, faults_.get());
    EagerOp(g, ops[i], nominal);
  }
}

Status Simulator::OpenHost(Group& g, int host) {
  const int tp = cfg_.tp();
  g.ranks.reserve(static_cast<size_t>(tp));
  HostClock hc;
  hc.name = "node" + std::to_string(host);
  hc.offset_ns = host == 0 ? 0 : g.rng.Int(-3000000, 3000000);
  hc.drift_ppm = g.rng.Uniform(-25, 25);
  report_.hosts.push_back(hc);
  const int64_t base_pid = 1000 + g.rng.Int(0, 3000000);
  for (int local = 0; local < tp; ++local) {
    const int rank = host * tp + local;
    const int64_t pid = base_pid + 7 * local;
    std::string file = "truffld-" + hc.name + "-r" + std::to_string(rank) + "-p" + std::to_string(pid) + ".jsonl";
    if (cfg_.zstd) file += ".zst";
    auto sink = sinks_(file);
    if (!sink.ok()) return sink.status();
    const int64_t t0 = cfg_.base_time_ns + hc.offset_ns + 2000000000 + g.rng.Int(0, 3000000);
    g.ranks.emplace_back(cfg_, rank, local, hc, pid, std::move(*sink), t0, file);
    g.rank_ids.push_back(rank);
    g.hosts.push_back(hc.name);
  }
  g.gs.ranks = g.rank_ids;
  g.gs.hosts = g.hosts;
  g.gs.group = host;
  g.gs.push_ts.assign(static_cast<size_t>(tp), 0);
  g.gs.sends = !g.stage.last();
  g.gs.all_gather = g.stage.last();
  g.pop_ts.assign(static_cast<size_t>(tp), 0);
  return Status::Ok();
}

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
    for (size_t i = 0; i < ops.size(); ++i) {
      for (int k = 0; k < ops[i].nwork; ++k) nominal += ops[i].work[k].nominal_ns;
      if (ops[i].graphable) {
        body_begin = std::min(body_begin, i);
        body_end = i + 1;
      }
    }
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
    // host_gap: a stall between two eager backend operators, at the entry's place in the step.
    bounds.clear();
    int64_t host_nominal = 0;
    for (size_t i = first; i < ops.size(); ++i) {
      const bool eager = !(graph && ops[i].graphable);
      if (eager) host_nominal += ops[i].host_ns + 20000;
      if (i == first || !eager || (graph && ops[i - 1].graphable)) continue;
      if (ops[i].comm >= 0 || ops[i - 1].comm >= 0) continue;
      bounds.push_back(i);
    }
    for (Rank& rk : g.ranks) {
      double where = 0;
      int f = -1;
      const int64_t d = faults_->HostGap(rk.rank, host_nominal, &where, &f);
      if (d <= 0 || bounds.empty()) continue;
      const size_t k = std::min(bounds.size() - 1, static_cast<size_t>(where * static_cast<double>(bounds.size())));
      rk.gap_op = static_cast<int64_t>(bounds[k]);
      rk.gap_ns = d;
      rk.gap_fault = f;
    }
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

void Simulator::ScaleDevice(std::vector<Op>* ops, int host) const {
  const double slow = host == cfg_.slow_host ? cfg_.slow_host_factor : 1.0;
  const int16_t slow_family = cfg_.slow_family.empty() ? int16_t(-1) : cat_.Id(cfg_.slow_family);
  if (cfg_.device_scale == 1.0 && slow == 1.0 && slow_family < 0) return;
  for (Op& op : *ops) {
    const double fam = slow_family >= 0 && op.nbackend > 0 && op.comm < 0 && op.family() == slow_family
                           ? cfg_.slow_family_factor : 1.0;
    for (int k = 0; k < op.nwork; ++k) {
      Work& w = op.work[k];
      // A slow host's GPUs compute slower; its NCCL transfers run at the link's speed.
      const double f = w.kind == WorkKind::kKernel ? cfg_.device_scale * slow * fam
                       : w.kind == WorkKind::kNccl ? cfg_.device_scale : 1.0;
      if (f != 1.0) w.nominal_ns = static_cast<int64_t>(static_cast<double>(w.nominal_ns) * f);
    }
  }
}

Status Simulator::RunReplica(int replica) {
  const int pp = cfg_.pp;
  std::vector<Group> stages;
  stages.reserve(static_cast<size_t>(pp));
  for (int s = 0; s < pp; ++s) {
    stages.emplace_back(cfg_.seed, replica * pp + s);
    stages.back().stage = StageOf(cfg_.layers, s, pp);
    TRUFFLD_RETURN_IF_ERROR(OpenHost(stages.back(), replica * pp + s));
  }
  Scheduler sched(cfg_.seed, replica, cfg_.workload == "online", cfg_.arrivals_per_step, cfg_.max_num_seqs,
                  cfg_.max_prefill_tokens, cfg_.prompt_scale, cfg_.chunked_prefill);
  const uint64_t budget = static_cast<uint64_t>(cfg_.target_events / std::max(1, cfg_.hosts)) * pp;
  bool sched_faults = false;
  for (FaultClass c : cfg_.fault_classes) sched_faults = sched_faults || c == FaultClass::kSchedDelay;
  std::vector<int> replica_ranks;
  std::vector<std::string> replica_hosts;
  for (const Group& g : stages) {
    replica_ranks.insert(replica_ranks.end(), g.rank_ids.begin(), g.rank_ids.end());
    replica_hosts.insert(replica_hosts.end(), g.hosts.begin(), g.hosts.end());
  }
  std::vector<Op> ops;
  std::unordered_set<std::string> requests;
  int64_t done = INT64_MIN;  // pp > 1: reference time at which the last stage finished the previous step
  // Saved state for the counterfactual re-simulation of a step.
  struct GroupState {
    Rng rng;
    GroupStep gs;
    std::vector<int64_t> pop_ts;
  };
  std::vector<std::vector<Rank::State>> before(stages.size()), after(stages.size());
  std::vector<GroupState> gbefore, gafter;
  std::vector<std::vector<int64_t>> real_pop(stages.size());
  const auto save = [&](std::vector<std::vector<Rank::State>>* rs, std::vector<GroupState>* gss) {
    gss->clear();
    for (size_t s = 0; s < stages.size(); ++s) {
      (*rs)[s].clear();
      for (const Rank& rk : stages[s].ranks) (*rs)[s].push_back(rk.Save());
      gss->push_back(GroupState{stages[s].rng, stages[s].gs, stages[s].pop_ts});
    }
  };
  const auto restore = [&](const std::vector<std::vector<Rank::State>>& rs, const std::vector<GroupState>& gss) {
    for (size_t s = 0; s < stages.size(); ++s) {
      for (size_t i = 0; i < stages[s].ranks.size(); ++i) stages[s].ranks[i].Restore(rs[s][i]);
      stages[s].rng = gss[s].rng;
      stages[s].gs = gss[s].gs;
      stages[s].pop_ts = gss[s].pop_ts;
    }
  };
  std::vector<size_t> captured;
  std::vector<std::vector<int64_t>> first_push(stages.size());  // --slow-host's ledger window
  for (int64_t step = 0; step < 50000000; ++step) {
    uint64_t records = 0;
    for (const Group& g : stages) records += g.Records();
    if (cfg_.steps > 0 ? step >= cfg_.steps : (step >= 2 && records >= budget)) break;
    PlannedStep ps = sched.Next();
    requests_.OnStep(replica, step, ps);
    for (const auto& id : ps.request_ids) requests.insert(id);
    StepTags tags;
    if (cfg_.phase_tags) tags.phase = ps.phase;
    if (cfg_.workload_tags) {
      tags.tokens = ps.tokens;
      tags.context = ps.context;
    }
    const std::string step_name = JsonEscape(StepRangeName(ps.request_ids, tags));
    const int64_t hits0 = faults_->hits();
    const int64_t done0 = done;
    save(&before, &gbefore);
    if (sched_faults) {  // a slow scheduler holds every rank of the replica before the step
      BuildStepProgram(cat_, dims_, ps.shape, &ops, stages[0].stage);
      ScaleDevice(&ops, stages[0].host);
      int64_t nominal = 0;
      for (const Op& op : ops) {
        for (int k = 0; k < op.nwork; ++k) nominal += op.work[k].nominal_ns;
      }
      const int64_t extra = faults_->BeforeStep(replica_ranks, replica_hosts, replica, nominal);
      for (Group& g : stages) {
        for (Rank& rk : g.ranks) rk.sched_extra = extra;
      }
    }
    captured.clear();
    RunStep(stages, ps, step_name, ops, &done, &captured);
    for (size_t s = 0; s < stages.size(); ++s) {
      if (first_push[s].empty()) first_push[s] = stages[s].gs.push_ts;
    }
    if (faults_->hits() == hits0) continue;
    // A labelling fault touched the step: re-run it from the same state with the same draws and
    // every fault off; the difference in each rank's pop is what the faults cost the step.
    for (size_t s = 0; s < stages.size(); ++s) real_pop[s] = stages[s].pop_ts;
    save(&after, &gafter);
    const int64_t done1 = done;
    restore(before, gbefore);
    done = done0;
    for (size_t s : captured) {
      for (Rank& rk : stages[s].ranks) rk.graphs.erase(ps.graph_bucket);
    }
    for (Group& g : stages) {
      for (Rank& rk : g.ranks) rk.w->set_discard(true);
    }
    faults_->set_counterfactual(true);
    RunStep(stages, ps, step_name, ops, &done, nullptr);
    faults_->set_counterfactual(false);
    for (size_t s = 0; s < stages.size(); ++s) {
      Group& g = stages[s];
      for (size_t i = 0; i < g.ranks.size(); ++i) {
        g.ranks[i].w->set_discard(false);
        faults_->SetStepCost(g.ranks[i].rank, real_pop[s][i] - g.pop_ts[i], g.pop_ts[i] - g.gs.push_ts[i]);
      }
    }
    restore(after, gafter);
    done = done1;
  }
  for (Group& g : stages) faults_->Finish(g.rank_ids, g.pop_ts);
  for (size_t s = 0; s < stages.size(); ++s) NoteSlowHost(stages[s], first_push[s]);
  for (Group& g : stages) {
    for (Rank& rk : g.ranks) {
      rk.FinishDetail(cfg_);
      TRUFFLD_RETURN_IF_ERROR(rk.w->Finish());
      TRUFFLD_RETURN_IF_ERROR(rk.sink->Close());
      RankReport rep;
      rep.rank = rk.rank;
      rep.host = rk.host;
      rep.file = rk.file;
      rep.pid = rk.pid;
      rep.steps = rk.steps;
      rep.records = rk.w->records();
      rep.bytes = rk.w->bytes_written();
      rep.kernels = rk.kernels;
      rep.requests = static_cast<int64_t>(requests.size());
      report_.records += rep.records;
      report_.bytes += rep.bytes;
      report_.ranks.push_back(std::move(rep));
    }
  }
  return Status::Ok();
}

}  // namespace truffld::synth
