// Each rank's end state as truffld-merge's summary.json records it (files[].end_state, see
// merge/README.md "End state"): whether the process exited normally, what it was inside when
// its dump stopped, how far it got in each communicator's collectives and which launches never
// completed. The input of hang localisation (hang.h). Diagnose reads the file format, not
// merge's C++ API, like trees.jsonl. Times are ns on the merged axis.
// Thread-safety: plain data; ParseEndStates is a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "truffld/status.h"

namespace truffld::diagnose {

struct EndFrame {
  std::string name, layer;  // layer: "step", "frontend_op", "backend_op", "comm", "other"
  int64_t start_ns = 0;
  int64_t thread_id = -1;
};

struct EndCollectives {
  std::string communicator, op;  // communicator: the NCCL payload's id, or "op:<family>"
  uint64_t entered = 0;
  int64_t bytes = -1, world_size = -1;  // of the last one entered (-1: unknown)
  int64_t last_start_ns = 0, last_end_ns = 0;
  bool last_open = false;
};

struct EndLaunch {
  std::string name;
  int64_t start_ns = 0;
  int64_t stream = -1;
};

struct RankEnd {
  std::string path, host;
  int64_t rank = -1;           // -1: the dump names none (then `file` identifies it)
  int64_t process_id = -1;
  size_t file = 0;             // index in summary.json's files
  bool clean_exit = true;      // the dump ends as a normal exit leaves it (merge's rule)
  bool stats_record = true;    // wrote STATS
  bool truncated_last_line = false;
  int64_t last_event_ns = 0, last_alive_ns = 0;
  uint64_t steps_entered = 0;
  std::string last_step;
  int64_t last_step_start_ns = 0;
  bool last_step_open = false;
  std::vector<EndFrame> open;  // outermost first, per thread
  std::vector<EndCollectives> collectives;
  uint64_t pending_launches = 0;
  std::vector<EndLaunch> first_pending;
  // True when the dump stopped without a clean exit (no STATS record, or a cut last line).
  bool Killed() const { return !clean_exit; }
};

// The end states of summary.json's files (`path` names it in messages). Files of formats
// without STATS records (Kineto, nsys) count as exited normally. A summary.json written before
// end states existed has none: an error saying to re-run truffld-merge.
Result<std::vector<RankEnd>> ParseEndStates(std::string_view summary_json, const std::string& path);

}  // namespace truffld::diagnose
