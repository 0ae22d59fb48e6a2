// Private to the Kineto importer: ranges that end just after their parent because the export
// rounded times to whole microseconds (see rounding.cc).
// Thread-safety: pure function over the caller's events.
#pragma once

#include <cstdint>
#include <vector>

#include "truffld/merge/event.h"

namespace truffld::merge::kineto {

// The most a child range may end after its parent and still be taken for its child (ns).
constexpr TimeNs kRoundingSlackNs = 1000;

// For host ranges (EventKind::kRange) of one thread whose four times (start and end of both)
// are whole microseconds: a range that starts inside another and ends at most
// kRoundingSlackNs after it ends at its end instead, so that it nests. Returns how many ends
// moved. Times are the importer's (ns, before baseTimeNanoseconds is added).
uint64_t ClampRoundedEnds(std::vector<Event>* events);

}  // namespace truffld::merge::kineto
