// TreeReader: trees.jsonl (schema truffld.trees/1) -> InstanceTable.
//
// Reads merge's per-request call-chain trees with simdjson and extracts every operator
// instance (frontend_op, backend_op, comm, other) with its raw feature vector. A step with
// several requests has several trees that share the same operators, so instances are
// deduplicated per (rank, step_index, view) by (family, start, end, thread): each operator
// counts once per step. Lines that cannot be used are counted and described (file:line:
// problem) in ReadStats, never silently dropped; only an unreadable file stops the read.
// Invalid UTF-8 (a producer other than truffld-merge) is repaired, one U+FFFD per bad byte as
// the merge writes it, and counted. The tree's "phase" is normalised to prefill / decode /
// mixed / unknown; runtime_call and driver_call nodes feed separate feature columns; NVTX
// domains ("domain" on nodes) are collected per step for Stage II's backend context. Lines of
// the grouped layout (request_group) are read like any other: instances are deduplicated.
// CUDA-graph replays carry no operator ranges, so the device nodes under a cudaGraphLaunch
// are grouped by the operator that was open when they were captured (`captured_in`):
// consecutive nodes of one capture form one instance (span = first start .. last end), comm
// captures land in the step's horizontal view; non-comm captures go to the vertical view
// only when set_graph_vertical_ops(true) (off by default: on the synthetic demo they lowered
// vertical step F1, see diagnose/README.md). Time no operator range covers becomes pseudo-
// instances of each vertical step (outside_time.h).
// Thread-safety: one reader per thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "read/instances.h"
#include "truffld/status.h"

namespace truffld::diagnose {

struct ReadStats {
  uint64_t lines = 0;                // non-empty lines seen
  uint64_t trees = 0;                // lines accepted as trees
  uint64_t bad_lines = 0;            // not JSON, wrong schema, missing fields
  uint64_t instances = 0;            // operator instances kept
  uint64_t duplicate_instances = 0;  // same operator seen again through another request's tree
  uint64_t warnings = 0;             // reader warnings (truncated last line, ...)
  uint64_t inverted_ranges = 0;      // operator nodes with end < start (kept, duration 0)
  uint64_t graph_instances = 0;      // instances rebuilt from CUDA-graph nodes' captured_in
  uint64_t outside_instances = 0;    // pseudo-instances of time no operator covers (in instances)
  uint64_t repaired_lines = 0;       // lines with invalid UTF-8, read after replacing bad bytes
  uint64_t empty_horizontal = 0;     // horizontal views with no communication: not units (nothing to judge)
  uint64_t too_deep_trees = 0;       // bad lines nested past kMaxTreeJsonDepth (skipped, named)
  uint64_t step_level_steps = 0;     // vertical steps without operator detail (StepInfo::operator_detail)
  std::vector<std::string> problems; // first kMaxProblems messages, "file:line: problem"
  static constexpr size_t kMaxProblems = 20;
};

class TreeReader {
 public:
  TreeReader();
  ~TreeReader();
  TreeReader(const TreeReader&) = delete;
  TreeReader& operator=(const TreeReader&) = delete;

  // Reads a trees.jsonl[.gz|.zst] file, or a merge output directory holding one.
  // Fails only when nothing can be read (missing file, I/O or decode error).
  Status Read(const std::string& path_or_dir);
  // Parses one line (exposed for tests and fuzzing); `where` names it in messages.
  void ParseLine(std::string_view line, const std::string& where);

  // Also rebuild non-comm operators (vertical view) from CUDA-graph replays. Call before Read.
  void set_graph_vertical_ops(bool on);
  // Judge the time no operator range covers (outside_time.h; on by default): each vertical step
  // gets pseudo-instances for its host gaps, the time since the previous step and the calls
  // issued directly under it. Call before Read.
  void set_outside_time(bool on);

  const ReadStats& stats() const { return stats_; }
  // Moves the collected instances out, steps sorted by (rank, step_index, view).
  InstanceTable Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ReadStats stats_;
};

// Resolves a merge output directory to its trees file ("DIR/trees.jsonl[.gz|.zst]");
// a plain file path is returned unchanged.
Result<std::string> ResolveTreesPath(const std::string& path_or_dir);

}  // namespace truffld::diagnose
