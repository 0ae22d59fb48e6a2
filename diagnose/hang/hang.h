// Hang localisation: which rank a hung job waited for, and where it was.
//
// Ranks that share a communicator enter its collectives in the same order, so when a job
// hangs the ranks that reached collective N wait inside it for the one that never got there.
// From each rank's end state (end_states.h) this groups the ranks that share communicators,
// compares how many collectives (then steps) each entered, and names as culprit the ranks
// behind the others, with their open stack (step > operator > ...) and for how long it had
// been open when the job was killed; the others are the waiting ranks, blocked since their last
// record. Flight Recorder makes the same cross-rank comparison; unlike it, the culprit's own
// stack is known here.
//
// Groups: ranks joined by a communicator id that several ranks name (NCCL's payload); when every
// rank's ids are its own (pointers), the ranks with collectives of world size W on one host
// when each such host holds W of them (tensor parallelism), else all ranks with that W when
// they are W; ranks without collectives are compared by steps alone, all together.
// Status: complete (every process exited normally), killed (some dump stopped without a clean
// exit but nothing was open: stopped between steps), hang (some stopped with ranges open or
// launches never completed). Pure logic; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hang/end_states.h"

namespace truffld::diagnose {

enum class HangStatus { kComplete, kKilled, kHang };
const char* HangStatusName(HangStatus s) noexcept;  // "complete", "killed", "hang"

struct HangGroup {
  std::vector<size_t> members;   // indices into the end states
  std::string basis;             // how the members were found to share work, in words
  int64_t world_size = -1;
  std::vector<uint64_t> entered; // per member: collectives entered in the group's communicator(s)
  std::vector<uint64_t> steps;   // per member: steps entered
  std::vector<size_t> behind;    // members behind the others (culprits)
  std::string by;                // "collectives" or "steps": what showed them behind ("": none)
};

struct HangReport {
  HangStatus status = HangStatus::kComplete;
  int64_t job_end_ns = 0;        // the latest sign of life of any rank
  std::vector<HangGroup> groups; // the groups holding a stopped rank
  std::vector<size_t> culprits, waiting;  // indices into the end states
  std::string sentence;          // the finding in one sentence
  std::vector<std::string> rank_lines;    // per stopped rank: where it was
};

HangReport LocateHang(const std::vector<RankEnd>& ends);

// hang.json (schemas/hang.schema.json).
nlohmann::json HangJson(const std::vector<RankEnd>& ends, const HangReport& report);

// "rank 3", or "process 1234 on node1" for a dump that names no rank.
std::string RankLabel(const RankEnd& e);

// "step 4 > torch.nn.functional.linear > aten::mm": the open frames of the thread with the
// deepest stack, names shortened. "" when nothing is open.
std::string OpenStack(const RankEnd& e);

}  // namespace truffld::diagnose
