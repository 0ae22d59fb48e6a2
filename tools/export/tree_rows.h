// TreeRows: turns trees.jsonl lines (truffld.trees/1) into the rows of truffld-export's tables:
// each line is parsed (simdjson DOM) and its nodes fed, depth first, to a RowBuilder
// (row_builder.h: the deduplication and the rows, shared with truffld-merge --sqlite). Pure
// logic: lines in (string_view), rows out through a RowSink; no files, no SQLite. Bad lines are
// counted with "file:line: problem" (first kMaxProblems kept), never dropped silently; the rest
// of the file is still read.
// Thread-safety: one TreeRows per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "row_builder.h"
#include "truffld/status.h"

namespace truffld::exporter {
using namespace truffld::rundb;  // the run database library (merge/sqlite), which the export feeds

class TreeRows {
 public:
  static constexpr size_t kOpenSteps = RowBuilder::kOpenSteps;
  TreeRows();
  ~TreeRows();
  TreeRows(const TreeRows&) = delete;
  TreeRows& operator=(const TreeRows&) = delete;

  // Parses one line; `file`/`line_no` name it in problems. A line that is not a tree is counted
  // and described; only a sink error is returned (it stops the export).
  Status AddLine(std::string_view line, std::string_view file, long long line_no, RowSink* sink);
  // Records a problem that is not a line of trees (a truncated last line, a reader warning).
  void AddProblem(std::string message);
  const TreeRowCounts& counts() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace truffld::exporter
