// ParseVerdictLine: one diagnosis.jsonl line (truffld.diagnosis schema) -> a verdicts row and
// its faulty_ops rows for truffld-export. Pure: a string in, structs out (strings are copies).
// Thread-safety: reentrant (each call uses its own parser).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "truffld/status.h"

namespace truffld::exporter {

struct FaultyRow {
  std::string family, layer, method, metric, basis, evidence;
  std::optional<double> score, probability, share;
  std::optional<int64_t> instances, observed_ns, expected_ns, excess_ns, impact_ns, absorbed_ns;
};

struct VerdictRow {
  std::optional<int64_t> rank, step_index, duration_ns, start_ns, end_ns, impact_ns, absorbed_ns, waited_ns,
      waiting_on_rank;
  std::optional<double> p_value;
  std::string view, phase, label, stage2_source, evidence;
  std::vector<FaultyRow> faulty;
};

// kParseError with the problem (no location: the caller adds file:line) for a line that is not
// a JSON object with step_index, view and label.
Result<VerdictRow> ParseVerdictLine(std::string_view line);

}  // namespace truffld::exporter
