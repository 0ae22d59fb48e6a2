// Stragglers: in a logical step, which rank made the others wait inside collectives, by how
// much, and how long each rank waited.
//
// For every matched collective (alignment.h) the delay the last rank caused is the gap between
// its entry and the previous participant's entry: had it entered with the second-to-last, the
// collective could have started that much earlier. A unit's waiting time is the sum of its
// waits over the step's collectives; the rank it waited on is the last entrant that accounts
// for most of that time. Ranks that only waited are victims: their horizontal view is judged
// on transfer times, which exclude the wait, so they are not reported as faulty.
// Pure; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <vector>

#include "read/instances.h"
#include "peer/types.h"

namespace truffld::diagnose {

struct UnitWait {
  double waited_ns = 0;        // summed wait over the unit's matched collectives
  int64_t waiting_on = -1;     // rank behind most of that wait (-1: none)
  double waiting_on_ns = 0;    // the part of waited_ns spent on that rank
  int collectives = 0;         // matched collectives of the unit
};

struct StragglerRow {
  uint32_t group = 0;          // logical step (UnitGroups index)
  int64_t step_index = 0;      // step index on the straggler's rank
  int64_t rank = -1;           // the straggler
  double caused_ns = 0;        // delay it caused: summed entry minus the previous entrant's (host
                               // entries: the largest such gap, as a late host stays late)
  int last_in = 0;             // collectives it entered last
  int collectives = 0;         // matched collectives in the step (one per participant set)
  double step_ns = 0;          // the straggler's step duration
  // Entries are the host's calls (the comm ranges' starts): a logical step outside the sampled
  // device windows, whose collectives have no device times. Such a row sees a rank whose host
  // was late, not one whose device was.
  bool host_entries = false;
};

// A rank that made its group wait in most logical steps: how the run behaves, not a fault of
// one step. The per-step test above cannot see it (it compares a step with the run's typical
// delay, which a rank that is always last sets itself).
struct PersistentStraggler {
  int64_t rank = -1;
  int steps = 0;                 // logical steps it was the straggler of (delay >= min_share)
  int logical_steps = 0;         // logical steps with matched collectives
  double typical_caused_ns = 0;  // median delay it caused over those steps
  double typical_share = 0;      // median of that delay / its step
  double caused_ns = 0;          // summed over those steps: what the group waited for it
};

struct StragglerResult {
  std::vector<UnitWait> waits;          // per unit (horizontal units only are non-zero)
  std::vector<StragglerRow> stragglers;  // one per logical step whose delay reaches min_share
  std::vector<PersistentStraggler> persistent;  // at most one per rank, by rank
};

// A logical step's straggler is reported when the delay it caused is at least `min_share` of its
// step, at least `unusual` times the run's median caused delay (someone always enters last), and
// it entered at least half of the step's collectives last. Logical steps without device detail
// (every unit outside the sampled device windows) are judged on their host entries
// (StragglerRow::host_entries), against the median of such steps. A rank that meets the first and last
// of these in at least half of the logical steps (and at least 3) is a persistent straggler.
StragglerResult FindStragglers(const InstanceTable& t, const UnitGroups& groups,
                               const std::vector<CommTiming>& comm, double min_share = 0.02,
                               double unusual = 3.0);

}  // namespace truffld::diagnose
