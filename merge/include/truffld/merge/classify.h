// Range classification (the design's rule-based classifier) and name normalisation.
//
// A Rules object maps a host range to a Layer by its name, NVTX domain and category: the first
// matching rule wins, user rules are tried before the built-in defaults (vLLM/SGLang step
// ranges, torch.nn.functional.* and module ranges, aten:: ranges, NCCL/collective ranges).
// It also holds the regex that extracts a step's request ids from its name. Family
// normalisation turns a captured name into the operator name that downstream stages group by.
// All functions are pure (no files except LoadRules, no globals).
// Thread-safety: a Rules object is immutable after construction and may be shared by threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "truffld/merge/regex_prefilter.h"
#include "truffld/pattern.h"
#include "truffld/status.h"
#include "truffld/wire.h"

namespace truffld::merge {

// Node layers and their spelling: the shared wire vocabulary (truffld/wire.h).
using truffld::IsApiLayer;
using truffld::IsDeviceLayer;
using truffld::Layer;
using truffld::LayerName;
using truffld::kLayerCount;
using truffld::ParseLayerName;

struct Rule {
  Layer layer = Layer::kOther;
  std::string name_regex;      // RE2 syntax (truffld/pattern.h), searched (not anchored); empty = any
  std::string domain;          // exact NVTX domain; empty = any
  std::string category;        // exact category (Kineto 'cat'); empty = any
  Pattern compiled;            // built from name_regex when the rule is parsed
  RegexPrefilter prefilter;    // decides most names without running `compiled`
  // Built-in rules only: a hand-written test equal to `compiled` (used instead of it and of the
  // prefilter while prefiltering is on).
  bool (*matcher)(std::string_view) = nullptr;
};

class Rules {
 public:
  // The built-in rules only.
  static Rules Defaults();
  // Parses a rules document (schemas/rules.schema.json). `origin` names it in messages.
  static Result<Rules> FromJson(std::string_view text, std::string_view origin);
  // Reads and parses a rules file.
  static Result<Rules> Load(const std::string& path);

  // First matching rule's layer; kOther when none matches. Only the first 4 KiB of a name is
  // matched (so are request ids under a user's request regex): RE2 runs in time linear in the
  // text, and the cap bounds that time per name and rule on hostile 1 MB names.
  Layer Classify(std::string_view name, std::string_view domain, std::string_view category) const;

  // Request ids named by a step's name, unescaped ("\_" -> "_", "\\" -> "\"); empty when the
  // name names none. The regex's first capture group holds ids separated by '_'. The default
  // pattern is read by hand over the whole name (a step batching hundreds of requests has a
  // name of tens of KiB); a user's pattern over the name's first 4 KiB.
  std::vector<std::string> ParseRequests(std::string_view step_name) const;
  // True when a step's request list cannot be read whole from its name: with the default
  // pattern, a "request_ids:" list no unescaped ']' closes, or a name that does not end in ']'
  // after it (the name was cut, e.g. at the injector's name limit); with a user's pattern, a
  // name longer than the 4 KiB it reads.
  bool RequestsCut(std::string_view step_name) const;

  // True when neither a rule's regex nor the request regex can tell numbered names apart (see
  // RegexNumberBlind): then names that differ only in the digits after their first ", " get
  // one layer and match the request regex alike, and callers may share one answer among them.
  bool NumberBlind() const;

  const std::vector<Rule>& rules() const { return rules_; }
  const std::string& request_regex() const { return request_regex_; }
  // Replaces the request regex (RE2 syntax; must have a capture group). InvalidArgument names
  // the pattern and what is wrong with it.
  Status SetRequestRegex(const std::string& re);
  // Tests: false runs every regex on every name (the prefilters are on by default).
  void set_prefilter(bool on) { prefilter_ = on; }

 private:
  std::vector<Rule> rules_;
  std::string request_regex_;
  Pattern request_re_;
  RegexPrefilter request_filter_;
  bool prefilter_ = true;
};

// Normalised operator family for a node name of the given layer (see the header comment of
// trees.schema.json): "aten::mm, seq = 0" -> "aten::mm"; "torch.nn.functional.linear f.py:1"
// -> "torch.nn.functional.linear"; "void ns::k<4, float>(int)" -> "ns::k"; steps -> "step".
std::string NormaliseFamily(Layer layer, std::string_view name);

// Payload of a comm range that carries its arguments in its name, as truffld's Python hooks
// write them: "nccl:all_reduce, bytes=1048576, world_size=8, impl=pynccl" ->
// {"op":"all_reduce","bytes":1048576,"world_size":8,"impl":"pynccl"} (integers stay numbers).
// Returns "" when the name is not in that form. Pure; thread-safe.
std::string CommPayloadFromName(std::string_view name);

// Engine phase hinted by a step name: "prefill", "decode", "mixed" or "unknown".
const char* PhaseFromStepName(std::string_view name);

// What an engine's own step annotation says of its batch: vLLM's
// "execute_[N_]context_C(...)_generation_G(...)" runs C requests in prefill and G in decode
// (batch C + G); SGLang's "step[EXTEND bs=B toks=T]" B requests and T tokens. -1: not said.
struct EngineStepCounts {
  int64_t batch = -1, tokens = -1;
};
EngineStepCounts CountsFromStepName(std::string_view name);

}  // namespace truffld::merge
