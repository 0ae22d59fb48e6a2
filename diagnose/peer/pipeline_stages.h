// Pipeline stages longer than the others: a run finding (issue 39, "Runs, not only steps").
//
// A pipeline-parallel replica splits the model's layers over stages (one tensor-parallel group
// each). vLLM and SGLang keep one batch in flight per stage, so the replica runs at its slowest
// stage's pace: a stage with more work than the others (a heavier share of the layers, the
// sampler and output layer of the last stage, a slower GPU) costs every step the difference
// between it and an even split. Inside a replica, stages do different work, so no step is
// abnormal for it; the run is reported once, like a persistent straggler.
//
// Stages come from the alignment (alignment.h): in a logical step of the horizontal view, ranks
// that took part in one matched collective (not a send/recv) are one stage; a logical step with
// two stages or more that exchanged send/recv is a pipeline. A stage's load in a step is its
// ranks' mean device time of compute (kernels, copies and memsets of every operator, no
// communication: a receive waits for the previous stage), from their vertical units (steps
// with device detail only). Per step the saving of an even split is the longest stage's load
// minus the stages' mean; the finding is made when one stage is the longest in at least 3 of 4
// compared steps (and 3 steps at least) and the median saving is at least `min_share` of the
// median step. Times are ns. Pure; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "read/instances.h"
#include "peer/types.h"

namespace truffld::diagnose {

struct PipelineStage {
  std::vector<int64_t> ranks;      // sorted
  std::vector<std::string> hosts;  // sorted, distinct
  double load_ns = 0;              // median over compared steps of its ranks' mean compute
};

struct PipelineImbalance {
  std::vector<PipelineStage> stages;  // by lowest rank
  size_t longest = 0;                 // index into stages
  int steps = 0;                      // logical steps compared
  int steps_longest = 0;              // of which the longest stage was longest
  double saving_ns = 0;               // median over those steps of longest minus the mean
  double step_ns = 0;                 // median duration of the replica's steps (its longest rank's)
  double share = 0;                   // saving_ns / step_ns
};

// Every pipeline replica of `t` with a stage longer than the others (see above); `comm` and
// `groups` come from the alignment. Sorted by saving, largest first.
std::vector<PipelineImbalance> FindPipelineImbalance(const InstanceTable& t, const UnitGroups& groups,
                                                     const std::vector<CommTiming>& comm, double min_share = 0.05);

// One sentence: "pipeline stage of ranks 2-3 (node1) was the longest of 2 in 16 of 16 steps:
// 1.79 ms of device compute a step against 0.87 ms for ranks 0-1 (node0); with a batch in flight
// per stage (vLLM, SGLang) the replica runs at its pace, and an even split would save about
// 0.46 ms a step (25.7%) ...".
std::string PipelineImbalanceSentence(const PipelineImbalance& p);

}  // namespace truffld::diagnose
