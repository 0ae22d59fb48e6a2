// A step's phase for trees.jsonl and trace.json: its name's tag or words (PhaseFromStepName), or,
// for an engine's own profiler step that names none, what ran under it. SGLang's model runner
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

inline const char* StepPhase(const MergeResult& r, const Tree& t) {
  const Node& root = r.nodes[t.root];
  const char* named = PhaseFromStepName(r.Name(root));
  if (std::string_view(named) != "unknown" || r.Name(root).find(".py(") == std::string_view::npos) return named;
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
