// Step-name tags: the workload facts truffld's hooks append to a step's range name, e.g.
// `step_execute_model[request_ids:a_b][phase:decode][tokens:2][ctx:812]`. truffld-merge puts
// them in trace.json's step args, truffld-diagnose compares steps by them. Only `[name:N]` tags
// with a non-negative decimal integer are read; a tag inside the request-id list cannot match
// because ids escape `]` and `_` (see the README's naming rules).
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace truffld {

// Value of the last `[name:N]` tag in `step_name`, or -1 when absent or not a number (values
// of 2^58 and more are refused: -1).
inline int64_t StepNameTag(std::string_view s, std::string_view name) {
  int64_t found = -1;
  size_t pos = 0;
  while ((pos = s.find('[', pos)) != std::string_view::npos) {
    ++pos;
    if (s.compare(pos, name.size(), name) != 0 || pos + name.size() >= s.size() ||
        s[pos + name.size()] != ':') {
      continue;
    }
    size_t i = pos + name.size() + 1;
    int64_t v = 0;
    bool digits = false;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && v < (int64_t{1} << 58)) {
      v = v * 10 + (s[i] - '0');
      digits = true;
      ++i;
    }
    if (digits && i < s.size() && s[i] == ']') found = v;
  }
  return found;
}

}  // namespace truffld
