// Private to the Nsight Systems importer: the pure parts of the mapping (no SQLite here).
//
// nsys serialises process and thread ids into one 64-bit "global id"; CUPTI memcpy kinds and
// NVTX event types arrive as enum numbers. These functions turn them into the event model's
// terms so they can be unit-tested on plain integers.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "truffld/merge/event.h"

namespace truffld::merge::nsys {

// globalTid / globalPid layout: bits 24..47 hold the OS pid, bits 0..23 the OS tid (0 in a
// globalPid); the bits above 48 name the host/VM and are not part of either id.
inline int64_t PidOf(int64_t global_id) { return (global_id >> 24) & 0xFFFFFF; }
inline int64_t TidOf(int64_t global_id) { return global_id & 0xFFFFFF; }

// CUPTI memcpy kind number -> contract spelling ("HtoD", ...); "" for unknown kinds.
std::string_view CopyKindName(int64_t cupti_kind);

// What an NVTX_EVENTS row is, from its eventType.
enum class NvtxRow {
  kPushPop,       // 59: a push/pop range (end NULL when never popped)
  kStartEnd,      // 60: a start/end range (may end on another thread)
  kMark,          // 34: an instant marker
  kDomainCreate,  // 75: names domainId
  kOther,         // categories (33), thread names (39), domain destroy (76), payload schemas...
};
NvtxRow ClassifyNvtxRow(int64_t event_type);
// Stable stats key for an NVTX row the importer does not turn into an event.
Problem NvtxSkipKey(int64_t event_type);

// The MPI NVTX wrappers name their thread "MPI Rank <n>"; returns n when `text` is that.
std::optional<int64_t> MpiRankFromThreadName(std::string_view text);

// nsys records some runtime calls twice with one correlation id: the public entry point and,
// nested inside it on the same thread, its versioned alias (cudaMalloc / cudaMalloc_v3020).
// Keeps the outermost call of each such group, drops the nested aliases and counts them under
// Problem::kNsysSkippedNestedApiAlias. Returns how many were dropped.
size_t DropNestedApiAliases(TraceFile* tf);

// File-level finishing once every table is read: drops nested API aliases (above), shifts all times by the session start (UTC ns,
// when known; otherwise times stay session-relative and Problem::kNsysRelativeTimes is counted),
// picks the main process (most runtime calls), gives device rows without globalPid the process
// of their launching call (same correlation id) or the main one, sets the rank from the main
// process's "MPI Rank n" thread name, and adds per-kind counts to the stats.
void FinishFile(TraceFile* tf, std::optional<int64_t> session_start_utc_ns,
                const std::unordered_map<int64_t, int64_t>& mpi_rank_by_pid);

}  // namespace truffld::merge::nsys
