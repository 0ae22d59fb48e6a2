// Pipeline glue: Stage I, Stage II and fusion in order.
#include "truffld/diagnose/pipeline.h"

#include "truffld/diagnose/peer_evidence.h"

namespace truffld::diagnose {

Result<PipelineResult> RunPipeline(const InstanceTable& target, const InstanceTable* reference,
                                   const StageOneOptions& options, const PeerStageOptions& peer,
                                   StageTwo& stage2) {
  if (options.mode != ScoringMode::kPeer) return RunPipeline(target, reference, options, stage2);
  PipelineResult r;
  r.peer = RunPeerStage(target, peer);
  r.stage1 = PeerScores(target, *r.peer);
  std::vector<StepEvidence> evidence = BuildPeerEvidence(target, *r.peer);
  std::vector<StageTwoDecision> decisions = stage2.Decide(evidence);
  if (decisions.size() != evidence.size()) {
    return Internal("Stage II returned " + std::to_string(decisions.size()) + " decisions for " +
                    std::to_string(evidence.size()) + " steps");
  }
  r.diagnoses.reserve(evidence.size());
  for (size_t i = 0; i < evidence.size(); ++i) {
    const double thr = evidence[i].threshold;
    r.diagnoses.push_back(Fuse(std::move(evidence[i]), std::move(decisions[i]), thr));
  }
  return r;
}

Result<PipelineResult> RunPipeline(const InstanceTable& target, const InstanceTable* reference,
                                   const StageOneOptions& options, StageTwo& stage2) {
  auto s1 = RunStageOne(target, reference, options);
  if (!s1.ok()) return s1.status();
  PipelineResult r;
  r.stage1 = std::move(s1).value();
  std::vector<StepEvidence> evidence = BuildEvidence(target, r.stage1);
  std::vector<StageTwoDecision> decisions = stage2.Decide(evidence);
  if (decisions.size() != evidence.size()) {
    return Internal("Stage II returned " + std::to_string(decisions.size()) + " decisions for " +
                    std::to_string(evidence.size()) + " steps");
  }
  r.diagnoses.reserve(evidence.size());
  for (size_t i = 0; i < evidence.size(); ++i) {
    r.diagnoses.push_back(Fuse(std::move(evidence[i]), std::move(decisions[i]), r.stage1.steps[i].threshold));
  }
  return r;
}

std::vector<Prediction> ToPredictions(const std::vector<StepDiagnosis>& d) {
  std::vector<Prediction> out;
  out.reserve(d.size());
  for (const auto& s : d) {
    Prediction p;
    p.key = StepKey{s.evidence.rank.value_or(-1), s.evidence.step_index, s.evidence.view == "horizontal"};
    p.abnormal = s.abnormal;
    for (const auto& f : s.faulty) p.faulty.push_back(f.family);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace truffld::diagnose
