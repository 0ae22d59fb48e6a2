// The simulator's side of --slow-host's ledger entries: each rank of the slow host's window, from
// its first step's push to its last step's pop (slow_host_ledger.h writes the lines).
#include "sim_rank.h"
#include "truffld/synth/simulator.h"

namespace truffld::synth {

void Simulator::NoteSlowHost(const Group& g, const std::vector<int64_t>& first_push) {
  if (g.host != cfg_.slow_host || cfg_.slow_host_factor <= 1.0 || first_push.empty()) return;
  for (size_t i = 0; i < g.ranks.size(); ++i) {
    slow_spans_.push_back({g.ranks[i].rank, g.ranks[i].host, first_push[i], g.pop_ts[i], g.ranks[i].steps});
  }
}

}  // namespace truffld::synth
