// Plain data shared by the peer-relative detector (diagnose/README.md, "How a verdict is
// reached"): which (rank, step, view) units did the same logical step, how collectives lined up
// across ranks, and one row per tested quantity with what its peers say it should have cost.
//
// An operator's cost depends on what its step computed, so every tested quantity is compared
// with peers that did the same work, from three sources:
//   kLayer  the same work signature in the same unit (other layers of a homogeneous model);
//   kTp     the same signature and occurrence in the same logical step on other ranks
//           (tensor-parallel peers: identical work by construction);
//   kTime   the same signature on the same rank in other steps of similar workload (scheduled
//           tokens, context, launched blocks, input bytes, requests), or a local log-log fit over
//           steps of different size when no step repeats the exact shape.
// Times are ns on the merged axis. Thread-safety: plain data.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "truffld/verdict.h"

namespace truffld::diagnose {

inline constexpr uint32_t kFamilyRow = 0xffffffffu;  // TestRow::instance of a family aggregate

// Logical steps: units (indices into InstanceTable::steps) of one view that ran the same step
// on different ranks (same request set, overlapping in time).
struct UnitGroups {
  std::vector<uint32_t> group;                 // per unit
  std::vector<std::vector<uint32_t>> members;  // per group, its units (one per rank)
};

// How one comm instance lined up with the same collective (or send/recv pair) on other ranks.
struct CommTiming {
  uint16_t participants = 0;  // 0: not a comm instance with device work; 1: unmatched
  int64_t arrival = 0;        // its device start (when this rank entered)
  int64_t last_arrival = 0;   // latest entry among the participants
  float wait_ns = 0;          // last_arrival - arrival: time spent waiting for others
  float transfer_ns = 0;      // end - last_arrival (matched), else its device time
  int64_t last_rank = -1;     // the participant that entered last (participants > 1)
  uint32_t match = 0;         // the matched collective's id, shared by its participants (0: unmatched)
};

// One tested quantity: an instance's metric, or (instance == kFamilyRow) the sum of a family's
// instances in the unit.
struct TestRow {
  uint32_t unit = 0;
  uint32_t instance = kFamilyRow;
  uint32_t family = 0;         // interned family (InstanceTable::strings)
  uint64_t slot = 0;           // instance rows: where in a layer and which layer (position and
                               // its occurrence in the unit), for the layer-peer residual model
  Metric metric = Metric::kHost;
  float observed = 0;          // ns
  std::array<float, kPeerSourceCount> expected{  // ns; NaN when the source had too few peers
      std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::quiet_NaN(),
      std::numeric_limits<float>::quiet_NaN()};
  std::array<uint16_t, kPeerSourceCount> peers{};  // peers (instances or steps) behind each expectation
  std::array<double, kPeerSourceCount> p{1, 1, 1};  // one-sided p-value per source (scoring)
  double p_value = 1;          // combined (scoring)
  // The expectation behind p_value (scoring): the largest expectation among the sources the
  // winning hypothesis needed, so ratios and excess times are never overstated.
  float effective_expected = std::numeric_limits<float>::quiet_NaN();
  PeerSource basis = PeerSource::kTp;
  bool shared_tp = false;      // TP peers share this cost by construction (a collective's transfer)
  bool group_cost = false;     // the whole TP group pays it together (kDetailGroupCost): no TP peers
  bool time_exact = false;     // the similar-steps expectation came from steps of the same shape
  bool context_known = false;  // the unit's step name carries its context length ([ctx:N])
  double p_group = 1;          // the TP peers' own cost against similar steps (scoring)
  bool unit_judged = false;    // its unit has a row with a TP or similar-steps expectation, so
                               // this row's layer peers alone may count (scoring)
  bool warmup = false;         // host cost that includes loading GPU code (warmup.h): not judged
  // A fitted similar-steps expectation (not time_exact): the robust scatter, in log units, of the
  // steps it was fitted on around the fitted line (1.4826 MAD); NaN when not fitted.
  float fit_scatter = std::numeric_limits<float>::quiet_NaN();
  bool Has(PeerSource s) const { return !std::isnan(expected[static_cast<int>(s)]); }
};

struct PeerOptions {
  int min_layer_peers = 2;      // other same-signature instances in the unit
  int time_neighbours = 10;     // similar steps used per expectation
  int min_time_neighbours = 3;  // fewer: the exact-shape comparison is unavailable
  int min_fit_neighbours = 6;   // local log-log fit over steps of other sizes
  double max_workload_distance = 0.7;  // summed |log| differences of the step workload
  // Similar steps exclude this many steps on each side (none in lanes too short to spare them).
  // Excluding more costs healthy steps their closest peers in context length (false alarms).
  int time_exclusion = 1;
  double floor_ns = 500;        // added to observed and expected before taking log ratios
  int threads = 1;              // workers for the expectations (each group or unit is written by one)
};

}  // namespace truffld::diagnose
