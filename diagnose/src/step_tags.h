// Step-name tags: the workload facts truffld's hooks append to a step's range name, e.g.
// `step_execute_model[request_ids:a_b][phase:decode][tokens:2][ctx:812]`. Only `[name:N]`
// tags with a non-negative decimal integer are read; a tag inside the request-id list cannot
// match because ids escape `]` and `_` (see the README's naming rules).
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "truffld/step_tags.h"

namespace truffld::diagnose::detail {

// Value of the last `[name:N]` tag in `step_name`, or -1 when absent or not a number
// (truffld/step_tags.h, shared with truffld-merge).
inline int64_t StepTag(std::string_view step_name, std::string_view name) { return StepNameTag(step_name, name); }

}  // namespace truffld::diagnose::detail
