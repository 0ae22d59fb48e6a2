// RunStats as aligned text tables for the terminal (truffld-export --stats); its JSON is
// truffld/run_stats.h's RunStatsJson.
// Pure: structs in, text out. Thread-safety: reentrant.
#pragma once

#include <cstddef>
#include <string>

#include "stats.h"

namespace truffld::exporter {

struct TextOptions {
  size_t top_kernels = 20;  // kernel summary rows printed (0: all)
  size_t top_idle = 10;     // idlest steps printed (0: all)
};

// Columns padded to their widest cell; numbers right-aligned. Long kernel names are cut with
// an ellipsis at 60 characters (the JSON keeps them whole).
std::string FormatStatsText(const RunStats& s, const TextOptions& o);

// A table: header row and body rows of cells; `right[i]` right-aligns column i.
std::string FormatTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                        const std::vector<bool>& right);

}  // namespace truffld::exporter
