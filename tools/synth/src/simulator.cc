// The serving simulation's outer shell (see simulator.h): runs the replicas one after another,
// opens each host's rank dumps, closes them into the run report, and writes the ground truth.
// A replica's step loop and counterfactual costing are in replica_steps.cc, one engine step in
// step.cc, eager operators in eager.cc, CUDA-graph capture and replay in graphs.cc.
#include "truffld/synth/simulator.h"

#include <algorithm>
#include <cmath>

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

Status Simulator::RunReplica(int replica) {
  std::vector<Group> stages;
  TRUFFLD_RETURN_IF_ERROR(OpenReplica(replica, &stages));
  const int64_t requests = RunSteps(replica, stages);
  return CloseReplica(stages, requests);
}

Status Simulator::OpenReplica(int replica, std::vector<Group>* stages) {
  const int pp = cfg_.pp;
  stages->reserve(static_cast<size_t>(pp));
  for (int s = 0; s < pp; ++s) {
    stages->emplace_back(cfg_.seed, replica * pp + s);
    stages->back().stage = StageOf(cfg_.layers, s, pp);
    TRUFFLD_RETURN_IF_ERROR(OpenHost(stages->back(), replica * pp + s));
  }
  return Status::Ok();
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

Status Simulator::CloseReplica(std::vector<Group>& stages, int64_t requests) {
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
      rep.requests = requests;
      report_.records += rep.records;
      report_.bytes += rep.bytes;
      report_.ranks.push_back(std::move(rep));
    }
  }
  return Status::Ok();
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

}  // namespace truffld::synth
