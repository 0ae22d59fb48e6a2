// The generator's per-request ground truth (requests.jsonl): when each request arrived, which
// steps ran a chunk of its prompt and which decoded it, per replica. truffld-diagnose's
// requests.jsonl is checked against it (tests/synth/check_requests.py): the trace shows which
// steps carried a request, and this ledger says what each of them did for it.
// Step indices are the replica's engine steps, as the merge numbers them (step_index).
// Thread-safety: one instance per simulation, used by one thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "truffld/status.h"
#include "truffld/synth/byte_sink.h"
#include "truffld/synth/workload.h"

namespace truffld::synth {

class RequestLedger {
 public:
  // Records one planned step of `replica` (its index on every rank of the replica).
  void OnStep(int replica, int64_t step_index, const PlannedStep& step);
  // One JSON line per request, replicas in order, requests by arrival (the schema is
  // tools/synth/README.md's "requests.jsonl").
  Status Write(ByteSink* out) const;
  size_t size() const { return order_.size(); }

 private:
  struct Entry {
    int replica = 0;
    Arrival arrival;
    std::vector<int64_t> prefill_steps;  // steps that ran a chunk of its prompt
    std::vector<int64_t> decode_steps;   // steps that decoded one of its output tokens
  };
  std::vector<Entry> entries_;
  std::vector<size_t> order_;                              // entries_ in arrival order
  std::map<std::pair<int, std::string>, size_t> by_id_;    // (replica, id) -> entries_ index
};

}  // namespace truffld::synth
