// Pipeline-parallel point-to-point transfers between stages on different hosts (see simulator.h).
//
// The host side of a send or recv is what truffld's hooks and the injector record around vLLM's
// PyNcclCommunicator.send/recv: an NVTX range `nccl:send, bytes=B, world_size=PP, impl=pynccl`
// (default domain, as the hooks emit it) around the driver call that launches NCCL's
// `ncclDevKernel_SendRecv` kernel. The GPU side of a pair is settled once both stages have
// launched: each kernel starts when its stream is free, and both end together once the later
// side has started plus the transfer time. Times are compared on the reference axis (host clock
// minus the host's offset) and written back on each host's own clock; the per-host drift only
// concerns monotonic_raw, which the CLOCK records carry. Communication faults on either side
// (rank or link scope) stretch the transfer; each side is labelled by its own ledger entry.
#include <algorithm>
#include <charconv>

#include "sim_rank.h"
#include "truffld/synth/simulator.h"

namespace truffld::synth {

void Simulator::LaunchP2P(Group& g, const Op& op) {
  const Work& w = op.work[0];
  std::string name = op.p2p > 0 ? "nccl:send, bytes=" : "nccl:recv, bytes=";
  char tmp[24];
  auto res = std::to_chars(tmp, tmp + sizeof tmp, w.bytes);
  name.append(tmp, res.ptr);
  name += ", world_size=" + std::to_string(cfg_.pp) + ", impl=pynccl";
  for (Rank& rk : g.ranks) {
    int64_t t = rk.host_t;
    rk.w->NvtxPush(Channel::kMain, name, t);
    t += rk.Jit(op.host_ns, 0.2);
    Rank::P2PLaunch l;
    l.launch = t;
    l.corr = ++rk.corr;
    l.family = op.family();
    l.step = faults_->CurrentStep(rk.rank);
    l.work = w;
    const int64_t api_end = t + rk.Jit(4800, 0.2);
    rk.w->Api(Channel::kMain, true, 652, "cuLaunchKernelEx", t, api_end, l.corr);
    rk.p2p.push_back(l);
    t = api_end + rk.Jit(1200, 0.3);
    rk.w->NvtxPop(Channel::kMain, t);
    rk.host_t = t + rk.Jit(800, 0.3);
  }
}

void Simulator::MatchP2P(Group& snd, Group& rcv) {
  for (size_t i = 0; i < rcv.ranks.size(); ++i) {
    Rank& a = snd.ranks[i];
    Rank& b = rcv.ranks[i];
    const size_t n = std::min(a.p2p.size(), b.p2p.size());
    for (size_t k = 0; k < n; ++k) {
      const Rank::P2PLaunch& la = a.p2p[k];
      const Rank::P2PLaunch& lb = b.p2p[k];
      const int64_t sa = std::max(a.gpu_t[0], la.launch + a.Jit(3500, 0.2));
      const int64_t sb = std::max(b.gpu_t[0], lb.launch + b.Jit(3500, 0.2));
      int fa = -1, fb = -1;
      const double xa = faults_->DeviceFactor(a.rank, WorkKind::kNccl, KernelClass::kComm, la.family, sa, &fa);
      const double xb = faults_->DeviceFactor(b.rank, WorkKind::kNccl, KernelClass::kComm, lb.family, sb, &fb);
      // Both sides share the transfer: a fault on either side makes both sides' transfer slow.
      for (int f : {fa, fb}) {
        if (f < 0) continue;
        faults_->Hit(a.rank, f, la.family, true, la.step);
        faults_->Hit(b.rank, f, lb.family, true, lb.step);
      }
      const double slow = std::max({1.0, xa, xb});
      const int64_t transfer = static_cast<int64_t>(static_cast<double>(lb.work.nominal_ns) *
                                                    rcv.rng.LogNormalFactor(0.05) * slow);
      if (fa >= 0 || fb >= 0) {  // what the slowdown added to the transfer, on both sides
        const int64_t added = transfer - static_cast<int64_t>(static_cast<double>(transfer) / slow);
        faults_->AddTransferCost(a.rank, added, la.step);
        faults_->AddTransferCost(b.rank, added, lb.step);
      }
      const int64_t end = std::max(sa - a.offset, sb - b.offset) + transfer;  // reference time
      a.EmitApiAndDevice(cat_, la.work, -1, -1, la.corr, sa, end + a.offset, -1, -1);
      b.EmitApiAndDevice(cat_, lb.work, -1, -1, lb.corr, sb, end + b.offset, -1, -1);
      a.gpu_t[0] = end + a.offset;
      b.gpu_t[0] = end + b.offset;
    }
    a.p2p.clear();
    b.p2p.clear();
  }
}

}  // namespace truffld::synth
