// step_features.jsonl (--step-features): the compact per-step summary a fleet compares across
// replicas (tools/truffld-fleet, README "Fleet").
//
// One line per (rank, step) of the vertical view, schema "truffld.step_features/1"
// (schemas/step_features.schema.json): who ran it (replica label, host, rank), what it computed
// (phase, batch, tokens, context), what it cost (step time, time since the rank's previous step,
// the costliest operator families' own cost and the peer detector's expectation, the time its
// collectives waited for other ranks) and its verdict. Only the top families travel, so a line
// stays well under 4 KB whatever the model. Times are integer ns on the merged axis.
// The builder is pure; WriteStepFeatures is a thin file adapter. Thread-safety: reentrant.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "read/instances.h"
#include "stage2/fusion.h"
#include "truffld/status.h"

namespace truffld::diagnose {

struct PeerStageResult;

struct StepFeatureOptions {
  std::string replica;     // replica label written on every line ("" = null)
  size_t top_families = 8;  // family rows kept per line, costliest first
};

// One JSON object per vertical unit, in table order. `d` holds one diagnosis per unit of `t`
// (RunPipeline's order); a unit without one is written with verdict null.
std::vector<nlohmann::json> BuildStepFeatures(const InstanceTable& t, const PeerStageResult& r,
                                              const std::vector<StepDiagnosis>& d,
                                              const StepFeatureOptions& o);

// One line per object; the total bytes written go to *bytes when given.
Status WriteStepFeatures(const std::string& path, const std::vector<nlohmann::json>& lines,
                         size_t* bytes = nullptr);

}  // namespace truffld::diagnose
