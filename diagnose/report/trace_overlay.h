// The diagnosis as a track on truffld-merge's trace.json (Perfetto, chrome://tracing).
//
// BuildTraceOverlay turns the verdicts into what a trace viewer shows beside the operators: a
// "truffld diagnosis" process with, per (rank, view), a track of unit slices (one per abnormal
// unit, spanning its step, named by its label, with the evidence sentence, excess time and the
// faulty operators' observed / expected / excess µs in args; insufficient_evidence units as a
// muted "insufficient evidence" slice, normal units not at all) and a track of faulty-operator
// markers (one slice per instance of a blamed family in the unit, at the instance's own times,
// the longest kMaxMarkersPerFamily of each family). Each marker names its operator slice in
// the merge trace (OperatorTarget: the same start and duration on the merged axis, the family
// as the slice's name, the rank as its pid), which AnnotateTrace (trace_annotate.h) links by a
// flow arrow. Tracks whose slices would cross are split into lanes ("(overlap k)") so every
// track nests, as Perfetto requires. Times are ns on the merged axis; AnnotateTrace converts
// them to trace.json's microseconds since its otherData.time_origin_ns.
// Pure: no files. Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stage2/fusion.h"
#include "read/instances.h"

namespace truffld::diagnose {

// Markers per (unit, blamed family): the longest instances first.
constexpr size_t kMaxMarkersPerFamily = 16;

struct OverlayTrack {
  std::string name;  // "rank 3 vertical", "rank 3 vertical: faulty operators (overlap 1)"
};

// One operator slice of the merge trace a marker points at.
struct OperatorTarget {
  int64_t start_ns = 0, end_ns = 0;  // merged axis: the slice's ts and ts + dur
  std::string family;                // the slice's name in trace.json
  std::optional<int64_t> rank;       // its pid (no rank: any pid)
};

struct OverlaySlice {
  int64_t start_ns = 0, end_ns = 0;  // merged axis
  uint32_t track = 0;                // index into TraceOverlay::tracks
  std::string name;
  std::string cname;                 // Chrome colour name ("" none; "grey" for muted units)
  nlohmann::json args = nlohmann::json::object();
  bool marker = false;               // a faulty-operator marker (else a unit)
  bool outside = false;              // its instance is time no operator covers (no slice to point at)
  int32_t target = -1;               // markers: index into TraceOverlay::targets (-1: a
                                     // CUDA-graph replay, no operator slice of its own)
};

// What the step slices of the merge trace get: the verdict of each of the step's views.
struct StepVerdict {
  int64_t start_ns = 0;              // the step slice's ts (merged axis)
  std::optional<int64_t> rank;
  std::string vertical, horizontal;  // labels ("" when the view has no unit)
};

struct TraceOverlay {
  std::vector<OverlayTrack> tracks;
  std::vector<OverlaySlice> slices;  // unit slices, then markers
  std::vector<OperatorTarget> targets;
  std::vector<StepVerdict> steps;
  size_t units = 0, insufficient = 0, markers = 0;
};

// Builds the overlay of `diagnoses` over the instances of `table` (the trees they were made
// from). Units with no step in the table are left out.
TraceOverlay BuildTraceOverlay(const std::vector<StepDiagnosis>& diagnoses, const InstanceTable& table);

// Lanes for intervals on one track: interval k goes to the first lane where it nests with the
// intervals already there (taken by start, the longer first), so that no lane holds two
// crossing intervals. Returns each interval's lane (0 = the track itself).
std::vector<uint32_t> NestingLanes(const std::vector<std::pair<int64_t, int64_t>>& intervals);

}  // namespace truffld::diagnose
