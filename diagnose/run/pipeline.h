// The diagnose pipeline without I/O: a detector -> evidence -> Stage II -> fusion.
//
// Kept separate from the CLI so tests can run the whole chain on an in-memory InstanceTable.
// Thread-safety: reentrant; Stage II's own threading is described in stage2/llm_stage2.h.
#pragma once

#include <optional>
#include <vector>

#include "legacy/stage1.h"
#include "peer/stage.h"
#include "report/metrics.h"
#include "stage2/fusion.h"
#include "stage2/llm_stage2.h"

namespace truffld::diagnose {

struct PipelineResult {
  // Per instance: the peer detector's smallest row p-value, or the legacy modes' rho(x)
  // (what --export-features writes as "rho").
  std::vector<double> instance_p;
  StageOneResult legacy;                 // legacy mixture modes only (empty in peer mode)
  std::optional<PeerStageResult> peer;   // peer mode only
  std::vector<StepDiagnosis> diagnoses;  // one per (rank, step, view), in table order
};

// Runs the detector that options.mode names on `target` (the peer detector with `peer`, or a
// legacy mixture mode, against `reference` in reference mode), asks `stage2` about every unit,
// and fuses. Fails only on invalid options.
Result<PipelineResult> RunPipeline(const InstanceTable& target, const InstanceTable* reference,
                                   const StageOneOptions& options, const PeerStageOptions& peer,
                                   StageTwo& stage2);

// The legacy modes' entry (options.mode must not be kPeer).
Result<PipelineResult> RunPipeline(const InstanceTable& target, const InstanceTable* reference,
                                   const StageOneOptions& options, StageTwo& stage2);

// The evaluation view of the diagnoses.
std::vector<Prediction> ToPredictions(const std::vector<StepDiagnosis>& d);

}  // namespace truffld::diagnose
