// What a process was doing when its dump stopped (FileSummary::end_state; the pass that fills
// it is merge/core/end_state.h, which says the rules). Plain data; times on the merged axis.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "truffld/merge/event.h"
#include "truffld/wire.h"

namespace truffld::merge {

struct OpenFrame {
  std::string name;    // as recorded (capped at 200 bytes)
  Layer layer = Layer::kOther;
  TimeNs start = 0;    // merged axis
  int64_t thread_id = kNone;
};

struct CollectiveProgress {
  std::string communicator;  // the payload's "comm", or "op:<family>" without one
  std::string op;            // the last collective's family, e.g. ncclAllReduce
  uint64_t entered = 0;      // collectives entered on this communicator
  int64_t bytes = kNone, world_size = kNone;  // of the last one, from its payload
  TimeNs last_start = 0, last_end = 0;        // merged axis; end = the file's end when open
  bool last_open = false;
};

struct PendingLaunch {
  std::string name;    // API family, e.g. cudaLaunchKernel
  TimeNs start = 0;    // merged axis
  int64_t thread_id = kNone;
  int32_t stream = -1;
};

struct FileEndState {
  // The dump ends as a process that exited normally leaves it: a raw dump (META first) closed
  // by STATS with a whole last line. Formats without STATS records (Kineto, nsys, the marker
  // dialect) count as clean unless their last line was cut.
  bool clean_exit = true;
  bool stats_record = false;        // the process wrote STATS
  bool truncated_last_line = false;
  TimeNs last_event = 0;            // the latest event end on the merged axis (0: no event)
  TimeNs last_device_end = 0;       // the latest device op end (0: none recorded)
  // The latest sign of life: last_event or the latest CLOCK record (the injector writes one
  // every TRUFFLD_CLOCK_SYNC_S, 60 s by default, even while the process is stuck).
  TimeNs last_alive = 0;
  uint64_t steps_entered = 0;       // step ranges (implicit steps not counted)
  std::string last_step;            // the latest-starting one's name ("" when none)
  TimeNs last_step_start = 0;
  bool last_step_open = false;
  std::vector<OpenFrame> open;      // ranges open at the end: by thread, outermost first
  std::vector<CollectiveProgress> collectives;  // by communicator, first entered first
  uint64_t pending_launches = 0;
  std::vector<PendingLaunch> first_pending;     // the earliest few (kMaxPendingListed)
  static constexpr size_t kMaxPendingListed = 8;
  static constexpr size_t kMaxOpenListed = 64;  // open frames kept (innermost dropped beyond)
};

}  // namespace truffld::merge
