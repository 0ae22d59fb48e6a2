// Cross-rank alignment: which units ran the same logical step, and how each collective (or
// pipeline send/recv pair) lined up across the ranks that took part.
//
// Units of one view are the same logical step when they name the same request set and are the
// same occurrence of that set on their ranks (the j-th step with this batch): lockstep ranks of
// a tensor-parallel group, or the stages of one pipeline replica, which run the same steps in
// the same order offset in time. Data-parallel replicas serve other requests and stay apart. Collectives are
// matched inside a group by (operator, message bytes, occurrence in the unit) — send and recv
// share the key "p2p" — and then by device end: participants of one collective finish within a
// tolerance of each other, which separates two communicators that run the same operator at
// different times. A participant's wait is the time from its own entry (device start) to the
// last entry; the transfer is what remains. A rank that waited was a victim of the last one.
// Pure logic over InstanceTable; thread-safety: reentrant.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "read/instances.h"
#include "peer/types.h"

namespace truffld::diagnose {

// Groups the table's units (both views, each view on its own) into logical steps.
UnitGroups GroupUnits(const InstanceTable& t);

// One CommTiming per instance (participants == 0 for instances that are not comm operators
// with device work). Needs t.detail; returns all-zero timings without it.
std::vector<CommTiming> MatchCollectives(const InstanceTable& t, const UnitGroups& groups);

// Residual clock offset of each host on the merged axis, relative to one of them, estimated
// from pipeline send/recv pairs (whose two sides end together): the median difference of their
// ends per host pair. Hosts without such evidence are absent (treated as offset 0).
std::map<std::string, int64_t> EstimateHostOffsets(const InstanceTable& t, const UnitGroups& groups);

}  // namespace truffld::diagnose
