// Cross-rank alignment: which units ran the same logical step, and how each collective (or
// pipeline send/recv pair) lined up across the ranks that took part.
//
// Units of one view are the same logical step when they name the same request set and overlap
// in time by at least half the shorter one (lockstep ranks of a tensor-parallel group, or the
// stages of one pipeline replica); at most one unit per rank joins a group. Collectives are
// matched inside a group by (operator, message bytes, occurrence in the unit) — send and recv
// share the key "p2p" — and then by device end: participants of one collective finish within a
// tolerance of each other, which separates two communicators that run the same operator at
// different times. A participant's wait is the time from its own entry (device start) to the
// last entry; the transfer is what remains. A rank that waited was a victim of the last one.
// Pure logic over InstanceTable; thread-safety: reentrant.
#pragma once

#include <vector>

#include "truffld/diagnose/instances.h"
#include "truffld/diagnose/peer_types.h"

namespace truffld::diagnose {

// Groups the table's units (both views, each view on its own) into logical steps.
UnitGroups GroupUnits(const InstanceTable& t);

// One CommTiming per instance (participants == 0 for instances that are not comm operators
// with device work). Needs t.detail; returns all-zero timings without it.
std::vector<CommTiming> MatchCollectives(const InstanceTable& t, const UnitGroups& groups);

// Whether a comm family is point-to-point (send/recv) rather than a collective.
bool IsPointToPoint(const std::string& family);

}  // namespace truffld::diagnose
