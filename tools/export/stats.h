// RunStats: the summaries users know from `nsys stats` and HTA, computed by SQL from a
// truffld-export database (schema_sql.h):
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

namespace truffld::exporter {

struct KernelSummary {
  std::string name;
  int64_t count = 0, total_ns = 0, min_ns = 0, max_ns = 0;
  double avg_ns = 0, share = 0;  // share: of all kernel time, 0..1
};
struct StepIdle {
  std::optional<int64_t> rank;
  int64_t step_index = 0, duration_ns = 0, busy_ns = 0;
  double idle_share = 0;
};
struct RankIdle {
  std::optional<int64_t> rank;
  int64_t steps = 0, duration_ns = 0, busy_ns = 0;
  double idle_share = 0;  // over the rank's summed step time
  double min_step_idle = 0, max_step_idle = 0;
};
struct LaunchLatency {
  std::string api;
  int64_t count = 0;
  int64_t min_ns = 0, p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;  // kernel start - call start
  int64_t p50_after_end_ns = 0;                                        // kernel start - call end
};
struct RankOverlap {
  std::optional<int64_t> rank;
  int64_t compute_ns = 0, comm_ns = 0, overlap_ns = 0;
  double overlap_share = 0;  // overlap / comm (0 without communication)
};

struct RunStats {
  int64_t kernels = 0, kernel_total_ns = 0;
  std::vector<KernelSummary> kernel_summary;  // largest total first
  std::vector<StepIdle> step_idle;            // by rank, step
  std::vector<RankIdle> rank_idle;
  std::vector<LaunchLatency> launch_latency;  // most kernels first
  std::vector<RankOverlap> overlap;
};

Result<RunStats> ComputeRunStats(SqliteDb* db);

}  // namespace truffld::exporter
