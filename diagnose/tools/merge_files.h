// Where truffld-merge's side files lie for truffld-diagnose's input (inside the input when it is
// a directory, else beside the trees file), and reading run_stats.json for the report's "Run
// statistics" section. The file system side only; parsing is truffld/run_stats.h's.
// Thread-safety: call from one thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "truffld/run_stats.h"

namespace truffld::diagnose {

// `name` (summary.json, run_stats.json, ...) of the merge `input` came from.
std::string MergeFilePath(const std::string& input, const std::string& name);

// The merge's run_stats.json: nullopt when there is none (a merge by an older truffld-merge, or
// a trees file without its directory); when it cannot be read or parsed, nullopt and one line in
// `notes` saying why (the report then leaves the section out).
std::optional<RunStats> ReadMergeRunStats(const std::string& input, std::vector<std::string>* notes);

}  // namespace truffld::diagnose
