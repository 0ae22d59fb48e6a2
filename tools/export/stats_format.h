// The two renderings of RunStats: aligned text tables for the terminal (truffld-export --stats)
// and stats-summary.json (schemas/stats-summary.schema.json, truffld.stats-summary/1).
// Pure: structs in, text out. Thread-safety: reentrant.
#pragma once

#include <cstddef>
#include <string>

#include "stats.h"

namespace truffld::exporter {

inline constexpr const char* kStatsSummarySchema = "truffld.stats-summary/1";

struct TextOptions {
  size_t top_kernels = 20;  // kernel summary rows printed (0: all)
  size_t top_idle = 10;     // idlest steps printed (0: all)
};

// Columns padded to their widest cell; numbers right-aligned. Long kernel names are cut with
// an ellipsis at 60 characters (the JSON keeps them whole).
std::string FormatStatsText(const RunStats& s, const TextOptions& o);
// The whole of RunStats (every kernel and step), times in ns, shares 0..1.
std::string FormatStatsJson(const RunStats& s);

// A table: header row and body rows of cells; `right[i]` right-aligns column i.
std::string FormatTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                        const std::vector<bool>& right);

}  // namespace truffld::exporter
