// Collectives (eager and graph-replayed) and CUDA-graph capture/replay for decode steps
// (see simulator.h for the model).
#include <algorithm>

#include "sim_rank.h"
#include "truffld/synth/simulator.h"

namespace truffld::synth {

std::string Simulator::CommPayload(const Rank& rk, const Op& op) const {
  static const char* kHex = "0123456789abcdef";
  std::string comm = "0x7f";
  uint64_t h = static_cast<uint64_t>(rk.pid) * 0x9E3779B97F4A7C15ULL;
  for (int i = 0; i < 10; ++i) comm.push_back(kHex[(h >> (4 * i)) & 0xf]);
  std::string p = "{\"comm\":\"" + comm + "\",\"bytes\":" + std::to_string(op.work[0].bytes);
  if (cat_.Raw(op.comm) == "ncclAllReduce") p += ",\"op\":\"sum\"";
  p += ",\"datatype\":\"bf16\",\"world_size\":" + std::to_string(cfg_.tp()) + ",\"rank\":" +
       std::to_string(rk.local) + "}";
  return p;
}

void Simulator::CollectiveOp(Group& g, const Op& op, std::vector<int64_t>* cursors,
                             const std::vector<int64_t>* corrs, int bucket, size_t node) {
  const Work& w = op.work[0];
  const int16_t fam = op.family();
  const size_t n = g.ranks.size();
  std::vector<int64_t> starts(n), api_start(n), corr(n);
  double slowest = 1.0;
  std::vector<int> hits;  // faults that slowed a participant
  for (size_t i = 0; i < n; ++i) {
    Rank& rk = g.ranks[i];
    if (cursors) {
      starts[i] = (*cursors)[i];
      corr[i] = (*corrs)[i];
    } else {
      int64_t t = rk.host_t;
      rk.w->NvtxPush(Channel::kMain, cat_.Escaped(op.comm), t, "NCCL", CommPayload(rk, op));
      t += rk.Jit(op.host_ns, 0.2);
      api_start[i] = t;
      corr[i] = ++rk.corr;
      starts[i] = std::max(rk.gpu_t[0], t + rk.Jit(3500, 0.2));
    }
    int f = -1;
    const double fac = faults_->DeviceFactor(rk.rank, w.kind, w.cls, fam, starts[i], &f);
    if (f >= 0) hits.push_back(f);
    slowest = std::max(slowest, fac);
  }
  // The transfer is shared: a fault that slows one participant slows the collective on every
  // rank, so each participant's communication in this step is abnormal (the ledger names the
  // rank where it came from).
  for (int f : hits) {
    for (size_t i = 0; i < n; ++i) faults_->Hit(g.ranks[i].rank, f, fam, true);
  }
  // A ring collective finishes together on every rank once the last one has arrived.
  const int64_t transfer = static_cast<int64_t>(static_cast<double>(w.nominal_ns) * g.rng.LogNormalFactor(0.05) * slowest);
  if (!hits.empty()) {  // what the slowdown added to the collective, on every participant
    const int64_t added = transfer - static_cast<int64_t>(static_cast<double>(transfer) / slowest);
    for (size_t i = 0; i < n; ++i) faults_->AddTransferCost(g.ranks[i].rank, added);
  }
  const int64_t end = *std::max_element(starts.begin(), starts.end()) + transfer;
  for (size_t i = 0; i < n; ++i) {
    Rank& rk = g.ranks[i];
    if (cursors) {
      const Rank::Graph& gr = rk.graphs.at(bucket);
      rk.EmitApiAndDevice(cat_, w, -1, -1, corr[i], starts[i], end, gr.exec_id, gr.nodes[node]);
      (*cursors)[i] = end + rk.Jit(900, 0.3);
    } else {
      const int64_t api_end = api_start[i] + rk.Jit(4800, 0.2);
      rk.EmitApiAndDevice(cat_, w, api_start[i], api_end, corr[i], starts[i], end, -1, -1);
      rk.gpu_t[0] = end;
      const int64_t t = api_end + rk.Jit(1200, 0.3);
      rk.w->NvtxPop(Channel::kMain, t, "NCCL");
      rk.host_t = t + rk.Jit(800, 0.3);
    }
  }
}

void Simulator::Capture(Group& g, int bucket, const std::vector<Op>& ops) {
  for (Rank& rk : g.ranks) {
    Rank::Graph gr;
    const int64_t graph_id = rk.next_graph_id++;
    int64_t t = rk.host_t + rk.Jit(40000, 0.3);
    rk.w->Api(Channel::kMain, false, 306, "cudaStreamBeginCapture_v10000", t, t + rk.Jit(6000, 0.2), ++rk.corr,
              kComputeStream);
    t += rk.Jit(9000, 0.2);
    std::vector<int64_t> captured;
    for (const Op& op : ops) {
      if (!op.graphable) continue;
      if (op.comm >= 0) {
        rk.w->NvtxPush(Channel::kMain, cat_.Escaped(op.comm), t, "NCCL", CommPayload(rk, op));
      } else {
        PushRanges(rk, op, &t);
      }
      t += rk.Jit(op.host_ns, 0.15);
      for (int k = 0; k < op.nwork; ++k) {
        const int64_t corr = ++rk.corr;
        const int64_t end = t + rk.Jit(4200, 0.2);
        if (op.work[k].kind == WorkKind::kNccl) {
          rk.w->Api(Channel::kMain, true, 652, "cuLaunchKernelEx", t, end, corr);
        } else {
          rk.w->Api(Channel::kMain, false, 211, "cudaLaunchKernel_v7000", t, end, corr);
        }
        const int64_t node = rk.next_node_id++;
        rk.w->GraphNode(Channel::kMain, graph_id, node, corr, t + (end - t) / 2);
        captured.push_back(node);
        t = end + rk.Jit(700, 0.3);
      }
      if (op.comm >= 0) {
        rk.w->NvtxPop(Channel::kMain, t, "NCCL");
        t += rk.Jit(800, 0.3);
      } else {
        PopRanges(rk, op, &t);
      }
    }
    rk.w->Api(Channel::kMain, false, 307, "cudaStreamEndCapture_v10000", t, t + rk.Jit(30000, 0.2), ++rk.corr,
              kComputeStream);
    t += rk.Jit(40000, 0.2);
    // Instantiation clones every captured node into the executable graph.
    gr.exec_id = rk.next_graph_id++;
    const int64_t inst_corr = ++rk.corr;
    const int64_t inst_end = t + rk.Jit(150000 + 400 * static_cast<int64_t>(captured.size()), 0.1);
    rk.w->Api(Channel::kMain, false, 419, "cudaGraphInstantiateWithFlags_v11040", t, inst_end, inst_corr);
    for (size_t i = 0; i < captured.size(); ++i) {
      const int64_t node = rk.next_node_id++;
      const int64_t ts = t + 1000 + (inst_end - t - 2000) * static_cast<int64_t>(i) /
                                        static_cast<int64_t>(std::max<size_t>(1, captured.size()));
      rk.w->GraphNode(Channel::kMain, gr.exec_id, node, inst_corr, ts, captured[i]);
      gr.nodes.push_back(node);
    }
    rk.host_t = inst_end + rk.Jit(20000, 0.3);
    rk.gpu_t[0] = std::max(rk.gpu_t[0], rk.host_t);
    rk.graphs.emplace(bucket, std::move(gr));
  }
}

void Simulator::Replay(Group& g, int bucket, const std::vector<Op>& ops) {
  const size_t n = g.ranks.size();
  std::vector<int64_t> cursor(n), corr(n);
  for (size_t i = 0; i < n; ++i) {
    Rank& rk = g.ranks[i];
    const int64_t t = rk.host_t;
    corr[i] = ++rk.corr;
    const int64_t end = t + rk.Jit(11000, 0.2);
    rk.w->Api(Channel::kMain, false, 311, "cudaGraphLaunch_v10000", t, end, corr[i], kComputeStream);
    cursor[i] = std::max(rk.gpu_t[0], t + rk.Jit(4500, 0.2));
    rk.host_t = end + rk.Jit(1500, 0.3);
  }
  size_t node = 0;
  for (const Op& op : ops) {
    if (!op.graphable) continue;
    if (op.comm >= 0) {
      CollectiveOp(g, op, &cursor, &corr, bucket, node++);
      continue;
    }
    const int16_t fam = op.family();
    for (int k = 0; k < op.nwork; ++k, ++node) {
      const Work& w = op.work[k];
      for (size_t i = 0; i < n; ++i) {
        Rank& rk = g.ranks[i];
        const Rank::Graph& gr = rk.graphs.at(bucket);
        int64_t dur = rk.DevDur(w.nominal_ns);
        int f = -1;
        const double fac = faults_->DeviceFactor(rk.rank, w.kind, w.cls, fam, cursor[i], &f);
        if (f >= 0) {
          dur = static_cast<int64_t>(static_cast<double>(dur) * fac);
          faults_->Hit(rk.rank, f, fam, false);
        }
        rk.EmitApiAndDevice(cat_, w, -1, -1, corr[i], cursor[i], cursor[i] + dur, gr.exec_id, gr.nodes[node]);
        cursor[i] += dur + rk.Jit(900, 0.3);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) g.ranks[i].gpu_t[0] = cursor[i];
}

}  // namespace truffld::synth
