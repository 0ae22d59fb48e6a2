// StageTwo: runs the per-step LLM pipeline over a bounded worker pool and falls back to the
// offline policy whenever the model path cannot produce a valid answer.
//
// Per step: (1) decide offline when the LLM is off or the step has no Stage I candidate;
// (2) build J_s and the request body; (3) look the answer up in the cache; (4) POST with retries
// and backoff on transport errors, 429 and 5xx, switching once from json_schema to json_object
// when the server rejects structured output; (5) project the answer onto the schema, re-asking
// once with the validation error quoted; (6) otherwise fall back to the policy and say why.
#include "stage2/llm_stage2.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "stage2/llm_answer.h"
#include "stage2/llm_cache.h"
#include "stage2/llm_config.h"
#include "stage2/llm_http.h"
#include "stage2/llm_policy.h"
#include "stage2/llm_prompt.h"
#include "truffld/parallel_for.h"

namespace truffld::diagnose {

struct StageTwo::Impl {
  StageTwoConfig config;
  std::shared_ptr<LlmTransport> transport;
  Status config_status;
  std::string chat_url;
  std::optional<AnswerCache> cache;
  std::atomic<bool> json_object_only{false};  // json_schema rejected, json_object worked: stay
  std::vector<std::string> secrets;           // the key and the URL's credentials: never output
  // Circuit breaker: consecutive transport failures (any thread); an HTTP reply resets it.
  std::atomic<int> transport_failures{0};
  std::atomic<bool> breaker_open{false};
  std::mutex decide_mu;                       // one batch at a time
  mutable std::mutex stats_mu;
  StageTwoStats stats;

  template <typename F>
  void Count(F&& update) {
    std::lock_guard<std::mutex> lock(stats_mu);
    update(stats);
  }

  StageTwoDecision Offline(const StepEvidence& step, std::string note) {
    StageTwoDecision d = DecideOffline(step);
    if (!note.empty()) d.note = d.note.empty() ? std::move(note) : note + "; " + d.note;
    Count([](StageTwoStats& s) { ++s.offline_decisions; });
    return d;
  }

  // Belt and braces: a server that echoes the request (headers, URL) must not leak the key or
  // the URL's credentials into output.
  std::string Redact(std::string text) const {
    for (const std::string& secret : secrets) {
      for (size_t pos = text.find(secret); pos != std::string::npos; pos = text.find(secret, pos)) {
        text.replace(pos, secret.size(), "[redacted]");
      }
    }
    return text;
  }

  // Counts one attempt's outcome for the circuit breaker; true when the breaker is (now) open.
  bool TransportFailed(const std::string& error) {
    const int n = transport_failures.fetch_add(1) + 1;
    if (config.breaker_failures > 0 && n >= config.breaker_failures && !breaker_open.exchange(true)) {
      Count([&](StageTwoStats& s) {
        s.breaker_tripped = true;
        s.breaker_reason = Redact(std::to_string(n) + " consecutive transport failures, last: " + error);
      });
    }
    return breaker_open.load();
  }

  std::string BreakerNote() const {
    return "the LLM endpoint was given up after " + std::to_string(config.breaker_failures) +
           " consecutive transport failures; the offline policy decides the rest of the run";
  }

  StageTwoDecision Fallback(const StepEvidence& step, const std::string& why) {
    StageTwoDecision d = DecideOffline(step);
    d.source = DecisionSource::kLlmFallbackOffline;
    d.note = Redact("LLM unavailable, offline policy used: " + why + (d.note.empty() ? "" : "; " + d.note));
    Count([](StageTwoStats& s) { ++s.fallbacks; });
    return d;
  }

  // POSTs `prompt` (+ rejected answers) until a 2xx reply parses as a chat completion, or fails.
  Result<ChatReply> Send(const StepPrompt& prompt, const std::vector<RejectedAnswer>& rejected) {
    RequestParams params{config.model, config.seed, config.max_tokens,
                         json_object_only.load() ? ResponseFormat::kJsonObject
                                                 : ResponseFormat::kJsonSchema};
    HttpRequest request{chat_url, DumpBody(BuildRequestBody(params, prompt, rejected)),
                        config.api_key, config.timeout_ms};
    std::string last_error;
    bool downgraded = false;
    for (int attempt = 0;; ++attempt) {
      if (breaker_open.load()) return Unavailable(BreakerNote() + (last_error.empty() ? "" : " (" + last_error + ")"));
      Count([&](StageTwoStats& s) { ++s.requests; if (attempt > 0) ++s.retries; });
      Result<HttpReply> reply = transport->Post(request);
      std::optional<int64_t> retry_after;
      if (reply.ok()) transport_failures.store(0);
      if (!reply.ok()) {
        last_error = reply.status().message();
        if (reply.status().code() == StatusCode::kUnavailable && TransportFailed(last_error)) {
          Count([](StageTwoStats& s) { ++s.errors; });
          return Unavailable(last_error + "; " + BreakerNote());
        }
      } else if (reply->status >= 200 && reply->status < 300) {
        Result<ChatReply> chat = ParseChatCompletion(reply->body);
        if (chat.ok()) {
          // Stay in json_object mode only once it is known to work (a 400 can have other causes).
          if (downgraded) json_object_only.store(true);
          Count([&](StageTwoStats& s) {
            s.prompt_tokens += chat->prompt_tokens;
            s.completion_tokens += chat->completion_tokens;
          });
          return chat;
        }
        last_error = "HTTP " + std::to_string(reply->status) + " with an unusable body: " +
                     chat.status().message();
      } else if ((reply->status == 400 || reply->status == 422) &&
                 params.format == ResponseFormat::kJsonSchema) {
        // Most likely "response_format json_schema not supported": retry as json_object. This
        // switch is not a failure and does not use up a retry.
        downgraded = true;
        params.format = ResponseFormat::kJsonObject;
        request.body = DumpBody(BuildRequestBody(params, prompt, rejected));
        Count([](StageTwoStats& s) { ++s.errors; });
        --attempt;
        continue;
      } else {
        last_error = "HTTP " + std::to_string(reply->status) + ": " +
                     SanitizeForPrompt(reply->body, 200);
        retry_after = reply->retry_after_ms;
        if (!IsRetryableHttpStatus(reply->status)) {
          Count([](StageTwoStats& s) { ++s.errors; });
          return Unavailable(last_error);
        }
      }
      Count([](StageTwoStats& s) { ++s.errors; });
      if (attempt >= config.max_retries) {
        return Unavailable(last_error + " (after " + std::to_string(attempt + 1) + " attempt" +
                           (attempt == 0 ? "" : "s") + ")");
      }
      const int64_t delay_ms = BackoffDelayMs(config, attempt, retry_after);
      Count([&](StageTwoStats& s) { s.backoff_ms += delay_ms; });
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    }
  }

  StageTwoDecision DecideOne(const StepEvidence& step) {
    if (config.mode == LlmMode::kOff) return Offline(step, "");
    if (!config_status.ok()) return Fallback(step, config_status.message());
    if (!config.UsesLlm()) return Offline(step, "");  // auto without an endpoint
    if (config.skip_without_candidates &&
        std::none_of(step.families.begin(), step.families.end(),
                     [](const FamilyEvidence& f) { return f.candidate; })) {
      return Offline(step, "no Stage I candidate; model not asked");
    }

    if (breaker_open.load()) {
      Count([](StageTwoStats& s) { ++s.breaker_steps; });
      return Fallback(step, BreakerNote());
    }

    const StepPrompt prompt = BuildStepPrompt(step);
    std::string key;
    if (cache.has_value()) {
      RequestParams canonical{config.model, config.seed, config.max_tokens, ResponseFormat::kJsonSchema};
      key = AnswerCache::Key(config.model, DumpBody(BuildRequestBody(canonical, prompt)));
      if (std::optional<std::string> hit = cache->Lookup(key)) {
        Result<ProjectedAnswer> answer = ProjectAnswer(*hit, prompt.names, step);
        if (answer.ok()) {
          Count([&](StageTwoStats& s) { ++s.cache_hits; s.dropped_names += answer->dropped_names; });
          return FromAnswer(std::move(answer).value(), DecisionSource::kCache, *hit);
        }
      }
    }

    std::vector<RejectedAnswer> rejected;
    for (int round = 0; round < 2; ++round) {
      Result<ChatReply> chat = Send(prompt, rejected);
      if (!chat.ok()) return Fallback(step, chat.status().message());
      Result<ProjectedAnswer> answer = ProjectAnswer(chat->content, prompt.names, step);
      if (answer.ok()) {
        Count([&](StageTwoStats& s) { ++s.llm_decisions; s.dropped_names += answer->dropped_names; });
        StageTwoDecision d = FromAnswer(std::move(answer).value(), DecisionSource::kLlm, chat->content);
        if (cache.has_value()) {
          // Redacted like the decision's text: an endpoint echoing the key must not put it on disk.
          Status stored = cache->Store(key, config.model, Redact(chat->content));
          if (!stored.ok()) d.note += (d.note.empty() ? "" : "; ") + stored.message();
        }
        if (round > 0) d.note = "answer accepted after one correction" + (d.note.empty() ? "" : "; " + d.note);
        return d;
      }
      Count([](StageTwoStats& s) { ++s.invalid_answers; });
      if (round == 1) {
        return Fallback(step, "model answer invalid twice: " + answer.status().message());
      }
      rejected.push_back({chat->content, answer.status().message()});
      Count([](StageTwoStats& s) { ++s.retries; });
    }
    return Fallback(step, "unreachable");  // the loop always returns
  }

  StageTwoDecision FromAnswer(ProjectedAnswer a, DecisionSource source, const std::string& raw) const {
    StageTwoDecision d;
    d.abnormal = a.abnormal;
    d.faulty = std::move(a.faulty);
    d.source = source;
    d.rationale = Redact(std::move(a.rationale));
    d.raw = Redact(SanitizeForPrompt(raw, 8192));
    d.note = Redact(std::move(a.note));
    return d;
  }
};

StageTwo::StageTwo(StageTwoConfig config) : StageTwo(std::move(config), nullptr) {}

StageTwo::StageTwo(StageTwoConfig config, std::shared_ptr<LlmTransport> transport)
    : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  impl_->config_status = impl_->config.Validate();
  if (!impl_->config.api_key.empty()) impl_->secrets.push_back(impl_->config.api_key);
  if (impl_->config.UsesLlm() && impl_->config_status.ok()) {
    Result<std::string> url = ResolveChatCompletionsUrl(impl_->config.url);
    impl_->chat_url = url.ok() ? url.value() : std::string();
    impl_->transport = transport ? std::move(transport) : MakeCurlTransport();
    for (std::string& secret : UrlSecrets(impl_->config.url)) {
      if (secret.size() >= 4) impl_->secrets.push_back(std::move(secret));  // shorter: would maim text
    }
    if (!impl_->config.cache_dir.empty()) impl_->cache.emplace(impl_->config.cache_dir);
  }
}

StageTwo::~StageTwo() = default;

std::vector<StageTwoDecision> StageTwo::Decide(const std::vector<StepEvidence>& steps) {
  std::lock_guard<std::mutex> batch(impl_->decide_mu);
  std::vector<StageTwoDecision> out(steps.size());
  const bool parallel = impl_->config.UsesLlm() && impl_->config_status.ok();
  const int n_threads = parallel ? std::max(1, static_cast<int>(impl_->config.max_concurrency)) : 1;
  ParallelFor(steps.size(), n_threads, [&](size_t i) { out[i] = impl_->DecideOne(steps[i]); });
  impl_->Count([&](StageTwoStats& s) { s.steps += static_cast<int64_t>(steps.size()); });
  return out;
}

StageTwoStats StageTwo::stats() const {
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  return impl_->stats;
}

const StageTwoConfig& StageTwo::config() const noexcept { return impl_->config; }

}  // namespace truffld::diagnose
