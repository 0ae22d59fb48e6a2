// Peer expectations: for every tested quantity, what peers that did the same work say it should
// have cost (see types.h for the three sources).
//
// Tested quantities (TestRow): each operator instance's own host time (traced ranges) and own
// device time (instances that launched device work; a matched collective's transfer instead),
// and, for every family with two or more instances in a unit, the sum over them ("family
// rows"), which exposes a small slowdown spread over all layers that no single noisy instance
// shows. Expectations are medians of peers; for steps whose exact shapes never repeat (prefill
// steps of varying token counts) the similar-steps source fits log(cost) against log(size) over
// the nearest steps of other sizes (Theil-Sen slope, clamped to [0, 1.5]).
// Pure logic; thread-safety: reentrant.
#pragma once

#include <vector>

#include "read/instances.h"
#include "peer/types.h"

namespace truffld::diagnose {

// Workload of one unit for the similar-steps source: log1p of tokens, context (tags; NaN when
// absent), launched grid blocks, host-to-device bytes and named requests, and a regime key
// (phase, graph/eager, device detail) that must match exactly.
struct UnitWorkload {
  std::array<double, 5> v{};
  uint32_t regime = 0;
  int64_t step_index = 0;  // nearby steps are preferred: contexts grow and clocks drift slowly
};
// Per unit; both views of a (rank, step) take the vertical unit's workload when it exists.
std::vector<UnitWorkload> ComputeWorkloads(const InstanceTable& t);
// Sum of |differences| over the components both units know, plus 0.01 per step between them;
// +inf when the regimes differ.
double WorkloadDistance(const UnitWorkload& a, const UnitWorkload& b);

// What a unit cost the engine, in ns: its duration, plus, for a vertical unit, the time between
// steps before it that its (between steps) pseudo-instance holds (the engine had work pending
// across the gap; read/outside_time.h). An idle engine's wait for requests is not in it.
double StepCycleNs(const InstanceTable& t, uint32_t u);

// Per unit, in ns: its StepCycleNs, and the median of that over its similar steps (the same
// nearest units the similar-steps source reads; NaN with fewer than min_time_neighbours of
// them, or when no test row was built).
struct StepCycles {
  std::vector<double> ns, similar_ns;
};

// All test rows of the table, expectations filled. Needs t.detail (no rows without it). When
// `cycles` is given it receives every unit's StepCycles.
std::vector<TestRow> BuildTests(const InstanceTable& t, const UnitGroups& groups,
                                const std::vector<CommTiming>& comm, const PeerOptions& options,
                                StepCycles* cycles = nullptr);

// Observed value of an instance for a metric, or a negative value when the metric does not
// apply (a replayed instance has no host time; an instance without device work no device time).
double MetricValue(const InstanceTable& t, const std::vector<CommTiming>& comm, uint32_t i, Metric m);

}  // namespace truffld::diagnose
