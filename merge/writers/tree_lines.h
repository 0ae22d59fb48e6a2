// What trees.jsonl says of each tree beyond its nodes, for the writers that must say the same:
// the request groups of a grouped line and a step's workload tags. write_trees.cc writes them
// as JSON; write_sqlite.cc (truffld-merge --sqlite) turns the same trees into the run
// database's rows, in the same order, so that both outputs hold the same rows and ids.
// Reads the merge result only; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "truffld/merge/pipeline.h"
#include "truffld/step_tags.h"
#include "writers/step_phase.h"

namespace truffld::merge {

// Partitions the tree's requests into groups that see identical trees: requests are grouped
// by which subset nodes include them (first-appearance order kept). TreeLayout::kGrouped
// writes one line per group, the tree as its first request sees it.
std::vector<std::vector<std::string>> RequestGroups(const MergeResult& r, const Tree& t);

// A step's workload, -1 where unknown: the hooks' tags in its name (tokens, ctx), else what an
// engine's own step annotation says (tokens, batch).
struct StepWorkload {
  int64_t tokens = -1, ctx = -1, batch = -1;
};
inline StepWorkload StepWorkloadOf(const MergeResult& r, const Tree& t) {
  const std::string_view step_name = r.Name(r.nodes[t.root]);
  const EngineStepCounts engine = CountsFromStepName(StepAnnotation(r, t));
  StepWorkload w;
  w.tokens = StepNameTag(step_name, "tokens");
  if (w.tokens < 0) w.tokens = engine.tokens;
  w.ctx = StepNameTag(step_name, "ctx");
  w.batch = engine.batch;
  return w;
}

}  // namespace truffld::merge
