// truffld-diagnose's side of diagnosis.trace.json: which truffld-merge trace.json to annotate
// (--trace, else the one beside the trees), and adding the annotated copy to the run's outputs.
//
// Failure policy: a trace named with --trace is part of what the user asked for, so a trace that
// cannot be read is an input error and a copy that cannot be written an output error, both
// fatal. A trace found beside the trees is a bonus: when it is not a truffld-merge trace, is cut
// short or cannot be copied (a full disk), the run says so on stderr and in stats.json
// ("trace": {"error": ...}) and writes every other output.
// Thread-safety: none needed (the CLI's main thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "truffld/atomic_file.h"
#include "read/instances.h"
#include "stage2/fusion.h"
#include "truffld/status.h"

namespace truffld::diagnose {

struct TraceChoice {
  std::string path;        // "" = no trace to annotate
  bool named = false;      // given with --trace
  std::string why_none;    // with path "": why (for a note on stderr)
  std::optional<int64_t> time_origin_ns;  // with a path: its otherData.time_origin_ns (ns)
};

// `input`: the trees file or merge folder; `trace_flag`: --trace ("" = look beside the trees).
// Reads at most the first 4 KiB of the candidate (decompressed). An error (NotFound, ParseError,
// InvalidArgument) only for a --trace that cannot be used.
Result<TraceChoice> ChooseTrace(const std::string& input, const std::string& trace_flag, bool no_trace);

// Adds `out_path` (diagnosis.trace.json) to `out`, or its removal when there is no trace. Fills
// stats["trace"]; appends warnings (markers that found no slice, a failed optional copy) to
// `warnings`. A non-ok Status only for a named trace; *input_side then says whether reading it
// failed (exit 1) rather than writing the copy (exit 3).
Status AddAnnotatedTrace(const TraceChoice& trace, const std::vector<StepDiagnosis>& diagnoses,
                         const InstanceTable& table, const std::string& out_path, OutputSet* out,
                         nlohmann::json* stats, std::vector<std::string>* warnings, bool* input_side);

}  // namespace truffld::diagnose
