// The --slow-host ledger entries: the slow node is a fault of the fleet (its replica's own
// diagnosis cannot see it, so it labels no step), and ledger.jsonl records it so that a fleet
// check can compare its findings with what was injected. One entry per rank of the slow host,
// spanning that rank's whole run. Pure logic (strings out). Not thread-safe (plain data).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace truffld::synth {

struct SlowHostSpan {
  int rank = 0;
  std::string host;       // "node<H>"
  int64_t start = 0;      // first step's push, ns on the rank's dump clock
  int64_t end = 0;        // last step's pop (exclusive end of the window)
  int64_t steps = 0;      // steps the rank ran
};

// ledger.jsonl lines (class "slow_host", layer "hardware", target "gpu", sufficient false: it
// labels no step) with ids f<first_id>, f<first_id + 1>, ...; `factor` is the kernels' slowdown.
std::string SlowHostLedgerLines(const std::vector<SlowHostSpan>& spans, size_t first_id, double factor);

}  // namespace truffld::synth
