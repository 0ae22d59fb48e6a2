// Stage II of truffld-diagnose: confirm Stage I's suspicion per step, either by asking an
// OpenAI-compatible chat-completions endpoint (under a strict JSON schema) or by running the same
// decision policy as deterministic code.
//
// Why both: the LLM can weigh textual context (kernel and API names, phase, communication) that
// plain thresholds ignore, but truffld must stay fully useful offline and in CI, and any LLM
// failure (timeout, refusal, invalid answer) must degrade to the deterministic policy, never to a
// missing decision. The policy itself lives in llm_policy.h and is pure; this header is the
// surface the diagnose core codes against. See diagnose/LLM.md for flags, policy and cache.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "stage2/evidence.h"
#include "truffld/status.h"

namespace truffld::diagnose {

enum class LlmMode {
  kOff,   // never contact an endpoint: offline policy only
  kAuto,  // use the endpoint when a URL is configured, else offline (the default)
  kOn,    // an endpoint is required; Validate() fails without a URL
};

// "off" / "auto" / "on" -> mode; anything else is kInvalidArgument naming the value.
Result<LlmMode> ParseLlmMode(std::string_view text);
const char* LlmModeName(LlmMode mode) noexcept;

// Everything Stage II needs. Plain data; copy freely. The api_key is a secret: nothing in truffld
// prints, logs, caches or writes it (Describe() says only whether it is set).
struct StageTwoConfig {
  LlmMode mode = LlmMode::kAuto;
  std::string url;     // base URL, e.g. "http://127.0.0.1:8000" or ".../v1" (both accepted)
  std::string model = "gpt-4o-mini";
  std::string api_key;  // only ever filled from TRUFFLD_LLM_API_KEY, then OPENAI_API_KEY
  int64_t timeout_ms = 60'000;        // whole-request timeout per HTTP attempt (wall clock)
  int max_retries = 3;                // extra attempts after a 429/5xx/transport failure
  int64_t initial_backoff_ms = 500;   // backoff = initial * 2^attempt, capped at max_backoff_ms
  int64_t max_backoff_ms = 30'000;    // also caps a server's Retry-After
  int max_concurrency = 4;            // steps in flight at once (one HTTP request each)
  std::string cache_dir;              // "" disables the on-disk answer cache
  int64_t seed = 42;                  // sent as "seed" (servers that honour it are reproducible)
  int max_tokens = 512;               // completion budget per answer
  bool skip_without_candidates = true;  // steps with no Stage I candidate are decided offline
  // Circuit breaker: after this many consecutive transport failures (no HTTP reply at all:
  // refused, DNS, TLS, timeout) the endpoint is taken as dead and every remaining step of the
  // run is decided by the offline policy without contacting it. 0 = never give up.
  int breaker_failures = 3;
  std::string env_error;  // set by FromEnvironment for a malformed variable; Validate reports it

  // Defaults plus the API key from the environment (TRUFFLD_LLM_API_KEY wins over
  // OPENAI_API_KEY) and optional integer overrides TRUFFLD_LLM_TIMEOUT_MS,
  // TRUFFLD_LLM_MAX_RETRIES, TRUFFLD_LLM_CONCURRENCY, TRUFFLD_LLM_SEED, TRUFFLD_LLM_MAX_TOKENS,
  // TRUFFLD_LLM_BREAKER_FAILURES.
  // Reads getenv only; thread-safe as long as nobody calls setenv concurrently.
  static StageTwoConfig FromEnvironment();

  // True when this configuration will actually contact an endpoint.
  bool UsesLlm() const noexcept;
  // kInvalidArgument for mode=on without URL, a bad URL, non-positive timeout/concurrency,
  // negative retries, or a malformed environment variable (env_error).
  Status Validate() const;
  // One line for logs: mode, url (redacted: RedactUrl), model, timeout, concurrency, cache,
  // "api key: set|unset".
  std::string Describe() const;
};

// Counters for one StageTwo object, summed over all Decide() calls.
struct StageTwoStats {
  int64_t steps = 0;              // decisions returned
  int64_t requests = 0;           // HTTP requests actually sent (retries included)
  int64_t retries = 0;            // requests that were retries (429/5xx/transport/validation)
  int64_t prompt_tokens = 0;      // from the server's "usage" (0 when it reports none)
  int64_t completion_tokens = 0;
  int64_t cache_hits = 0;         // steps answered from the on-disk cache (zero requests)
  int64_t llm_decisions = 0;      // steps answered by the model in this run
  int64_t offline_decisions = 0;  // steps decided by the policy by design (mode off, no candidate)
  int64_t fallbacks = 0;          // steps where the LLM path failed and the policy answered
  int64_t errors = 0;             // failed HTTP attempts (transport errors and non-2xx replies)
  int64_t invalid_answers = 0;    // model answers that failed schema validation
  int64_t dropped_names = 0;      // names in answers that were not in the input
  int64_t backoff_ms = 0;         // total wall-clock time slept between retries (ms)
  bool breaker_tripped = false;   // the circuit breaker gave up on the endpoint during the run
  int64_t breaker_steps = 0;      // steps decided offline because the breaker had tripped
  std::string breaker_reason;     // why it tripped (failure count and the last transport error)

  // Written to stats.json by StageTwoStatsJson (report/stats_table.h).
};

// The deterministic decision policy (see llm_policy.h for the exact rules). Pure; thread-safe.
StageTwoDecision DecideOffline(const StepEvidence& step);

class LlmTransport;  // llm_http.h: the libcurl adapter (tests may substitute their own)

// Decides a batch of steps. Construct once per run; Decide() may be called several times.
// Thread-safety: Decide() and stats() may be called from any thread, but Decide() calls are
// serialised internally (one batch at a time, parallel inside up to max_concurrency).
class StageTwo {
 public:
  // Uses the libcurl transport. The config should have passed Validate(); an invalid one makes
  // every step fall back to the offline policy with the validation error in `note`.
  explicit StageTwo(StageTwoConfig config);
  StageTwo(StageTwoConfig config, std::shared_ptr<LlmTransport> transport);
  ~StageTwo();
  StageTwo(const StageTwo&) = delete;
  StageTwo& operator=(const StageTwo&) = delete;

  // One decision per input step, in input order. Never fails: LLM problems become
  // kLlmFallbackOffline decisions whose `note` says why.
  std::vector<StageTwoDecision> Decide(const std::vector<StepEvidence>& steps);
  StageTwoStats stats() const;
  const StageTwoConfig& config() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace truffld::diagnose
