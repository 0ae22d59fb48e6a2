// The peer-relative Stage I in order (see stage.h).
#include "peer/stage.h"

#include <algorithm>

namespace truffld::diagnose {

int64_t TimerResolutionNs(const InstanceTable& t) {
  // The coarsest of 1 us, 100 ns, 10 ns that nearly every timestamp is a multiple of (profilers
  // that write microseconds, e.g. Kineto's integer "ts"/"dur", give 1000).
  for (int64_t res : {int64_t{1000}, int64_t{100}, int64_t{10}}) {
    size_t n = 0, multiple = 0;
    for (size_t i = 0; i < t.size(); i += std::max<size_t>(1, t.size() / 20000)) {
      n += 2;
      multiple += (t.start_ns[i] % res == 0) + (t.end_ns[i] % res == 0);
    }
    if (n > 0 && multiple >= 0.99 * static_cast<double>(n)) return res;
  }
  return 1;
}

PeerStageResult RunPeerStage(const InstanceTable& t, const PeerStageOptions& options) {
  PeerStageResult r;
  PeerStageOptions o = options;
  // Costs of a few timer ticks are quantised: ratios between them say nothing.
  r.timer_resolution_ns = TimerResolutionNs(t);
  o.peers.floor_ns = std::max(o.peers.floor_ns, 5.0 * static_cast<double>(r.timer_resolution_ns));
  r.groups = GroupUnits(t);
  r.comm = MatchCollectives(t, r.groups);
  o.peers.threads = o.threads;
  r.rows = BuildTests(t, r.groups, r.comm, o.peers, &r.cycles);
  MarkWarmupRows(t, r.rows);
  ScoringOptions so = o.scoring;
  so.floor_ns = o.peers.floor_ns;
  so.threads = o.threads;
  r.scoring = ScoreRows(t, r.rows, so);
  r.warmup = WarmupCosts(t, r.rows);
  Judgement judged = JudgeUnits(t, r.rows, r.comm, o.decision, o.blame, o.run_patterns, &r.cycles);
  r.decision = std::move(judged.decision);
  r.blame = std::move(judged.blame);
  r.findings = std::move(judged.findings);
  SlowRegimeOptions sr = o.slow_regimes;
  sr.min_share = o.decision.min_impact_share;  // the floor a verdict needs, the same for a regime
  r.slow_regimes = FindSlowRegimes(t, r.rows, r.scoring, r.decision, sr, &r.cycles);
  r.warmup_tally = TallyWarmup(t, r.warmup, o.decision.min_impact_share);
  r.stragglers = FindStragglers(t, r.groups, r.comm, o.straggler_share);
  r.pipelines = FindPipelineImbalance(t, r.groups, r.comm, o.pipeline_share);
  return r;
}

}  // namespace truffld::diagnose
