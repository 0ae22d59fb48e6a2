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
        if (k == "bytes") n.view.bytes = JsonInt(v);
        else if (k == "block") Dim3(v, n.view.block);
        break;
      case 'c':
        if (k == "children") { n.children = v; n.has_children = true; }
        else if (k == "correlation_id") n.view.correlation_id = JsonInt(v);
        else if (k == "cbid") n.view.cbid = JsonInt(v);
        else if (k == "copy_kind") n.view.copy_kind = Str(v);
        break;
      case 'd':
        if (k == "device") n.view.device = JsonInt(v);
        else if (k == "domain") n.view.domain = Str(v);
        break;
      case 'e': if (k == "end") n.view.end = JsonInt(v); break;
      case 'f': if (k == "family") n.view.family = Str(v); break;
      case 'g':
        if (k == "grid") Dim3(v, n.view.grid);
        else if (k == "graph_id") n.view.graph_id = JsonInt(v);
        else if (k == "graph_node_id") n.view.graph_node_id = JsonInt(v);
        break;
      case 'l': if (k == "layer") n.view.layer = Str(v); break;
      case 'n': if (k == "name") n.view.name = Str(v); break;
      case 'p': if (k == "payload") { n.payload = v; n.has_payload = true; } break;
      case 'r': if (k == "return_code") n.view.return_code = JsonInt(v); break;
      case 's':
        if (k == "start") n.view.start = JsonInt(v);
        else if (k == "stream") n.view.stream = JsonInt(v);
        break;
      case 't': if (k == "thread_id") n.view.thread_id = JsonInt(v); break;
      default: break;
    }
  }
  return n;
}

}  // namespace truffld::exporter
