// Root causes of a run's abnormal units (root_causes.h).
#include "report/root_causes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "read/instances.h"

namespace truffld::diagnose {

const char* FaultClassName(FaultClass c) noexcept {
  switch (c) {
    case FaultClass::kSlowGpuWork: return "slow GPU work";
    case FaultClass::kHostStall: return "host stall in an operator";
    case FaultClass::kHostOutside: return "host stall outside operators";
    case FaultClass::kSchedulingGap: return "scheduling gap";
    case FaultClass::kSlowCopy: return "slow copy";
    case FaultClass::kSlowLink: return "slow link";
    case FaultClass::kStragglerRank: return "straggler rank";
    case FaultClass::kDeviceStarvation: return "device starvation";
  }
  return "unknown";
}

const char* FaultClassHint(FaultClass c) noexcept {
  switch (c) {
    case FaultClass::kSlowGpuWork:
      return "the GPU ran this work slower than its peers: check clocks and throttling (nvidia-smi -q -d "
             "PERFORMANCE), ECC and XID errors, and other processes on the GPU";
    case FaultClass::kHostStall:
      return "the CPU took longer to issue this operator: check CPU contention and pinning, frequency scaling, "
             "and Python-side work (logging, GC) in the operator";
    case FaultClass::kHostOutside:
      return "host time no operator covers (Python, garbage collection, input preparation, locks): check CPU "
             "load on the node and profile the host process (py-spy)";
    case FaultClass::kSchedulingGap:
      return "the engine took longer between steps with the GPU idle: check the scheduler and batch "
             "preparation, request admission, CPU load, and garbage collection";
    case FaultClass::kSlowCopy:
      return "host-device copies were slower: check pinned memory, PCIe/NVLink bandwidth and topology "
             "(nvidia-smi topo -m), and other traffic on the link";
    case FaultClass::kSlowLink:
      return "communication took longer to transfer than on its peers: check NVLink/InfiniBand link health "
             "and errors, NCCL settings, and traffic from other jobs";
    case FaultClass::kStragglerRank:
      return "the other ranks waited for this rank in collectives: look at its own findings (host, GPU) and "
             "at its node";
    case FaultClass::kDeviceStarvation:
      return "the GPU sat idle inside the step with work already queued: check stream waits and events, "
             "synchronisations between streams, and host-side waits before the next launch";
  }
  return "";
}

FaultClass ClassifyBlame(View view, const std::string& family, const std::string& layer, Metric metric) {
  if (family == kBetweenStepsFamily) return FaultClass::kSchedulingGap;
  if (family == kHostOutsideFamily) return FaultClass::kHostOutside;
  if (family == kDeviceIdleFamily) return FaultClass::kDeviceStarvation;
  if (family == kStepCallsFamily || layer == "memcpy") return FaultClass::kSlowCopy;
  const bool copy = family.find("Memcpy") != std::string::npos || family.find("memcpy") != std::string::npos ||
                    family.find("copy_") != std::string::npos;
  if (metric == Metric::kHost) return FaultClass::kHostStall;
  if (copy) return FaultClass::kSlowCopy;
  if (view == View::kHorizontal || layer == "comm") return FaultClass::kSlowLink;
  return FaultClass::kSlowGpuWork;
}

double BlameCostNs(const FaultyOperator& f) {
  if (!f.cost) return 0;
  return std::isfinite(f.cost->impact_ns) ? f.cost->impact_ns : f.cost->excess_ns;
}

bool IsMaterialBlame(const FaultyOperator& f, const StepEvidence& e, double min_share) {
  if (min_share <= 0 || !f.cost) return true;
  const double step = static_cast<double>(e.step_duration_ns > 0 ? e.step_duration_ns : e.end_ns - e.start_ns);
  return step <= 0 || BlameCostNs(f) >= min_share * step;
}

std::vector<const FaultyOperator*> ListedBlame(const StepDiagnosis& s, double min_share) {
  std::vector<const FaultyOperator*> listed;
  for (const FaultyOperator& f : s.faulty) {
    if (listed.empty() || IsMaterialBlame(f, s.evidence, min_share)) listed.push_back(&f);
  }
  return listed;
}

double UnitCostNs(const StepDiagnosis& s) {
  if (s.evidence.peer && std::isfinite(s.evidence.peer->impact_ns)) return s.evidence.peer->impact_ns;
  double excess = 0;
  for (const FaultyOperator& f : s.faulty)
    if (CostOrNone(f.cost).effect_of.empty()) excess += CostOrNone(f.cost).excess_ns;
  return excess;
}

namespace {

void AddUnit(RootCause* c, const StepDiagnosis& s, double cost) {
  const StepEvidence& e = s.evidence;
  const int64_t rank = e.rank.value_or(-1);
  const auto at = std::lower_bound(c->ranks.begin(), c->ranks.end(), rank);
  const size_t i = static_cast<size_t>(at - c->ranks.begin());
  if (at == c->ranks.end() || *at != rank) {
    c->ranks.insert(at, rank);
    c->rank_units.insert(c->rank_units.begin() + static_cast<std::ptrdiff_t>(i), 0);
  }
  ++c->rank_units[i];
  if (c->units == 0 || e.step_index < c->first_step) c->first_step = e.step_index;
  if (c->units == 0 || e.step_index > c->last_step) c->last_step = e.step_index;
  if (e.start_ns > 0 && (c->start_ns == 0 || e.start_ns < c->start_ns)) c->start_ns = e.start_ns;
  c->end_ns = std::max(c->end_ns, e.end_ns);
  ++c->units;
  c->cost_ns += cost;
}

}  // namespace

std::vector<RootCause> GroupRootCauses(const std::vector<StepDiagnosis>& d, const ReportRunData& run) {
  std::map<std::tuple<int, int, std::string, std::string>, RootCause> groups;
  for (size_t u = 0; u < d.size(); ++u) {
    const StepDiagnosis& s = d[u];
    if (s.label != Verdict::kAbnormal) continue;
    for (const FaultyOperator* op : ListedBlame(s, run.min_impact_share)) {
      const FaultyOperator& f = *op;
      if (!CostOrNone(f.cost).effect_of.empty()) continue;  // its cost is its cause's
      const Metric metric = f.cost ? f.cost->metric : Metric::kDevice;
      const FaultClass fc = ClassifyBlame(s.evidence.view, f.family, f.layer, metric);
      const std::string metric_name = f.cost ? MetricName(metric) : "";
      const auto key = std::make_tuple(static_cast<int>(fc), ViewIndex(s.evidence.view), f.family, metric_name);
      RootCause& c = groups[key];
      if (c.units == 0) {
        c.fault_class = fc;
        c.view = s.evidence.view;
        c.family = f.family;
        c.metric = metric_name;
      }
      const double cost = BlameCostNs(f);
      AddUnit(&c, s, cost);
      if (c.units == 1 || cost > c.top_cost_ns) {
        c.top_cost_ns = cost;
        c.top_unit = u;
      }
    }
  }
  std::vector<RootCause> out;
  for (auto& [key, c] : groups) out.push_back(std::move(c));
  std::map<int64_t, RootCause> by_rank;
  for (const ReportRunData::Straggler& s : run.stragglers) {
    if (s.explained) continue;  // its own operator finding above carries it
    RootCause& c = by_rank[s.rank];
    if (c.units == 0) {
      c.fault_class = FaultClass::kStragglerRank;
      c.view = View::kHorizontal;
      c.ranks = {s.rank};
      c.rank_units = {0};
      c.first_step = c.last_step = s.step_index;
      c.cause = s.cause;
    }
    c.first_step = std::min(c.first_step, s.step_index);
    c.last_step = std::max(c.last_step, s.step_index);
    ++c.units;
    ++c.rank_units[0];
    c.cost_ns += s.caused_ns;
  }
  for (auto& [rank, c] : by_rank) out.push_back(std::move(c));
  std::stable_sort(out.begin(), out.end(), [](const RootCause& a, const RootCause& b) {
    return a.cost_ns != b.cost_ns ? a.cost_ns > b.cost_ns : a.units > b.units;
  });
  return out;
}

double RunCostNs(const std::vector<StepDiagnosis>& d, double* total_ns) {
  std::map<std::pair<int64_t, int64_t>, std::pair<double, double>> steps;  // (rank, step) -> (cost, duration)
  for (const StepDiagnosis& s : d) {
    const StepEvidence& e = s.evidence;
    auto& [cost, duration] = steps[{e.rank.value_or(-1), e.step_index}];
    duration = std::max(duration, static_cast<double>(e.step_duration_ns));
    if (s.label != Verdict::kAbnormal || !e.peer) continue;
    cost = std::max(cost, UnitCostNs(s));
  }
  double sum = 0, total = 0;
  for (const auto& [key, v] : steps) {
    sum += v.first;
    total += v.second;
  }
  if (total_ns) *total_ns = total;
  return sum;
}

}  // namespace truffld::diagnose
