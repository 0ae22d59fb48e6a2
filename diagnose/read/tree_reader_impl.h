// TreeReader's private state and its walk over one tree (tree_reader_walk.cc), shared with the
// line parsing and table layout in tree_reader.cc. Internal header (not installed).
// Thread-safety: one Impl per reader, one reader per thread.
#pragma once

#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "read/hash_mix.h"
#include "read/node_fields.h"

#include "read/tree_reader_parts.h"
#include "read/tree_reader.h"

namespace truffld::diagnose {
namespace detail {

// The trees' phase, normalised to the values diagnosis.jsonl allows ("" when absent).
std::string NormalizePhase(std::string_view p);
// Integer member (int64, uint64 or a double, truncated; saturated at the int64 limits, NaN is
// absent), or `dflt` when absent.
int64_t GetInt(simdjson::dom::object o, const char* key, int64_t dflt);
// GetInt's reading of a member already found.
int64_t IntOf(simdjson::dom::element e, int64_t dflt);
// Times (ns) are kept within +-kMaxTimeNs, so end - start always fits in int64.
inline constexpr int64_t kMaxTimeNs = (int64_t{1} << 62) - 1;
// A node's time member: GetInt clamped to +-kMaxTimeNs (far past any trace's clock).
int64_t GetTime(simdjson::dom::object o, const char* key, int64_t dflt);
// GetTime's reading of a member already found (nullptr: absent).
int64_t TimeOf(const simdjson::dom::element* e, int64_t dflt);
// String member, or "" when absent or not a string.
std::string_view GetStr(simdjson::dom::object o, const char* key);

}  // namespace detail

// JSON levels a tree line may nest (two per range: the node and its children array), far past
// any real call chain; the parser's own default (1,024) dropped trees of about 500 ranges.
inline constexpr size_t kMaxTreeJsonDepth = size_t{1} << 14;

struct TreeReader::Impl {
  Impl() {
    // On failure (no memory) the parser keeps its default depth; parse() allocates again.
    const simdjson::error_code err = parser.allocate(simdjson::dom::MINIMAL_DOCUMENT_CAPACITY, kMaxTreeJsonDepth);
    (void)err;
  }
  simdjson::dom::parser parser;
  StringTable strings;
  std::map<StepKey, detail::StepBucket> buckets;
  ReadStats* stats = nullptr;
  detail::StepBucket* bucket = nullptr;
  StepKey key;  // the step `bucket` belongs to
  size_t instance_hint[2] = {0, 0};  // instances of the last vertical, horizontal step read
  bool graph_vertical_ops = false;  // see TreeReader::set_graph_vertical_ops
  bool outside_time = true;         // see TreeReader::set_outside_time
  // detail::HashText of each interned string of `table` (strings, or the table it moved to),
  // computed once: the same names recur in millions of instances.
  uint64_t TextHash(uint32_t id, const StringTable& table) {
    if (id >= hashed.size()) {
      hashed.resize(table.size());
      text_hash.resize(table.size());
    }
    if (!hashed[id]) {
      text_hash[id] = detail::HashText(table.Get(id));
      hashed[id] = true;
    }
    return text_hash[id];
  }
  std::vector<uint64_t> text_hash;
  std::vector<bool> hashed;

  // Turns the device children of one graph launch into operator instances: consecutive
  // nodes captured under the same operator range (captured_in.name) form one instance.
  // comm captures go to the (rank, step)'s horizontal view, the rest to the vertical one.
  void EmitGraphInstances(simdjson::dom::array children, int64_t launch_start, uint32_t launch_family,
                          int64_t thread);
  void EmitGraphGroup(const detail::GraphNode* g, size_t n, int64_t launch_start, int64_t launch_latency,
                      uint32_t launch_family, int64_t thread);
  // Walks `node` (iteratively: any depth the parser admits); appends operator instances (with
  // their own host/device costs, signatures and blocked waits) to `bucket`; returns the subtree
  // aggregate.
  detail::SubtreeStats Walk(simdjson::dom::object node, uint32_t parent_family, int64_t call_start);
  // One node on Walk's stack: its own facts, where its children stand and what they added up to.
  struct WalkFrame {
    simdjson::dom::object node;
    std::string_view layer, family;
    int64_t start = 0, end = 0, call_start_in = INT64_MIN;
    int64_t thread = -1;  // its thread_id, -1 when absent
    uint32_t fam_id = kNoString, parent_family = kNoString, child_parent = kNoString;
    bool is_op = false, graph_launch = false, has_children = false;
    bool child_op = false;  // the child being walked is an operator range
    simdjson::dom::array children;
    simdjson::dom::array::iterator next, last;
    detail::SubtreeStats agg;
    std::vector<std::pair<int64_t, int64_t>> child_ops;  // operator children's (start, end)
  };
  WalkFrame Enter(simdjson::dom::object node, const detail::NodeFields& fields, uint32_t parent_family,
                  int64_t call_start);
  detail::SubtreeStats Leave(WalkFrame& f);
  // Walk's parts: an API call, a device op, the wait of an outermost call, and the instance of an
  // operator node (skipped when the same (family, start, end, thread) was seen in the step).
  void AddCall(std::string_view layer, uint32_t fam_id, int64_t start, int64_t end, detail::SubtreeStats* agg);
  void AddDevice(const detail::NodeFields& nf, std::string_view layer, uint32_t fam_id, int64_t start, int64_t end,
                 int64_t call_start, detail::SubtreeStats* agg);
  void AddCallWait(std::string_view family, int64_t start, int64_t end, bool outermost, detail::SubtreeStats* agg);
  void EmitInstance(simdjson::dom::object node, int64_t thread, std::string_view layer, uint32_t fam_id,
                    uint32_t parent_family, int64_t start, int64_t end,
                    std::vector<std::pair<int64_t, int64_t>>& child_ops, const detail::SubtreeStats& agg);
};

}  // namespace truffld::diagnose
