// What truffld sends to the model: the fixed system prompt (our wording of the decision policy),
// the strict output schema, the per-step summary J_s, and the chat-completions request body.
//
// Operator names are untrusted text. They only ever appear as JSON string values inside the user
// message, built with nlohmann::json (never by pasting strings), so no name can alter the system
// prompt, the schema or any request field. Names that are not valid UTF-8 are repaired and names
// longer than kMaxPromptNameBytes are shortened to a unique alias; PromptNames maps every name
// shown to the model back to the real family name.
// Pure: no I/O. Thread-safety: all functions reentrant; SystemPrompt()/AnswerSchema() return
// immutable statics initialised on first use (thread-safe in C++11+).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "stage2/evidence.h"

namespace truffld::diagnose {

inline constexpr size_t kMaxPromptNameBytes = 256;  // longer names become an alias
inline constexpr size_t kMaxPromptTextBytes = 512;  // other free text (step name, kernels, ...)

// Bijection between the names shown to the model and the step's real family names.
class PromptNames {
 public:
  // Returns the prompt form of `real` (registering it on first sight).
  const std::string& Register(const std::string& real);
  // Real family name for a name the model answered with, or nullptr when unknown.
  const std::string* ToReal(const std::string& prompt_name) const;
  size_t size() const noexcept { return to_prompt_.size(); }
  size_t aliased() const noexcept { return aliased_; }

 private:
  std::unordered_map<std::string, std::string> to_prompt_;  // real -> prompt
  std::unordered_map<std::string, std::string> to_real_;    // prompt -> real
  size_t aliased_ = 0;
};

// Valid UTF-8 copy of `text` (bad bytes become U+FFFD), cut at a character boundary so it has at
// most `max_bytes` bytes of the original. Used for every string in the summary.
std::string SanitizeForPrompt(const std::string& text, size_t max_bytes);

struct StepPrompt {
  nlohmann::json summary;  // J_s, see BuildStepPrompt
  PromptNames names;       // prompt name <-> family name
  bool for_peer = false;   // peer-detector evidence: SystemPromptCalibrated() applies
};

// J_s: context (view, rank, step, phase, durations, comm bytes, world size, "backends": kernel
// library tags, NVTX domains, CUDA-graph regime; see llm_context.h) and one entry per family
// sorted by probability ascending (name, probability, score, parent, layer, instances,
// candidate, method, time; kernels, API calls and backend tags for candidates and anomalies).
// Peer-detector evidence (step.peer) gets a different J_s: the calibrated verdict with its
// p-value, threshold and false-alarm rate, the evidence sentence, and one entry per blamed family
// (name, layer, parent, which cost, observed / expected / excess ms, share of the step, ratios to
// each peer group, its evidence sentence, kernels and API calls).
StepPrompt BuildStepPrompt(const StepEvidence& step);

const std::string& SystemPrompt();
// The system prompt for peer-mode evidence: confirm or reject the calibrated verdict and pick
// the faulty operators among the blamed ones.
const std::string& SystemPromptCalibrated();
const nlohmann::json& AnswerSchema();  // {step_anomaly, op_error_names, rationale}, strict

enum class ResponseFormat { kJsonSchema, kJsonObject };

struct RequestParams {
  std::string model;
  long long seed = 42;
  int max_tokens = 512;
  ResponseFormat format = ResponseFormat::kJsonSchema;
};

// One earlier answer that failed validation and the error to quote back to the model.
struct RejectedAnswer {
  std::string content;
  std::string error;
};

// The /v1/chat/completions body: model, system + user messages (plus, on a validation retry, the
// rejected answer and a correction request), temperature 0, seed, max_tokens, response_format.
nlohmann::json BuildRequestBody(const RequestParams& params, const StepPrompt& prompt,
                                const std::vector<RejectedAnswer>& rejected = {});

// Serialises a body (invalid UTF-8 can no longer occur, but dump is told to replace anyway).
std::string DumpBody(const nlohmann::json& body);

}  // namespace truffld::diagnose
