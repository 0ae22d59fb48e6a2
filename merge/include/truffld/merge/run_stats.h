// ComputeRunStats: the run's nsys/HTA-style summaries (truffld/run_stats.h) from the merge's
// trees, written by truffld-merge as run_stats.json. Every device node counts once, in the step
// whose tree holds it (vertical or horizontal view); a kernel's launch is its nearest API-call
// ancestor.
// Thread-safety: only reads the result; concurrent calls are safe.
#pragma once

#include "truffld/merge/pipeline.h"
#include "truffld/run_stats.h"

namespace truffld::merge {

RunStats ComputeRunStats(const MergeResult& result);

}  // namespace truffld::merge
