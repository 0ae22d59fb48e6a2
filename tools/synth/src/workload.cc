// Continuous-batching scheduler and step naming (see workload.h).
#include "truffld/synth/workload.h"

#include <algorithm>
#include <cmath>

namespace truffld::synth {

std::string StepRangeName(const std::vector<std::string>& ids, const char* phase) {
  std::string s = "step_execute_model[request_ids:";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s.push_back('_');
    for (char c : ids[i]) {
      if (c == '_' || c == '\\') s.push_back('\\');
      s.push_back(c);
    }
  }
  s.push_back(']');
  if (phase != nullptr) {
    s += "[phase:";
    s += phase;
    s.push_back(']');
  }
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
                     int max_prefill_tokens)
    : rng_(seed, 0x5C4ED000ULL + static_cast<uint64_t>(replica)),
      replica_(replica),
      online_(online),
      arrivals_per_step_(arrivals_per_step),
      max_num_seqs_(max_num_seqs),
      max_prefill_tokens_(max_prefill_tokens) {
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
    r.prompt_len = std::clamp<int64_t>(std::llround(p), 8, max_prefill_tokens_);
    r.output_len = std::clamp<int64_t>(std::llround(48 * rng_.LogNormalFactor(0.8)), 2, 512);
    waiting_.push_back(std::move(r));
  }
}

PlannedStep Scheduler::Next() {
  if (online_) {
    Arrive(rng_.Poisson(arrivals_per_step_));
  } else if (waiting_.empty() && static_cast<int>(running_.size()) < max_num_seqs_ / 4) {
    Arrive(2 * max_num_seqs_);
  }
  if (waiting_.empty() && running_.empty()) Arrive(1);

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
    step.shape.tokens = tokens;
    step.shape.seqs = static_cast<int64_t>(admitted.size());
    step.shape.prompt_sq_sum = sq;
    step.real_seqs = step.shape.seqs;
    for (auto& r : admitted) {
      step.request_ids.push_back(r.id);
      r.generated = 1;
      if (r.generated < r.output_len) running_.push_back(std::move(r));
    }
    return step;
  }
  // Decode: one token for every running request.
  int64_t ctx = 0;
  for (auto& r : running_) {
    step.request_ids.push_back(r.id);
    ctx += r.prompt_len + r.generated;
    ++r.generated;
  }
  step.real_seqs = static_cast<int64_t>(running_.size());
  step.graph_bucket = GraphBucket(step.real_seqs);
  step.shape.prefill = false;
  step.shape.seqs = step.graph_bucket;
  step.shape.tokens = step.graph_bucket;
  step.shape.context_sum = ctx;
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [](const Request& r) { return r.generated >= r.output_len; }),
                 running_.end());
  return step;
}

}  // namespace truffld::synth
