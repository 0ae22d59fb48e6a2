// The peer-relative Stage I (`--mode peer`, the default): align ranks, build test rows with
// peer expectations, score residuals with per-family mixtures, decide units at the stated
// false-alarm rate, blame the causing operators with their excess time, and find stragglers.
// See diagnose/README.md, "How a verdict is reached". Thread-safety: reentrant.
#pragma once

#include <vector>

#include "peer/alignment.h"
#include "peer/blame.h"
#include "read/instances.h"
#include "peer/decision.h"
#include "peer/scoring.h"
#include "peer/slow_regimes.h"
#include "peer/peers.h"
#include "peer/pipeline_stages.h"
#include "peer/stragglers.h"
#include "peer/verdict.h"
#include "peer/warmup.h"

namespace truffld::diagnose {

struct PeerStageOptions {
  PeerOptions peers;
  ScoringOptions scoring;
  BlameOptions blame;
  DecisionOptions decision;       // false-alarm rate (alpha) and the lone-instance ratio
  RunPatternOptions run_patterns; // what counts as a pattern of the run (run_patterns.h)
  double straggler_share = 0.02;  // report stragglers causing at least this share of a step
  double pipeline_share = 0.05;   // report a pipeline stage whose even split would save this share of a step
  SlowRegimeOptions slow_regimes; // slower modes many steps share, reported once (slow_regimes.h)
  int threads = 1;
};

struct PeerStageResult {
  int64_t timer_resolution_ns = 1;       // detected tick of the trace's timestamps
  UnitGroups groups;
  std::vector<CommTiming> comm;          // per instance
  std::vector<TestRow> rows;
  StepCycles cycles;                     // per unit: its cycle and its similar steps' (peers.h)
  ScoringResult scoring;
  DecisionResult decision;
  std::vector<std::vector<BlamedFamily>> blame;  // per unit
  std::vector<RunFinding> findings;              // run patterns, reported once
  std::vector<std::vector<WarmupCost>> warmup;   // per unit: first use of GPU code (not judged)
  WarmupTally warmup_tally;
  StragglerResult stragglers;
  std::vector<PipelineImbalance> pipelines;     // stages longer than the others (run findings)
  std::vector<SlowRegime> slow_regimes;         // slower modes many steps share (run findings)
};

// Runs the stage. The log-ratio floor (PeerOptions::floor_ns) is raised to five ticks of the
// trace's timer when its timestamps are coarse (TimerResolutionNs).
PeerStageResult RunPeerStage(const InstanceTable& t, const PeerStageOptions& o);

// The coarsest of 1000, 100 and 10 ns that at least 99% of operator timestamps are multiples
// of (sampled), else 1.
int64_t TimerResolutionNs(const InstanceTable& t);

}  // namespace truffld::diagnose
