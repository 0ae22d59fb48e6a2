// Chat-completions envelope parsing and projection of the model's answer onto the schema.
#include "stage2/llm_answer.h"

#include <unordered_set>

#include <nlohmann/json.hpp>

#include "stage2/llm_policy.h"

namespace truffld::diagnose {
namespace {

using json = nlohmann::json;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\r' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "```json\n{...}\n```" -> "{...}"; anything else unchanged.
std::string_view StripFence(std::string_view s) {
  s = Trim(s);
  if (s.substr(0, 3) != "```") return s;
  const size_t newline = s.find('\n');
  if (newline == std::string_view::npos) return s;
  s.remove_prefix(newline + 1);
  s = Trim(s);
  if (s.size() >= 3 && s.substr(s.size() - 3) == "```") s.remove_suffix(3);
  return Trim(s);
}

int64_t IntOrZero(const json& obj, const char* key) {
  auto it = obj.find(key);
  return (it != obj.end() && it->is_number_integer()) ? it->get<int64_t>() : 0;
}

std::string Short(const std::string& s) { return SanitizeForPrompt(s, 64); }

}  // namespace

Result<ChatReply> ParseChatCompletion(std::string_view body) {
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return ParseError("response body is not valid JSON");
  if (!doc.is_object()) return ParseError("response body is not a JSON object");
  ChatReply reply;
  if (auto usage = doc.find("usage"); usage != doc.end() && usage->is_object()) {
    reply.prompt_tokens = IntOrZero(*usage, "prompt_tokens");
    reply.completion_tokens = IntOrZero(*usage, "completion_tokens");
  }
  auto choices = doc.find("choices");
  if (choices == doc.end() || !choices->is_array() || choices->empty() ||
      !(*choices)[0].is_object()) {
    return ParseError("response has no choices[0]");
  }
  const json& choice = (*choices)[0];
  if (auto fr = choice.find("finish_reason"); fr != choice.end() && fr->is_string()) {
    reply.finish_reason = fr->get<std::string>();
  }
  auto msg = choice.find("message");
  if (msg == choice.end() || !msg->is_object()) return ParseError("response has no choices[0].message");
  if (auto refusal = msg->find("refusal"); refusal != msg->end() && refusal->is_string()) {
    return ParseError("model refused: " + SanitizeForPrompt(refusal->get<std::string>(), 200));
  }
  auto content = msg->find("content");
  if (content == msg->end() || !content->is_string()) {
    return ParseError("response has no choices[0].message.content string");
  }
  reply.content = content->get<std::string>();
  return reply;
}

Result<ProjectedAnswer> ProjectAnswer(std::string_view content, const PromptNames& names,
                                      const StepEvidence& step) {
  const std::string_view text = StripFence(content);
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return ParseError("the answer is not valid JSON");
  if (!doc.is_object()) return ParseError("the answer must be a JSON object");
  auto anomaly = doc.find("step_anomaly");
  if (anomaly == doc.end() || !anomaly->is_boolean()) {
    return ParseError("\"step_anomaly\" must be present and a boolean");
  }
  auto list = doc.find("op_error_names");
  if (list == doc.end() || !list->is_array()) {
    return ParseError("\"op_error_names\" must be present and an array of strings");
  }
  for (const json& item : *list) {
    if (!item.is_string()) return ParseError("every element of \"op_error_names\" must be a string");
  }
  ProjectedAnswer out;
  out.abnormal = anomaly->get<bool>();
  if (!out.abnormal && !list->empty()) {
    return ParseError("\"step_anomaly\" is false but \"op_error_names\" is not empty");
  }
  if (auto r = doc.find("rationale"); r != doc.end()) {
    if (!r->is_string()) return ParseError("\"rationale\" must be a string");
    out.rationale = SanitizeForPrompt(r->get<std::string>(), 1024);
  }

  std::unordered_set<std::string> families;
  for (const FamilyEvidence& f : step.families) families.insert(f.family);
  std::vector<std::string> kept;
  std::string dropped_examples;
  for (const json& item : *list) {
    const std::string& shown = item.get_ref<const std::string&>();
    const std::string* real = names.ToReal(shown);
    if (real != nullptr && families.count(*real) != 0) {
      kept.push_back(*real);
      continue;
    }
    if (out.dropped_names < 3) {
      dropped_examples += (dropped_examples.empty() ? "'" : ", '") + Short(shown) + "'";
    }
    ++out.dropped_names;
  }
  std::unordered_set<std::string> unique(kept.begin(), kept.end());
  const size_t before = unique.size();
  out.faulty = PropagateUpward(step, std::move(kept));
  out.added_parents = static_cast<int>(out.faulty.size() - before);

  if (out.dropped_names > 0) {
    out.note = "dropped " + std::to_string(out.dropped_names) + " name(s) not in the step: " +
               dropped_examples + (out.dropped_names > 3 ? ", ..." : "");
  }
  if (out.added_parents > 0) {
    if (!out.note.empty()) out.note += "; ";
    out.note += "added " + std::to_string(out.added_parents) + " parent(s) by upward propagation";
  }
  return out;
}

}  // namespace truffld::diagnose
