// The time no operator range covers, as operator-like instances (used by TreeReader::Finish).
//
// A step is more than its operators: the host runs Python between them (a garbage-collector
// pause, input preparation), the engine schedules the next batch between steps while the GPUs may
// idle, and some calls are issued directly under the step (an input copy with no aten:: range
// around it). So that every microsecond of a step is judged, each vertical step gets up to four
// pseudo-instances, tested with the same peers as operator families (kDetailOutside, layer
// "other"):
//   (host outside operators)  host time inside the step range that no operator range and no
//                             direct call covers. Its host time is the total of those gaps; its
//                             range is the largest gap, where the what-if replay cuts it.
//   (between steps)           from the end of the rank's previous step to this step's start, when
//                             the steps are consecutive and the engine had unfinished work across
//                             the gap (a request of the previous step runs again in this step or
//                             a later one, or no step names a request): otherwise it may simply
//                             have had nothing to do. Not after a step that sent to another
//                             pipeline stage: that stage then waits for the later stages. Its host time is the part after the previous
//                             step's device work ended (StepInfo::prev_device_end): before that
//                             the device was busy anyway. The whole tensor-parallel group pays it
//                             together (kDetailGroupCost).
//   (calls under the step)    the CUDA API calls with no operator range above them and their
//                             device work, like an operator's own calls (host, device, waits).
//   (device idle)             the time inside the step range during which the rank's device ran
//                             no kernel, copy or memset (any stream; both views' work, and the
//                             previous step's work that ran into this step, count as busy; work
//                             crossing the step's edges is clipped to it). Its cost (host_ns, the
//                             tested quantity) is the total idle time; its range is the longest
//                             idle stretch, which the what-if replay shortens on the device
//                             timeline (kDetailIdle). Idle caused by a late launch is the host's
//                             cost: the replay cannot start the work before its launch, so such
//                             idle saves nothing when cut and the host family that delayed the
//                             launch carries the impact (diagnose/README.md, "Device idle").
//                             None for a step with no device work of its own, or outside a device
//                             window (StepInfo::device_detail false): nothing says what the device
//                             did there.
// A step without operator detail (StepInfo::operator_detail false: outside a detail window of a
// two-tier capture) gets neither host gaps nor calls under the step, which would be the whole
// step blamed on what was not recorded, but one (whole step): its duration, a group cost whose
// signature is its workload (tokens, context bucket).
// Times are ns on the merged axis. Internal header. Pure; thread-safety: plain functions.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "read/tree_reader_parts.h"

namespace truffld::diagnose::detail {

// Records an outermost call with no operator range above it in `b` (once per start, end and
// thread: every request tree of a step repeats it).
void AddDirectCall(StepBucket* b, int64_t start, int64_t end, int64_t thread, const SubtreeStats& agg);

// The pseudo-instances of one vertical step `b` from its (already collected) operator instances
// and direct calls. `prev`: the same rank's previous vertical step, or null; `carries_work`:
// whether the engine had unfinished work between them (CarriesWork).
std::vector<PendingInstance> OutsideInstances(const StepBucket& b, const StepBucket* prev, bool carries_work,
                                              StringTable* strings);

// Adds device work [start, end) to `b`'s busy intervals, folding them into their union when
// the list has doubled since the last fold (request trees repeat the same work).
void AddBusy(StepBucket* b, int64_t start, int64_t end);
// The sorted, disjoint union of `iv` (empty and inverted intervals dropped).
std::vector<std::pair<int64_t, int64_t>> BusyUnion(std::vector<std::pair<int64_t, int64_t>> iv);

// The (device idle) instance of vertical step `st` from its rank's device work `busy` (both
// views, any order, may overlap or cross the step's edges), or none (see above).
std::optional<PendingInstance> DeviceIdleInstance(const StepInfo& st, std::vector<std::pair<int64_t, int64_t>> busy,
                                                  StringTable* strings);

// Per vertical step of `steps` (one rank's, in step order): whether a request of the step before
// it runs again in it or in a later step, or neither step names a request (a training loop, a
// plain program): the engine had unfinished work during the time between them.
std::vector<bool> CarriesWork(const std::vector<const StepInfo*>& steps);

}  // namespace truffld::diagnose::detail
