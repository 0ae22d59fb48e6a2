// TreeNode: the members of one trees.jsonl node that the export reads, found in one pass over
// the node's members (a member lookup scans the object; a kernel node has about twenty), held
// as the NodeView that RowBuilder reads.
// Integers are read as int64 (a double is truncated, an unsigned past INT64_MAX saturates);
// absent or non-numeric members are std::nullopt, absent strings "".
// Thread-safety: pure functions over views into the caller's parsed document.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "comm_payload.h"
#include "row_builder.h"

namespace truffld::exporter {
using namespace truffld::rundb;  // the run database library (merge/sqlite), which the export feeds

struct TreeNode {
  // Its members as RowBuilder reads them. The payload hook is left unset: it would point into
  // this node, which the caller may copy (the caller sets it where the node stays).
  NodeView view;
  simdjson::dom::element children, payload;
  bool has_children = false, has_payload = false;
};

TreeNode ScanTreeNode(simdjson::dom::object o);

}  // namespace truffld::exporter
