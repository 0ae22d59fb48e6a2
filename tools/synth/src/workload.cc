// Continuous-batching scheduler and step naming (see workload.h).
#include "truffld/synth/workload.h"

#include <algorithm>
#include <cmath>

namespace truffld::synth {

std::string StepRangeName(const std::vector<std::string>& ids, const StepTags& tags) {
  std::string s = "step_execute_model[request_ids:";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s.push_back('_');
    for (char c : ids[i]) {
      if (c == '_' || c == '\\') s.push_back('\\');
      s.push_back(c);
    }
  }
  s.push_back(']');
  if (tags.phase != nullptr) {
    s += "[phase:";
    s += tags.phase;
    s.push_back(']');
  }
  if (tags.tokens >= 0) s += "[tokens:" + std::to_string(tags.tokens) + "]";
  if (tags.context >= 0) s += "[ctx:" + std::to_string(tags.context) + "]";
  return s;
}

int GraphBucket(int64_t seqs) {
  static const int kBuckets[] = {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
  for (int b : kBuckets) {
    if (seqs <= b) return b;
  }
  return static_cast<int>(seqs);
}

Scheduler::Scheduler(uint64_t seed, int replica, bool online, double arrivals_per_step, int max_num_seqs,
                     int max_prefill_tokens, double prompt_scale, bool chunked_prefill)
    : rng_(seed, 0x5C4ED000ULL + static_cast<uint64_t>(replica)),
      replica_(replica),
      online_(online),
      arrivals_per_step_(arrivals_per_step),
      max_num_seqs_(max_num_seqs),
      max_prefill_tokens_(max_prefill_tokens),
      prompt_scale_(prompt_scale),
      chunked_(chunked_prefill) {
  Arrive(online ? std::max<int64_t>(2, max_num_seqs / 4) : 2 * max_num_seqs);
}

void Scheduler::Arrive(int64_t n) {
  static const char* kHex = "0123456789abcdef";
  for (int64_t i = 0; i < n; ++i) {
    Request r;
    const uint64_t h = rng_.Next();
    const double u = rng_.Uniform();
    if (u < 0.04) {
      r.id = "batch\\job_" + std::to_string(replica_) + "_" + std::to_string(next_id_);
    } else if (u < 0.2) {
      r.id = "chat_" + std::to_string(replica_) + "_" + std::to_string(next_id_);
    } else {
      r.id = "cmpl-";
      for (int k = 0; k < 8; ++k) r.id.push_back(kHex[(h >> (4 * k)) & 0xf]);
      r.id += "-" + std::to_string(next_id_ % 4);
    }
    ++next_id_;
    // Prompt lengths: a short-chat mode and a long-document mode.
    const double p = rng_.Bernoulli(0.7) ? 120 * rng_.LogNormalFactor(0.6) : 900 * rng_.LogNormalFactor(0.5);
    r.prompt_len = std::clamp<int64_t>(std::llround(p * prompt_scale_), 8, chunked_ ? 32768 : max_prefill_tokens_);
    r.output_len = std::clamp<int64_t>(std::llround(48 * rng_.LogNormalFactor(0.8)), 2, 512);
    r.arrival_step = step_;
    arrived_.push_back(Arrival{r.id, step_, r.prompt_len, r.output_len});
    waiting_.push_back(std::move(r));
  }
}

PlannedStep Scheduler::Next() {
  PlannedStep step = Plan();
  step.arrived.swap(arrived_);
  arrived_.clear();
  ++step_;
  return step;
}

PlannedStep Scheduler::Plan() {
  if (online_) {
    Arrive(rng_.Poisson(arrivals_per_step_));
  } else if (waiting_.empty() && static_cast<int>(running_.size()) < max_num_seqs_ / 4) {
    Arrive(2 * max_num_seqs_);
  }
  if (waiting_.empty() && running_.empty()) Arrive(1);
  if (chunked_) return NextChunked();

  PlannedStep step;
  const bool can_admit = !waiting_.empty() && static_cast<int>(running_.size()) < max_num_seqs_;
  if (can_admit || running_.empty()) {
    // Prefill: admit while the token budget and the sequence limit allow (at least one).
    int64_t tokens = 0, sq = 0;
    std::vector<Request> admitted;
    while (!waiting_.empty() && static_cast<int>(running_.size() + admitted.size()) < max_num_seqs_) {
      const Request& r = waiting_.front();
      if (!admitted.empty() && tokens + r.prompt_len > max_prefill_tokens_) break;
      tokens += r.prompt_len;
      sq += r.prompt_len * r.prompt_len;
      admitted.push_back(std::move(waiting_.front()));
      waiting_.pop_front();
    }
    step.shape.prefill = true;
    step.phase = "prefill";
    step.tokens = tokens;
    step.context = tokens;
    step.shape.tokens = tokens;
    step.shape.seqs = static_cast<int64_t>(admitted.size());
    step.shape.prompt_sq_sum = sq;
    step.real_seqs = step.shape.seqs;
    for (auto& r : admitted) {
      step.request_ids.push_back(r.id);
      step.prefilling.push_back(1);
      r.generated = 1;
      if (r.generated < r.output_len) running_.push_back(std::move(r));
    }
    return step;
  }
  // Decode: one token for every running request.
  int64_t ctx = 0;
  for (auto& r : running_) {
    step.request_ids.push_back(r.id);
    step.prefilling.push_back(0);
    ctx += r.prompt_len + r.generated;
    ++r.generated;
  }
  step.real_seqs = static_cast<int64_t>(running_.size());
  step.graph_bucket = GraphBucket(step.real_seqs);
  step.shape.prefill = false;
  step.shape.seqs = step.graph_bucket;
  step.shape.tokens = step.graph_bucket;
  step.shape.context_sum = ctx;
  step.tokens = step.real_seqs;
  step.context = ctx + step.real_seqs;
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [](const Request& r) { return r.generated >= r.output_len; }),
                 running_.end());
  return step;
}

}  // namespace truffld::synth

namespace truffld::synth {

// Chunked prefill: decode every running request (one token each), then spend what is left of
// the token budget on prompt chunks, oldest waiting request first (a partly prefilled request
// stays at the head of the queue). Eager like vLLM's mixed batches.
PlannedStep Scheduler::NextChunked() {
  PlannedStep step;
  int64_t budget = max_prefill_tokens_, ctx = 0, sq = 0, decode = 0, chunk_tokens = 0;
  for (auto& r : running_) {
    step.request_ids.push_back(r.id);
    step.prefilling.push_back(0);
    ctx += r.prompt_len + r.generated;
    sq += r.prompt_len + r.generated;  // one query token reading its whole context
    ++r.generated;
    ++decode;
    --budget;
  }
  std::vector<Request> admitted;
  while (budget > 0 && !waiting_.empty() &&
         static_cast<int>(running_.size() + admitted.size()) < max_num_seqs_) {
    Request& r = waiting_.front();
    const int64_t chunk = std::min(budget, r.prompt_len - r.prefilled);
    step.request_ids.push_back(r.id);
    step.prefilling.push_back(1);
    sq += chunk * (r.prefilled + chunk);
    r.prefilled += chunk;
    ctx += r.prefilled;
    chunk_tokens += chunk;
    budget -= chunk;
    if (r.prefilled < r.prompt_len) break;  // the rest of this prompt goes into the next step
    r.generated = 1;
    admitted.push_back(std::move(r));
    waiting_.pop_front();
  }
  step.tokens = decode + chunk_tokens;
  step.context = ctx;
  step.phase = chunk_tokens == 0 ? "decode" : decode == 0 ? "prefill" : "mixed";
  step.shape.prefill = true;  // eager, with the prefill attention kernel over all tokens
  step.shape.tokens = std::max<int64_t>(1, step.tokens);
  step.shape.seqs = static_cast<int64_t>(step.request_ids.size());
  step.shape.prompt_sq_sum = sq;
  step.shape.context_sum = ctx;
  step.real_seqs = step.shape.seqs;
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [](const Request& r) { return r.generated >= r.output_len; }),
                 running_.end());
  for (auto& r : admitted) {
    if (r.generated < r.output_len) running_.push_back(std::move(r));
  }
  return step;
}

}  // namespace truffld::synth
