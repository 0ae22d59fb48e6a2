// Reading what the endpoint sent back: the chat-completions envelope, then the model's answer
// projected onto the output schema and the step's real family names.
//
// Projection rules: the answer must be one JSON object (a ```json fence is tolerated) with a
// boolean step_anomaly and a string array op_error_names (rationale optional in json_object mode);
// "normal with names" is a validation error. Names not among the step's families are dropped and
// counted, names are de-duplicated, and missing parents are added (upward propagation), all
// recorded in `note`. Validation errors are returned as kParseError whose message is suitable to
// quote back to the model. Pure. Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stage2/llm_prompt.h"
#include "stage2/evidence.h"
#include "truffld/status.h"

namespace truffld::diagnose {

struct ChatReply {
  std::string content;            // choices[0].message.content
  int64_t prompt_tokens = 0;      // usage.prompt_tokens (0 when absent)
  int64_t completion_tokens = 0;  // usage.completion_tokens
  std::string finish_reason;
};

// Parses a /v1/chat/completions response body. kParseError when it is not JSON or has no
// choices[0].message.content string (a refusal is reported as such).
Result<ChatReply> ParseChatCompletion(std::string_view body);

struct ProjectedAnswer {
  bool abnormal = false;
  std::vector<std::string> faulty;  // real family names of the step
  std::string rationale;
  std::string note;                 // dropped names, added parents; "" when nothing changed
  int dropped_names = 0;
  int added_parents = 0;
};

Result<ProjectedAnswer> ProjectAnswer(std::string_view content, const PromptNames& names,
                                      const StepEvidence& step);

}  // namespace truffld::diagnose
