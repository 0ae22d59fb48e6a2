// What-if replay of one (rank, step): what the step would have taken without an anomaly.
//
// An operator that cost more than its peers did not necessarily make its step longer: host time
// spent while the device still had queued work is absorbed (the host ran ahead of a busy GPU), a
// collective that waited for a late peer would have waited anyway. The replay rebuilds the step's
// dependencies from its operators and re-times them with some costs cut:
//   * host work runs in time order on one timeline: cutting an operator's host time moves every
//     later host event earlier by that much ...
//   * ... until the host blocks on the device (an operator whose calls waited, InstanceDetail::
//     wait_ns): it then leaves when the awaited device work ends, so the saving shrinks to what
//     the device gained (nothing when the device queue was busy all along);
//   * device work runs in its observed order: work the device waited for (the device idled over
//     1 us before it, and it was launched at most 20 us before the device ran dry) moves with its
//     launch and may fill the idle gap before it; work that sat queued, or that another
//     dependency held (launched long before the device ran dry), moves only with the latest end
//     of the work before it, keeping its observed gap, and never before its launch; a CUDA
//     graph's nodes count as launched when their graph launch call began;
//   * a collective on a rank that did not enter it last ends no earlier than the last entry plus
//     its transfer: the others' entry, not this rank, bounded it (a slow transfer, which every
//     participant shares, can still be cut). The peers left the previous collective together
//     with this rank, so their entry moves as far as that collective's end moved (tensor-
//     parallel ranks run in lockstep between collectives).
//     When the late peer had the same anomaly in the same step (one fault seen on several
//     ranks: a node's contention, every rank's slow input copy), the what-if removes it from
//     the peer too: the peer's entry moves by what its own replay with the same cuts gives
//     (ReplayItem::peer_entry_shift, set by impact.h). This rank keeps its observed wait in
//     the collective, so the saving is at most what its own work moved (conservative).
//   * the device's idle stretch ((device idle)) is an item only when cut: what remains of it
//     holds the device, and the work after it follows as queued work does (never before its
//     launch plus the shortest launch latency);
//   * the time since the previous step (outside_time.h) is host time before the step, which
//     every peer paid as well (one scheduler drives them all): cutting it moves the peers' entry
//     into the step's first collective by as much; the
//     previous step's device work that ran past that step's host end stays where it was, so a
//     shorter pause gains nothing while the device was still busy.
// The step completes at the later of its host range's end and its device work's end; the impact
// of a set of cuts is the observed completion minus the replayed one (0 when the cuts were
// absorbed). With no cuts the replay reproduces the observed times exactly.
// Times are ns on the merged axis. Pure; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "peer/types.h"
#include "read/instances.h"

namespace truffld::diagnose {

inline constexpr int64_t kNoPeerBound = std::numeric_limits<int64_t>::min();

// One operator as the replay sees it.
struct ReplayItem {
  int64_t host_start = 0, host_end = 0;  // its host range
  bool has_device = false;               // its own calls launched device work:
  int64_t launch = 0;                    //   when (host clock), in [host_start, device_start]
  int64_t device_start = 0, device_end = 0;
  int64_t wait_ns = 0;                   // its calls blocked this long on the device
  // A collective another rank entered last: when that rank entered. Its end is then no earlier
  // than that entry plus its transfer (device_end - peer_entry, less any device cut).
  int64_t peer_entry = kNoPeerBound;
  // How much earlier (ns, >= 0) that peer would have entered without the same anomaly, by its
  // own replay; the larger of this and the lockstep shift of the last collective moves the entry.
  double peer_entry_shift = 0;
  bool collective = false;               // a collective matched with other ranks' (they leave it
                                         // together: its replayed end moves their later entries)
  bool group_cost = false;               // its host time was paid by every TP peer too (the time
                                         // between steps): cutting it moves their entries as well
  // The device's longest idle stretch of the step ((device idle), kDetailIdle), [device_start,
  // device_end): absent from the replay unless cut (its cost, host or device, shortens it). Cut,
  // it holds the device as an unseen dependency would for what remains, so the work after it
  // moves earlier as far as its launches allow: idle that waited for a late launch saves nothing.
  bool idle = false;
  // A CUDA-graph node group: when its graph launch call began (InstanceDetail::graph_launch;
  // 0 unknown). BuildStepGraph sets `launch` from it.
  int64_t graph_launch = 0;
};

struct StepGraph {
  int64_t start = 0, host_end = 0;  // the step's host range
  std::vector<ReplayItem> items;
};

// A cost removed from one item: host time (ns) and/or device time (ns), both >= 0.
struct ReplayCut {
  uint32_t item = 0;
  double host_ns = 0, device_ns = 0;
};

// The step's completion: the later of its host end and its items' last device end.
int64_t ObservedCompletion(const StepGraph& g);
// The completion replayed with `cuts` applied (no cuts: ObservedCompletion).
int64_t ReplayedCompletion(const StepGraph& g, const std::vector<ReplayCut>& cuts);
// ObservedCompletion - ReplayedCompletion, >= 0.
double ReplayImpactNs(const StepGraph& g, const std::vector<ReplayCut>& cuts);
// Per item, how much earlier (ns, >= 0) its device work starts in the replay with `cuts`; 0 for
// items without device work.
std::vector<double> ReplayedDeviceShifts(const StepGraph& g, const std::vector<ReplayCut>& cuts);

// The units of `unit`'s (rank, step): itself and its other view's unit (steps are sorted by
// rank, step, view), in table order.
std::vector<uint32_t> StepUnits(const InstanceTable& t, uint32_t unit);

// The replay graph of a unit's (rank, step): the operators with detail of both views of that
// rank and step (a comm operator seen in both once). `item_of` (may be null) is sized to the
// table (UINT32_MAX) when it is not already, and receives, for each instance of those units,
// its item index in the graph or UINT32_MAX; entries of other instances are left as they were,
// so one buffer serves many graphs without a pass over the table each. Needs t.detail (else
// returns an empty graph); `comm` (MatchCollectives) sets each collective's peer bound, and may
// be empty.
StepGraph BuildStepGraph(const InstanceTable& t, uint32_t unit, const std::vector<CommTiming>& comm,
                         std::vector<uint32_t>* item_of);

}  // namespace truffld::diagnose
