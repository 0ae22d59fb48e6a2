// Pass 8, tree building: one file's ranges, calls and device work become tree nodes.
//
// Rules (merge/README.md, "Steps and requests" and "Views"): every step (implicit ones
// included) gets two roots, the vertical and the horizontal view. A range in a step hangs under
// its parent range's node; an outermost communication range hangs under the step's horizontal
// root instead, anchored to its enclosing vertical range, and everything inside it follows it.
// A range naming a strict subset of its step's request ids is marked with that subset. API
// calls hang under their owning range, device work under its launching call; a CUDA-graph op
// is anchored to the range that captured it ("captured_in"), which gets a node of its own
// (in no tree) when it lies outside every step. Children are kept in (start, node) order.
// Node times are mapped onto the merged axis here (ClockMap); the events are not changed.
// Inputs: the outputs of passes 1-7 (BuildInputs). The range tables are consumed: emptied once
// the range nodes exist, before the call and device nodes (most nodes) are made, so they are
// not held at the merge's memory peak. Output: FileTrees, node indices local to the file (Merge
// concatenates and shifts them). Thread-safety: one call per file; families are interned into
// the file's string pool.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/api_calls.h"
#include "core/classify_ranges.h"
#include "core/device_links.h"
#include "core/host_ranges.h"
#include "core/nest.h"
#include "truffld/merge/pipeline.h"

namespace truffld::merge {

// A step found in one file; node indices are local to FileTrees::nodes.
struct StepRoot {
  uint32_t vertical = kNoNode;
  uint32_t horizontal = kNoNode;
  TimeNs start = 0;  // merged axis
  int64_t process_id = kNone;
  std::vector<std::string> requests;
  bool implicit = false;
  uint64_t line = 0;  // of the step range's opening event (0: implicit)
  bool device_detail = true;  // set by CountStepDetail (step_detail.h)
};

struct FileTrees {
  std::vector<Node> nodes;
  std::vector<StepRoot> steps;  // in vertical-root order
  // Request subsets named below steps; the `requests` side table indexes these until Merge
  // maps them into MergeResult::request_sets.
  std::vector<std::vector<std::string>> request_sets;
  NodeSideTable requests, anchors, payloads;  // as MergeResult's, local
  StrId implicit_name = kNoStr;               // "<implicit step>" in the file's pool, if any
  MergeCounters counters;
  FileEndState end_state;  // pass 6b (end_state.h), set by BuildFileTrees
};

// What tree building reads: the file and every earlier pass's output.
struct BuildInputs {
  uint32_t file_index = 0;
  const ClockMap* clock = nullptr;
  std::vector<HostRange>* ranges = nullptr;                     // pass 1 (consumed)
  const std::vector<JoinedPayload>* payloads = nullptr;         // pass 1
  RangeLayers* layers = nullptr;                                // pass 2 (consumed)
  Nesting* nesting = nullptr;                                   // pass 3 (consumed)
  const ApiCalls* api = nullptr;                                // pass 4
  const DeviceLinks* links = nullptr;                           // pass 6
  const std::unordered_map<int64_t, uint32_t>* capture = nullptr;  // pass 7 (graph node -> range)
};

// `classes`: the classifier pass 2 used (families and request ids come from its caches);
// `strings`: the file's string pool, where families are interned (the events are only read).
FileTrees BuildTrees(const TraceFile& file, const BuildInputs& in, RangeClasses* classes, StringPool* strings);

}  // namespace truffld::merge
