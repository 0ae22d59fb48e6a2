// The peer-relative Stage I in order (see peer_stage.h).
#include "truffld/diagnose/peer_stage.h"

namespace truffld::diagnose {

PeerStageResult RunPeerStage(const InstanceTable& t, const PeerStageOptions& o) {
  PeerStageResult r;
  r.groups = GroupUnits(t);
  r.comm = MatchCollectives(t, r.groups);
  r.rows = BuildTests(t, r.groups, r.comm, o.peers);
  ScoringOptions so = o.scoring;
  so.floor_ns = o.peers.floor_ns;
  so.threads = o.threads;
  r.scoring = ScoreRows(t, r.rows, so);
  r.decision = DecideUnits(t, r.rows, o.decision);
  BlameOptions bo = o.blame;
  bo.single_ratio_device = o.decision.single_ratio_device;
  bo.single_ratio_host = o.decision.single_ratio_host;
  r.blame = BlameUnits(t, r.rows, r.decision, bo);
  r.stragglers = FindStragglers(t, r.groups, r.comm, o.straggler_share);
  return r;
}

}  // namespace truffld::diagnose
