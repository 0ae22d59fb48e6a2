// The members of a tree node that the walk reads (layer, family, name, domain, start, end,
// children, thread_id, and a device op's bytes, copy_kind, grid and block), found in one pass
// over the node's members: an object lookup is a scan of its members, and a node was looked up
// seven times or more. The first of duplicate members counts, as with a lookup.
// Thread-safety: pure functions over views into the caller's parsed document.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string_view>

namespace truffld::diagnose::detail {

struct NodeFields {
  std::string_view layer, family, name, domain, copy_kind;  // "" when absent or not a string
  simdjson::dom::element start, end, children, thread_id, bytes, grid, block;
  bool has_start = false, has_end = false, has_children = false, has_thread_id = false, has_bytes = false,
       has_grid = false, has_block = false;
};

inline void TakeString(simdjson::dom::element v, bool* seen, std::string_view* out) {
  if (*seen) return;
  *seen = true;
  if (v.get_string().get(*out) != simdjson::SUCCESS) *out = {};
}

inline void TakeElement(simdjson::dom::element v, bool* seen, simdjson::dom::element* out) {
  if (*seen) return;
  *seen = true;
  *out = v;
}

inline NodeFields ScanNode(simdjson::dom::object o) {
  NodeFields f;
  bool seen_layer = false, seen_family = false, seen_name = false, seen_domain = false, seen_copy_kind = false;
  for (simdjson::dom::key_value_pair kv : o) {
    const std::string_view k = kv.key;
    if (k == "layer") TakeString(kv.value, &seen_layer, &f.layer);
    else if (k == "family") TakeString(kv.value, &seen_family, &f.family);
    else if (k == "name") TakeString(kv.value, &seen_name, &f.name);
    else if (k == "domain") TakeString(kv.value, &seen_domain, &f.domain);
    else if (k == "start") TakeElement(kv.value, &f.has_start, &f.start);
    else if (k == "end") TakeElement(kv.value, &f.has_end, &f.end);
    else if (k == "children") TakeElement(kv.value, &f.has_children, &f.children);
    else if (k == "thread_id") TakeElement(kv.value, &f.has_thread_id, &f.thread_id);
    else if (k == "bytes") TakeElement(kv.value, &f.has_bytes, &f.bytes);
    else if (k == "copy_kind") TakeString(kv.value, &seen_copy_kind, &f.copy_kind);
    else if (k == "grid") TakeElement(kv.value, &f.has_grid, &f.grid);
    else if (k == "block") TakeElement(kv.value, &f.has_block, &f.block);
  }
  return f;
}

// The members of a graph launch's device child that EmitGraphInstances reads, in one pass over
// them (the first of duplicate members counts, as with a lookup).
struct GraphChild {
  std::string_view layer, family, name;
  simdjson::dom::element graph_id, start, end, bytes, captured_in, grid, block;
  bool seen_layer = false, seen_family = false, seen_name = false, has_graph_id = false, has_start = false,
       has_end = false, has_bytes = false, has_captured_in = false, has_grid = false, has_block = false;
};

inline GraphChild ScanGraphChild(simdjson::dom::object o) {
  GraphChild c;
  for (simdjson::dom::key_value_pair kv : o) {
    const std::string_view k = kv.key;
    if (k == "layer") TakeString(kv.value, &c.seen_layer, &c.layer);
    else if (k == "family") TakeString(kv.value, &c.seen_family, &c.family);
    else if (k == "name") TakeString(kv.value, &c.seen_name, &c.name);
    else if (k == "graph_id") TakeElement(kv.value, &c.has_graph_id, &c.graph_id);
    else if (k == "start") TakeElement(kv.value, &c.has_start, &c.start);
    else if (k == "end") TakeElement(kv.value, &c.has_end, &c.end);
    else if (k == "bytes") TakeElement(kv.value, &c.has_bytes, &c.bytes);
    else if (k == "captured_in") TakeElement(kv.value, &c.has_captured_in, &c.captured_in);
    else if (k == "grid") TakeElement(kv.value, &c.has_grid, &c.grid);
    else if (k == "block") TakeElement(kv.value, &c.has_block, &c.block);
  }
  return c;
}

}  // namespace truffld::diagnose::detail
