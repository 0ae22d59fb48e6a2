// Communication faults: which scopes can open on a rank now, and the entries each scope creates
// (see faults.h). A scope is possible only when every rank it touches is free (no open entry):
//   group  every rank of the TP group (tp >= 2), target ncclAllReduce or (last stage, 1 in 4)
//          ncclAllGather;
//   rank   the rank alone, target one of the NCCL operators it runs (its collectives when
//          tp >= 2, nccl:send when a next stage exists, nccl:recv when a previous one does);
//   link   the rank and its TP ring neighbour (collectives), or the rank and the previous
//          stage's rank that sends to it (nccl:send there, nccl:recv here).
#include "truffld/synth/faults.h"

namespace truffld::synth {
namespace {

constexpr unsigned Bit(CommScope s) { return 1u << static_cast<unsigned>(s); }

}  // namespace

unsigned FaultBook::CommScopesFor(const GroupStep& gs, size_t i) const {
  const size_t n = gs.ranks.size();
  const bool tp = n >= 2;
  const bool recvs = !gs.prev_ranks.empty();
  unsigned out = 0;
  for (CommScope s : cfg_.comm_scopes) {
    switch (s) {
      case CommScope::kGroup: {
        bool free = tp;
        for (int q : gs.ranks) free = free && active_[q] < 0;
        if (free) out |= Bit(s);
        break;
      }
      case CommScope::kRank:
        if (tp || gs.sends || recvs) out |= Bit(s);
        break;
      case CommScope::kLink:
        if ((tp && active_[gs.ranks[(i + 1) % n]] < 0) || (recvs && active_[gs.prev_ranks[i]] < 0)) out |= Bit(s);
        break;
    }
  }
  return out;
}

int FaultBook::AddComm(int rank, const std::string& host, int64_t start, double intensity, const std::string& target,
                       CommScope scope, int peer, int64_t len) {
  const int idx = NewEntry(FaultClass::kCommunication, rank, host, start, intensity);
  LedgerEntry& e = ledger_[idx];
  e.target = target;
  e.family = cat_.Id(target);
  e.scope = scope;
  e.peer = peer;
  e.steps_left = len;
  active_[rank] = idx;
  return idx;
}

void FaultBook::OpenComm(const GroupStep& gs, size_t i, unsigned scopes, double intensity, int64_t len) {
  std::vector<CommScope> pool;
  for (int s = 0; s < kNumCommScopes; ++s) {
    if (scopes & (1u << s)) pool.push_back(static_cast<CommScope>(s));
  }
  const CommScope scope = pool[static_cast<size_t>(rng_.Int(0, static_cast<int64_t>(pool.size()) - 1))];
  const size_t n = gs.ranks.size();
  const int r = gs.ranks[i];
  auto collective = [&]() -> std::string {
    return gs.all_gather && rng_.Bernoulli(0.25) ? "ncclAllGather" : "ncclAllReduce";
  };
  switch (scope) {
    case CommScope::kGroup: {
      const std::string tgt = collective();
      for (size_t j = 0; j < n; ++j) {
        const int idx = AddComm(gs.ranks[j], gs.hosts[j], gs.push_ts[j], intensity, tgt, scope, -1, len);
        ledger_[idx].group = "tp" + std::to_string(gs.group);
      }
      break;
    }
    case CommScope::kRank: {
      std::vector<std::string> targets;
      if (n >= 2) {
        targets.push_back("ncclAllReduce");
        if (gs.all_gather) targets.push_back("ncclAllGather");
      }
      if (gs.sends) targets.push_back("nccl:send");
      if (!gs.prev_ranks.empty()) targets.push_back("nccl:recv");
      const std::string& tgt = targets[static_cast<size_t>(rng_.Int(0, static_cast<int64_t>(targets.size()) - 1))];
      AddComm(r, gs.hosts[i], gs.push_ts[i], intensity, tgt, scope, -1, len);
      break;
    }
    case CommScope::kLink: {
      const bool tp_ok = n >= 2 && active_[gs.ranks[(i + 1) % n]] < 0;
      const bool pp_ok = !gs.prev_ranks.empty() && active_[gs.prev_ranks[i]] < 0;
      const bool pipeline = pp_ok && (!tp_ok || rng_.Bernoulli(0.5));
      if (pipeline) {
        const int p = gs.prev_ranks[i];
        AddComm(p, gs.prev_hosts[i], gs.prev_push_ts[i], intensity, "nccl:send", scope, r, len);
        AddComm(r, gs.hosts[i], gs.push_ts[i], intensity, "nccl:recv", scope, p, len);
      } else {
        const size_t j = (i + 1) % n;
        const std::string tgt = collective();
        AddComm(r, gs.hosts[i], gs.push_ts[i], intensity, tgt, scope, gs.ranks[j], len);
        AddComm(gs.ranks[j], gs.hosts[j], gs.push_ts[j], intensity, tgt, scope, r, len);
      }
      break;
    }
  }
}

}  // namespace truffld::synth
