// What borders a stretch of a step that no operator covers, for the evidence: the host's longest
// gap between operator ranges ("between aten::mm and aten::add") and the device's longest idle
// stretch ("between the device work of aten::mm and of aten::add"), so that a person reading
// "(host outside operators)" or "(device idle)" knows where in the step to look. Only operators
// whose edge meets the stretch's edge exactly are named (an operator whose range ends where the
// host gap starts; one whose own device work ends where the idle stretch starts); the step's own
// edges are named as such, and a side nothing meets (a call issued directly under the step,
// another view's work) is left out. The outermost operator is named when nested ones share an
// edge. Cost: one pass over the step's instances, made only for the blamed stretches.
// Pure; thread-safety: plain functions.
#pragma once

#include <cstdint>
#include <string>

#include "read/instances.h"

namespace truffld::diagnose {

// ", between aten::mm and aten::add", ", after aten::mm", ", before aten::add",
// ", between the step's start and aten::embedding", or "" when neither side is known.
// [from, to): the host gap, ns on the merged axis, inside step `s` of `t`.
std::string HostGapEdges(const InstanceTable& t, const StepInfo& s, int64_t from, int64_t to);

// The same for an idle stretch of the device: ", between the device work of aten::mm and of
// aten::add", ", after the device work of aten::mm", ", before the device work of aten::add",
// ", between the step's start and the device work of aten::add".
std::string IdleEdges(const InstanceTable& t, const StepInfo& s, int64_t from, int64_t to);

}  // namespace truffld::diagnose
