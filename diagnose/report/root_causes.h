// Root causes: the blame of every abnormal unit grouped into the few findings an operator acts
// on, for the report's headline. A finding is one family blamed for one kind of cost in one
// view (e.g. "aten::mm, device time, vertical"), with its fault class ("slow GPU work", "host
// stall", "slow copy", "scheduling gap", "slow link"), the ranks and steps it touched, and the
// step time it cost: the sum of its blamed operators' impact (the step time saved without the
// excess, what-if replay), or their excess where a step could not be replayed. Blame that
// saves less than the impact floor of its step is left out (no operator acts on it), except a
// unit's largest, since the unit as a whole passed the floor.
// Stragglers (the rank the others waited for) are findings of their own when nothing blamed on
// the rank in that step explains them (an explained one is its operator's finding).
// Pure functions over caller-owned data; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/html_report.h"
#include "stage2/fusion.h"

namespace truffld::diagnose {

enum class FaultClass : uint8_t {
  kSlowGpuWork,     // device time of operators or kernels above their peers'
  kHostStall,       // host (CPU) time inside operators above their peers'
  kHostOutside,     // host time outside every operator range inside the step
  kSchedulingGap,   // the engine's time between steps, the device idle
  kSlowCopy,        // host-device copies, or CUDA calls issued directly under the step
  kSlowLink,        // communication's device time above its peers' (transfer, not waiting)
  kStragglerRank,   // the rank the others waited for in collectives
  kDeviceStarvation,  // the device idled inside the step, waiting on a dependency, not a launch
};

const char* FaultClassName(FaultClass c) noexcept;  // "slow GPU work", ...
const char* FaultClassHint(FaultClass c) noexcept;  // one line: what to check first

// The class of one blamed family. `layer` is FaultyOperator::layer ("frontend_op", "comm", ...).
FaultClass ClassifyBlame(View view, const std::string& family, const std::string& layer, Metric metric);

// What a blamed operator cost its step (ns): its replayed impact, else its excess.
double BlameCostNs(const FaultyOperator& f);

// Whether the blamed operator saved at least `min_share` of its step (always true at 0).
bool IsMaterialBlame(const FaultyOperator& f, const StepEvidence& e, double min_share);

// The blame of `s` worth listing: its largest always (the unit passed the floor as a whole),
// the others when material. Pointers into s.faulty, in its order.
std::vector<const FaultyOperator*> ListedBlame(const StepDiagnosis& s, double min_share);

// What an abnormal unit cost its step (ns): its replayed impact, else its blame's summed excess.
double UnitCostNs(const StepDiagnosis& s);

struct RootCause {
  FaultClass fault_class = FaultClass::kSlowGpuWork;
  View view = View::kVertical;
  std::string family;             // "" for a straggler rank
  std::string metric;             // "host" | "device" | "" (straggler, legacy)
  std::vector<int64_t> ranks;     // sorted; -1: unknown rank
  std::vector<int> rank_units;    // units per entry of `ranks`
  int64_t first_step = 0, last_step = 0;
  int64_t start_ns = 0, end_ns = 0;  // the span of its steps on the merged axis (0: unknown)
  int units = 0;                  // abnormal units (straggler: steps) it explains
  double cost_ns = 0;             // step time it cost, summed over its units
  size_t top_unit = SIZE_MAX;     // diagnosis index of its costliest unit (SIZE_MAX: none)
  double top_cost_ns = 0;         // what it cost in that unit
  std::string cause;              // straggler: what held the rank, when known
};

// Findings of the abnormal units of `d` (peer mode: by cost; legacy: by summed score, cost 0),
// then one per straggler rank of `run` over its unexplained steps, highest cost first.
std::vector<RootCause> GroupRootCauses(const std::vector<StepDiagnosis>& d, const ReportRunData& run);

// The step time the abnormal units cost the run: per (rank, step) the larger of its views'
// impact (the two views of one step overlap), summed (ns). `total_ns` gets the summed duration
// of every rank-step judged or not (the larger view's), the base for a share.
double RunCostNs(const std::vector<StepDiagnosis>& d, double* total_ns);

}  // namespace truffld::diagnose
