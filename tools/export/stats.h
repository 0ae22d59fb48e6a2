// RunStats (truffld/run_stats.h): the summaries users know from `nsys stats` and HTA, computed
// by SQL from a truffld-export database (schema_sql.h); truffld-merge computes the same from its
// trees (run_stats.json), and tests check that the two agree:
//   - kernel time summary: per kernel name, count, total/avg/min/max duration and share of all
//     kernel time (nsys stats' cuda_gpu_kern_sum);
//   - GPU idle share per step: 1 - (union of the step's kernels, copies and memsets, clipped to
//     the step) / step duration, for steps with device detail (HTA's idle time);
//   - launch latency: kernel start - launching API call start (and - its end), percentiles per
//     launch API (HTA's CUDA kernel launch statistics);
//   - compute/communication overlap per rank: the time communication kernels (is_comm) run
//     while a compute kernel runs, over the communication kernels' busy time (HTA's
//     comm_comp_overlap).
// Busy times are unions of intervals, by an event sweep in SQL window functions (no pairwise
// join). Percentiles are nearest-rank. All times in ns.
// Thread-safety: one call per database connection at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sqlite_db.h"
#include "truffld/run_stats.h"

namespace truffld::exporter {
using namespace truffld::rundb;  // the run database library (merge/sqlite), which the export feeds

Result<RunStats> ComputeRunStats(SqliteDb* db);

}  // namespace truffld::exporter
