// Per-request ground truth of the generator (see request_ledger.h).
#include "truffld/synth/request_ledger.h"

#include "truffld/synth/record_writer.h"

namespace truffld::synth {

void RequestLedger::OnStep(int replica, int64_t step_index, const PlannedStep& step) {
  for (const Arrival& a : step.arrived) {
    const auto key = std::make_pair(replica, a.id);
    if (by_id_.count(key)) continue;  // an id drawn twice: the first request keeps it
    by_id_.emplace(key, entries_.size());
    order_.push_back(entries_.size());
    entries_.push_back(Entry{replica, a, {}, {}});
  }
  for (size_t i = 0; i < step.request_ids.size(); ++i) {
    auto it = by_id_.find(std::make_pair(replica, step.request_ids[i]));
    if (it == by_id_.end()) continue;
    Entry& e = entries_[it->second];
    const bool prefill = i < step.prefilling.size() && step.prefilling[i] != 0;
    (prefill ? e.prefill_steps : e.decode_steps).push_back(step_index);
  }
}

namespace {

std::string StepList(const std::vector<int64_t>& steps) {
  std::string s = "[";
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i) s.push_back(',');
    s += std::to_string(steps[i]);
  }
  return s + "]";
}

}  // namespace

Status RequestLedger::Write(ByteSink* out) const {
  std::string line;
  for (size_t idx : order_) {
    const Entry& e = entries_[idx];
    line = "{\"request\":\"" + JsonEscape(e.arrival.id) + "\",\"replica\":" + std::to_string(e.replica) +
           ",\"arrival_step\":" + std::to_string(e.arrival.step) +
           ",\"prompt_tokens\":" + std::to_string(e.arrival.prompt_tokens) +
           ",\"output_tokens\":" + std::to_string(e.arrival.output_tokens) +
           ",\"prefill_steps\":" + StepList(e.prefill_steps) + ",\"decode_steps\":" + StepList(e.decode_steps) + "}\n";
    TRUFFLD_RETURN_IF_ERROR(out->Write(line));
  }
  return Status::Ok();
}

}  // namespace truffld::synth
