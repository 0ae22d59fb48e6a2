// One file's share of Merge(): the passes of merge/core run in order, each on the outputs of
// the ones before it, each output freed once no later pass reads it.
//
//   1 ranges      BuildHostRanges, JoinClosingPayloads   (host_ranges.h)
//   2 classify    ClassifyRanges                          (classify_ranges.h)
//   3 nest        NestRanges                              (nest.h)
//   4 API calls   AttachApiCalls                          (api_calls.h)
//   5 correlation IndexCorrelations                       (correlation.h)
//   6 device      LinkDeviceWork                          (device_links.h)
//   6b end state  EndStateOf                              (end_state.h)
//   7 graphs      CaptureOwners                           (graph_capture.h)
//   8 trees       BuildTrees                              (build_trees.h)
//   then          CountStepDetail                         (step_detail.h)
//
// The file's events are only read; problems found on the way are reported into its
// IngestStats (file:line), families and joined payloads interned into its string pool.
// Thread-safety: one call per file; calls for different files may run concurrently.
#pragma once

#include "core/build_trees.h"

namespace truffld::merge {

// Builds the trees of `file`, index `file_index` in the merge; `clock` maps its times onto the
// merged axis.
FileTrees BuildFileTrees(uint32_t file_index, TraceFile& file, const ClockMap& clock, const MergeOptions& options);

}  // namespace truffld::merge
