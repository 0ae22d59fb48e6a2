// RunStats: the summaries users know from `nsys stats` and Holistic Trace Analysis, as plain
// values and as run_stats.json (schemas/stats-summary.schema.json). truffld-merge computes them
// from its trees (truffld/merge/run_stats.h) and writes run_stats.json; truffld-diagnose reads it
// for report.html; truffld-export computes the same figures by SQL from its database (`--stats`).
//   - kernel time summary: per kernel name, count, total/avg/min/max duration and share of all
//     kernel time (nsys stats' cuda_gpu_kern_sum);
//   - GPU idle share per step: 1 - (union of the step's kernels, copies and memsets, clipped to
//     the step) / step duration, for steps with device detail and a positive duration (HTA's
//     idle time);
//   - launch latency: kernel start - launching API call start (and - its end), nearest-rank
//     percentiles per launch API (HTA's CUDA kernel launch statistics);
//   - compute/communication overlap per rank: the time communication kernels (under a comm
//     range, or named nccl*) run while a compute kernel runs, over the communication kernels'
//     busy time (HTA's comm_comp_overlap).
// All times are ns on the merge's axis; shares are fractions 0..1.
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "truffld/status.h"

namespace truffld {

inline constexpr const char* kStatsSummarySchema = "truffld.stats-summary/1";

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
  std::vector<KernelSummary> kernel_summary;  // largest total first, then by name
  std::vector<StepIdle> step_idle;            // by rank (no rank last), step
  std::vector<RankIdle> rank_idle;            // step_idle summed per rank
  std::vector<LaunchLatency> launch_latency;  // most kernels first, then by API name
  std::vector<RankOverlap> overlap;           // by rank
};

// Nearest-rank percentile of ascending `sorted` (non-empty): the smallest value whose 1-based
// rank is at least p * n (compared in double, as the export's SQL does).
int64_t NearestRank(const std::vector<int64_t>& sorted, double p);
// The 0-based index NearestRank reads among n > 0 sorted values.
size_t NearestRankIndex(size_t n, double p);

// Fills rank_idle from step_idle (which must be grouped by rank).
void SummariseRankIdle(RunStats* stats);

// run_stats.json (schemas/stats-summary.schema.json): one JSON document and a newline.
std::string RunStatsJson(const RunStats& stats);

// Parses run_stats.json text; `path` names the file in errors (a missing member, a wrong type
// or another schema is an InvalidArgument naming the path and the member).
Result<RunStats> ParseRunStatsJson(std::string_view text, const std::string& path);

}  // namespace truffld
