// Eager operators (see simulator.h): how one operator runs on every rank of a TP group when it is
// not replayed from a CUDA graph. Each rank pushes the operator's frontend/backend NVTX ranges,
// spends its host body (plus any software or engine fault delay), launches its kernels, copies
// and memsets on the stream cursors (device faults stretch them), and pops the ranges; the
// host_gap and device_starve faults planned for the step land between two operators. Collectives
// and pipeline sends/recvs are handed to CollectiveOp and LaunchP2P, which tie ranks together.
#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "sim_rank.h"
#include "truffld/synth/simulator.h"

namespace truffld::synth {

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

}  // namespace truffld::synth
