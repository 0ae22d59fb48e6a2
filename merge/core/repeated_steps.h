// Pass 3b, steps from a repeated top-level call: a process whose trace has no step range (a
// plain PyTorch program traced without truffld_hooks.step_range or the profiler's steps) gets
// its steps from the outermost call it repeats, e.g. the model's forward in an inference loop.
//
// Rules (merge/README.md, "Steps from a repeated call"): among the outermost ranges of each
// thread of such a process (those the nesting pass put directly under the implicit step), a
// candidate is a module forward (a name starting `nn.Module:`, as truffld's module hooks and
// the PyTorch profiler write it) or a range of layer `other` (a user annotation; not a Python
// frame of a profiler's stack, category `python_function`, nor Kineto's device-side copy of an
// annotation), grouped by exact name. Of those occurring at least kMinRepeats times, the one
// with the most total time wins when it covers at least kMinShare (a quarter) of its thread's
// outermost-range time; each occurrence becomes a step (layer `step`, named by its range) and
// the process loses its implicit step. A process without such a call keeps its whole-process
// implicit step. Frontend functions (`torch.nn.functional.linear`) and backend ops never make
// steps: a loop body calling several of them would become one step per call. Nor do calls
// nested in a profiler's Python frames (vLLM's CUDA-graph capture calls its compiled graph 23
// times under them, while the device work it runs lies between the calls).
// Input: the TraceFile, ranges (pass 1), layers (pass 2), nesting (pass 3, made with the
// implicit steps). Output: the ranges to promote. Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <vector>

#include "core/classify_ranges.h"
#include "core/nest.h"

namespace truffld::merge {

struct RepeatedCallSteps {
  static constexpr uint32_t kMinRepeats = 3;
  static constexpr double kMinShare = 0.25;
  std::vector<uint32_t> ranges;      // ranges to promote to steps, ascending
  std::vector<int64_t> processes;    // processes that got steps this way, ascending
};

RepeatedCallSteps FindRepeatedCallSteps(const TraceFile& file, const std::vector<HostRange>& ranges,
                                        const RangeLayers& layers, const Nesting& nesting);

// Promotes `found.ranges` to steps and drops the implicit steps of `found.processes`.
void ApplyRepeatedCallSteps(const RepeatedCallSteps& found, RangeLayers* layers);

}  // namespace truffld::merge
