// The diagnose pipeline without I/O: Stage I -> evidence -> Stage II -> fusion.
//
// Kept separate from the CLI so tests can run the whole chain on an in-memory InstanceTable.
// Thread-safety: reentrant; Stage II's own threading is described in llm_stage2.h.
#pragma once

#include <optional>
#include <vector>

#include "truffld/diagnose/fusion.h"
#include "truffld/diagnose/llm_stage2.h"
#include "truffld/diagnose/metrics.h"
#include "truffld/diagnose/peer_stage.h"
#include "truffld/diagnose/stage1.h"

namespace truffld::diagnose {

struct PipelineResult {
  StageOneResult stage1;              // peer mode: PeerScores (per-instance smallest p as rho)
  std::optional<PeerStageResult> peer;  // peer mode only
  std::vector<StepDiagnosis> diagnoses;  // one per (rank, step, view), in table order
};

// Runs Stage I on `target` (against `reference` in reference mode), asks `stage2` about every
// step, and fuses. Fails only on invalid options.
Result<PipelineResult> RunPipeline(const InstanceTable& target, const InstanceTable* reference,
                                   const StageOneOptions& options, StageTwo& stage2);

// Peer mode (options.mode == kPeer) runs the peer-relative Stage I with `peer`; the other
// modes ignore `peer`.
Result<PipelineResult> RunPipeline(const InstanceTable& target, const InstanceTable* reference,
                                   const StageOneOptions& options, const PeerStageOptions& peer,
                                   StageTwo& stage2);

// The evaluation view of the diagnoses.
std::vector<Prediction> ToPredictions(const std::vector<StepDiagnosis>& d);

}  // namespace truffld::diagnose
