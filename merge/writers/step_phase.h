// A step's phase for trees.jsonl and trace.json: its name's tag or words (PhaseFromStepName), or,
// for an engine's own profiler step that names none, its engine annotation (StepAnnotation) or
// what ran under it. SGLang's model runner
// calls forward_extend (prefill, chunked prefill included) or forward_decode, which its
// torch-profiler traces record as python_function ranges ("…/model_runner.py(3003):
// forward_extend"). Reads the tree only; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "truffld/merge/classify.h"
#include "truffld/merge/pipeline.h"

namespace truffld::merge {

// The name of the engine annotation that describes an engine profiler step: for a step that is
// a Python frame ("….py(N): execute_model"), the first range under it named as vLLM's
// ("execute_…context_…") or SGLang's ("step[…") own step annotation; else the step's own name.
inline std::string_view StepAnnotation(const MergeResult& r, const Tree& t) {
  const std::string_view own = r.Name(r.nodes[t.root]);
  if (own.find(".py(") == std::string_view::npos) return own;
  std::vector<uint32_t> stack{r.nodes[t.root].first_child};
  while (!stack.empty()) {
    const uint32_t i = stack.back();
    stack.pop_back();
    if (i == kNoNode) continue;
    const std::string_view name = r.Name(r.nodes[i]);
    if ((name.rfind("execute_", 0) == 0 && name.find("context_") != std::string_view::npos) ||
        name.rfind("step[", 0) == 0)
      return name;
    stack.push_back(r.nodes[i].next_sibling);
    stack.push_back(r.nodes[i].first_child);
  }
  return own;
}

inline const char* StepPhase(const MergeResult& r, const Tree& t) {
  const Node& root = r.nodes[t.root];
  const char* named = PhaseFromStepName(r.Name(root));
  if (std::string_view(named) != "unknown" || r.Name(root).find(".py(") == std::string_view::npos) return named;
  if (const char* annotated = PhaseFromStepName(StepAnnotation(r, t)); std::string_view(annotated) != "unknown")
    return annotated;
  auto ends = [](std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
  };
  std::vector<uint32_t> stack{root.first_child};
  while (!stack.empty()) {
    const uint32_t i = stack.back();
    stack.pop_back();
    if (i == kNoNode) continue;
    const std::string_view name = r.Name(r.nodes[i]);
    if (ends(name, "): forward_extend")) return "prefill";
    if (ends(name, "): forward_decode")) return "decode";
    stack.push_back(r.nodes[i].next_sibling);
    stack.push_back(r.nodes[i].first_child);
  }
  return named;
}

}  // namespace truffld::merge
