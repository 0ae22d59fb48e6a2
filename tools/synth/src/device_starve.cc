// device_starve (faults.h): the compute stream waits on an event between two eager operators
// while the host keeps launching, so the GPU idles inside the step with work already queued (a
// cudaStreamWaitEvent on work another thread or process finishes late). The step pays the wait
// when the device, not the host, bounds it; the counterfactual decides the label (faults.h).
#include <algorithm>

#include "sim_rank.h"

namespace truffld::synth {

void Simulator::Rank::PlanStarve(const std::vector<size_t>& bounds, int64_t nominal_device_ns, const FaultBook& faults) {
  starve_op = -1;
  double where = 0;
  int f = -1;
  const int64_t d = faults.PlannedGap(FaultClass::kDeviceStarve, rank, nominal_device_ns, &where, &f);
  if (d <= 0 || bounds.empty()) return;
  const size_t k = std::min(bounds.size() - 1, static_cast<size_t>(where * static_cast<double>(bounds.size())));
  starve_op = static_cast<int64_t>(bounds[k]);
  starve_ns = d;
  starve_fault = f;
}

void Simulator::Rank::StarveBefore(size_t op, FaultBook* faults) {
  if (starve_op != static_cast<int64_t>(op)) return;
  // The stream runs nothing until the event fires: from when it ran dry (or now, if the host
  // is behind it) for the wait's length. The host does not wait; its launches queue behind.
  const int64_t from = std::max(gpu_t[0], host_t);
  gpu_t[0] = from + starve_ns;
  faults->SetWindow(starve_fault, from, gpu_t[0]);
  faults->Hit(rank, starve_fault, faults->device_idle_family(), false);
  starve_op = -1;
}

}  // namespace truffld::synth
