// trace.json's slice names and args (private to the trace writer, write_trace.cc).
//
// Steps keep their name and carry what a reader of the trace asks first: step_index, rank,
// the requests (the first kMaxRequestsListed, and request_count), phase, and tokens / ctx from
// the name's `[tokens:N][ctx:N]` tags (truffld/step_tags.h). Operators (frontend_op,
// backend_op, comm, other) are named by their family, as trees.jsonl groups them, so that a
// viewer's aggregation by name groups an operator's calls: profilers number every call
// (`aten::mm, seq = 0, op_id = 42`), which made as many names as calls. Each `key = value`
// after the family goes to an arg of its own (seq, op_id), and the full name to args.name
// unless those pairs are all the name held after its family. Every
// slice: the importer's own args of its event (Kineto's input shapes, grid, block, bytes,
// collective fields), copied as the compact JSON text the importer kept, and the correlation
// id unless those args already hold one.
// Thread-safety: one SliceNamer per writer call; reads the MergeResult only.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "truffld/merge/json_out.h"
#include "truffld/merge/pipeline.h"
#include "writers/interned_json.h"

namespace truffld::merge {

// Steps list at most this many request ids in args.requests (request_count has them all).
constexpr size_t kMaxRequestsListed = 8;

// Whether slices of this layer are named by family (the layers diagnose calls operators).
constexpr bool NamedByFamily(Layer l) {
  return l == Layer::kFrontend || l == Layer::kBackend || l == Layer::kComm || l == Layer::kOther;
}

using NameField = std::pair<std::string_view, std::string_view>;
// The `key = value` (or `key=value`) pairs of `rest`, the text of a name after its family
// (", seq = 0, op_id = 42"), into *out (cleared first): pieces separated by ", " outside
// brackets, keys of letters, digits, '_' and '.', values as written. Returns whether every
// piece had that form (the pairs then say all the name said). Pure.
bool NameFields(std::string_view rest, std::vector<NameField>* out);

// Writes slice names and args for WriteChromeTrace.
class SliceNamer {
 public:
  SliceNamer(const MergeResult& r, JsonOut* out);

  // Writes node i's name as a JSON string: its family for an operator whose name holds more
  // (then Args writes the name), else its name.
  void Name(uint32_t i, const Node& n, const Event* e);
  // Writes `,"args":{...}` for node i (nothing when it has none).
  void Args(uint32_t i, const Node& n, const Event* e);

 private:
  void StepArgs(const Tree& t, std::string_view name);
  void OperatorArgs(const Node& n, const Event& e, std::string_view kept);
  void Key(std::string_view key);  // `,"args":{"key":` or `,"key":`

  const MergeResult& r_;
  JsonOut& out_;
  InternedJson strings_;
  std::vector<std::pair<uint32_t, uint32_t>> step_roots_;  // (vertical root node, tree), by node
  size_t next_root_ = 0;  // Args visits nodes in index order
  std::vector<NameField> fields_;  // reused by OperatorArgs
  bool renamed_ = false;  // Name wrote the family
  bool open_ = false;     // an args object is open
};

}  // namespace truffld::merge
