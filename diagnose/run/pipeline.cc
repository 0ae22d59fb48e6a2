// Pipeline glue: a detector, Stage II and fusion in order.
#include "run/pipeline.h"

#include "stage2/peer_evidence.h"

namespace truffld::diagnose {
namespace {

// Stage II on every unit, then fusion with the detector's per-unit threshold.
Status DecideAndFuse(std::vector<StepEvidence> evidence, const std::vector<double>& thresholds, StageTwo& stage2,
                     std::vector<StepDiagnosis>* out) {
  std::vector<StageTwoDecision> decisions = stage2.Decide(evidence);
  if (decisions.size() != evidence.size()) {
    return Internal("Stage II returned " + std::to_string(decisions.size()) + " decisions for " +
                    std::to_string(evidence.size()) + " steps");
  }
  out->reserve(evidence.size());
  for (size_t i = 0; i < evidence.size(); ++i) {
    out->push_back(Fuse(std::move(evidence[i]), std::move(decisions[i]), thresholds[i]));
  }
  return Status::Ok();
}

}  // namespace

Result<PipelineResult> RunPipeline(const InstanceTable& target, const InstanceTable* reference,
                                   const StageOneOptions& options, const PeerStageOptions& peer,
                                   StageTwo& stage2) {
  if (options.mode != ScoringMode::kPeer) return RunPipeline(target, reference, options, stage2);
  PipelineResult r;
  r.peer = RunPeerStage(target, peer);
  r.instance_p = InstancePValues(target, *r.peer);
  std::vector<StepEvidence> evidence = BuildPeerEvidence(target, *r.peer);
  std::vector<double> thresholds;
  thresholds.reserve(evidence.size());
  for (const StepEvidence& e : evidence) thresholds.push_back(e.peer->threshold);
  TRUFFLD_RETURN_IF_ERROR(DecideAndFuse(std::move(evidence), thresholds, stage2, &r.diagnoses));
  return r;
}

Result<PipelineResult> RunPipeline(const InstanceTable& target, const InstanceTable* reference,
                                   const StageOneOptions& options, StageTwo& stage2) {
  auto s1 = RunStageOne(target, reference, options);
  if (!s1.ok()) return s1.status();
  PipelineResult r;
  r.legacy = std::move(s1).value();
  r.instance_p = r.legacy.rho;
  std::vector<double> thresholds;
  thresholds.reserve(r.legacy.steps.size());
  for (const StepScore& s : r.legacy.steps) thresholds.push_back(s.threshold);
  TRUFFLD_RETURN_IF_ERROR(DecideAndFuse(BuildEvidence(target, r.legacy), thresholds, stage2, &r.diagnoses));
  return r;
}

std::vector<Prediction> ToPredictions(const std::vector<StepDiagnosis>& d) {
  std::vector<Prediction> out;
  out.reserve(d.size());
  for (const auto& s : d) {
    Prediction p;
    p.key = StepKey{s.evidence.rank.value_or(-1), s.evidence.step_index, s.evidence.view == View::kHorizontal};
    p.abnormal = s.abnormal;
    for (const auto& f : s.faulty)  // an effect (device idle a host stall caused) is not a blame
      if (CostOrNone(f.cost).effect_of.empty()) p.faulty.push_back(f.family);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace truffld::diagnose
