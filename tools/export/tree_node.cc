// ScanTreeNode: one pass over a trees.jsonl node's members (see tree_node.h).
#include "tree_node.h"

#include <climits>

namespace truffld::exporter {

namespace {

std::string_view Str(simdjson::dom::element e) {
  std::string_view s;
  return e.get_string().get(s) == simdjson::SUCCESS ? s : std::string_view{};
}

// grid / block: [x, y, z].
void Dim3(simdjson::dom::element e, std::optional<int64_t> out[3]) {
  simdjson::dom::array a;
  if (e.get_array().get(a) != simdjson::SUCCESS) return;
  int i = 0;
  for (simdjson::dom::element v : a) {
    if (i == 3) break;
    out[i++] = JsonInt(v);
  }
}

}  // namespace

TreeNode ScanTreeNode(simdjson::dom::object o) {
  TreeNode n;
  for (simdjson::dom::key_value_pair kv : o) {
    const std::string_view k = kv.key;
    const simdjson::dom::element v = kv.value;
    switch (k.empty() ? '\0' : k[0]) {
      case 'b':
        if (k == "bytes") n.bytes = JsonInt(v);
        else if (k == "block") Dim3(v, n.block);
        break;
      case 'c':
        if (k == "children") { n.children = v; n.has_children = true; }
        else if (k == "correlation_id") n.correlation_id = JsonInt(v);
        else if (k == "cbid") n.cbid = JsonInt(v);
        else if (k == "copy_kind") n.copy_kind = Str(v);
        break;
      case 'd':
        if (k == "device") n.device = JsonInt(v);
        else if (k == "domain") n.domain = Str(v);
        break;
      case 'e': if (k == "end") n.end = JsonInt(v); break;
      case 'f': if (k == "family") n.family = Str(v); break;
      case 'g':
        if (k == "grid") Dim3(v, n.grid);
        else if (k == "graph_id") n.graph_id = JsonInt(v);
        else if (k == "graph_node_id") n.graph_node_id = JsonInt(v);
        break;
      case 'l': if (k == "layer") n.layer = Str(v); break;
      case 'n': if (k == "name") n.name = Str(v); break;
      case 'p': if (k == "payload") { n.payload = v; n.has_payload = true; } break;
      case 'r': if (k == "return_code") n.return_code = JsonInt(v); break;
      case 's':
        if (k == "start") n.start = JsonInt(v);
        else if (k == "stream") n.stream = JsonInt(v);
        break;
      case 't': if (k == "thread_id") n.thread_id = JsonInt(v); break;
      default: break;
    }
  }
  return n;
}

}  // namespace truffld::exporter
