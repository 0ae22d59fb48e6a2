// What each blamed operator, and each abnormal unit as a whole, cost its step: the what-if
// replay (replay.h) of the unit's (rank, step) with the blamed excess removed.
//
// A family's excess is spread over its instances in the unit by each instance's own excess
// against its peers (observed minus the expectation blame used), or by its observed cost when no
// instance row shows any; the replay removes it from the blamed metric (host or device time).
// impact_ns is the step time saved; absorbed_ns = excess - impact is what the step never paid
// (host time hidden by a busy device queue, a collective that waited for a late peer anyway).
// Device idle ((device idle), outside_time.h) is blamed once: when cutting its excess saves less
// than half of it (the work after it could not start before its launch) and a host family of
// the unit saves time, the idle is that family's effect (BlamedFamily::effect_of, the family
// that saves most) and is listed after every cause. When no blamed host family saves time, the
// candidate of `idle_causes` (IdleCauseCandidates, blame.h) whose cut saves most joins the blame
// as the cause, if it saves at least half of the idle's excess (else none does). The unit's
// impact is one replay of all its cuts together, so time both explain is counted once.
// Without operator detail (hand-built tables) nothing is replayed and impact stays NaN: the
// impact floor then falls back to the excess.
// Pure; thread-safety: reentrant.
#pragma once

#include <vector>

#include "peer/blame.h"
#include "peer/decision.h"
#include "peer/types.h"
#include "read/instances.h"

namespace truffld::diagnose {

// Whether what a step never paid of an excess is worth a word in a verdict sentence: at least 5%
// of that excess (impact + absorbed), not a few stray ns.
inline bool AbsorbedWorthSaying(double impact_ns, double absorbed_ns) {
  return absorbed_ns > 0 && absorbed_ns >= 0.05 * (impact_ns + absorbed_ns);
}

// Sets BlamedFamily::impact_ns / absorbed_ns of every blamed family and UnitVerdict::impact_ns /
// absorbed_ns of every unit with blame. `comm`: MatchCollectives' timings (may be empty).
void ReplayBlame(const InstanceTable& t, const std::vector<TestRow>& rows, const std::vector<CommTiming>& comm,
                 DecisionResult* d, std::vector<std::vector<BlamedFamily>>* blame,
                 const std::vector<std::vector<BlamedFamily>>& idle_causes = {});

}  // namespace truffld::diagnose
