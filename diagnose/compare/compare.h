// What changed between two runs (truffld-diagnose --compare BASELINE): per operator family,
// view and phase, the cost change at equal workload, with an interval and whether it is
// significant; the change of step time and the families that explain it; kernels that
// appeared or disappeared.
//
// Workload is the step's scheduled tokens (else its batch, else 1), its requests and its
// context. For each (view, phase, family) a step's cost (device time when the family runs
// kernels in the baseline, else its own host time without the time blocked on the device queue)
// is compared with the median cost of the 5 most similar baseline steps of equal workload (tokens
// and requests within 2%, context within 25%); every step of either run is then a log-ratio of
// its cost to that expectation (a baseline step leaves itself out). The change is the difference
// of the two runs' median log-ratios (so the baseline's own scatter is accounted for), its 95%
// interval from a deterministic bootstrap. Target steps with no baseline step of equal workload
// are left out (no extrapolation) and counted. A change is significant when its interval
// excludes no change; it is at least `min_change` (default 5%: an operator does not act on a 1%
// shift); its Mann-Whitney p-value passes Benjamini-Hochberg at 5% over every comparison made
// (hundreds of families are compared at once); and, for a family, it is worth at least
// min_step_share (0.5%) of its steps' mean time. A family or step time with fewer than
// kMinCompareSteps steps of equal workload in either run is insufficient evidence.
// Pure logic over InstanceTables; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "read/instances.h"

namespace truffld::diagnose {

struct CompareOptions {
  double min_change = 0.05;  // smallest |ratio - 1| called significant
  double false_discovery = 0.05;
  double min_step_share = 0.005;  // a family's change must also move its step time this much (0.5%)  // Benjamini-Hochberg level over all comparisons of a run pair
  int bootstrap = 400;       // resamples for the interval
  uint64_t seed = 1;
};

struct FamilyChange {
  View view = View::kVertical;
  std::string phase, family, metric;  // metric: "device" or "host"
  size_t steps = 0, baseline_steps = 0, outside_range = 0;
  double ratio = 1, ci_low = 1, ci_high = 1;  // target / baseline cost at equal workload
  double delta_ns_per_step = 0;  // mean (observed - baseline line) over the target's steps
  double share_of_step_change = 0;  // delta over the step time's change of its view and phase
  bool significant = false, insufficient = false;
};

struct StepTimeChange {
  View view = View::kVertical;
  std::string phase;
  size_t steps = 0, baseline_steps = 0;
  double ratio = 1, ci_low = 1, ci_high = 1;
  double delta_ns_per_step = 0;
  bool significant = false, insufficient = false;
};

struct CompareResult {
  std::vector<FamilyChange> families;  // significant first, by |delta| then name
  std::vector<StepTimeChange> step_time;
  std::vector<std::string> kernels_appeared, kernels_disappeared;
  std::string sentence;  // the change in one sentence
};

inline constexpr size_t kMinCompareSteps = 8;

CompareResult CompareRuns(const InstanceTable& target, const InstanceTable& baseline, const CompareOptions& o = {});

// compare.json (schemas/compare.schema.json).
nlohmann::json CompareJson(const CompareResult& r, const std::string& target, const std::string& baseline,
                           const CompareOptions& o);

// The stdout table: step time changes, then significant family changes.
std::string FormatCompare(const CompareResult& r);

}  // namespace truffld::diagnose
